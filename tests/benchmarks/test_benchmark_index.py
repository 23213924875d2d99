"""benchmarks/README.md indexes every benchmark script and every output, and every output's writer exists
(issue #53 item 6). The index is written by benchmarks/tools/index.py from its ``OUTPUTS`` declaration."""

from __future__ import annotations

import fnmatch
import subprocess
import sys
from pathlib import Path

from support.benchmarks import bench_module

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
index = bench_module("index")


def test_every_script_is_in_a_group_and_declared():
    loose = sorted(p.name for p in BENCH.glob("*.py") if p.name != "run.py")
    assert not loose, f"scripts outside performance/, validity/ and tools/: {loose}"
    scripts = index.scripts()
    assert set(scripts) == set(index.OUTPUTS), "declare every script's outputs in benchmarks/tools/index.py"


def test_every_output_has_a_current_writer():
    files = index.out_files()
    orphans = [f for f in files if index.writer_of(f) is None]
    assert not orphans, f"outputs no script declares (benchmarks/tools/index.py OUTPUTS): {orphans}"
    scripts = index.scripts()
    for name, entries in index.OUTPUTS.items():
        assert name in scripts, f"{name}: declared writer does not exist"
        source = scripts[name].read_text(encoding="utf-8")
        for entry in entries:
            pat, _, note = entry.partition(" -- ")
            assert any(fnmatch.fnmatch(f, pat) for f in files), f"{name}: {pat} is declared but not in benchmarks/out"
            if not note:  # written under its own name: the script says so
                stem = pat.split("/")[-1].split(".")[0].split("*")[0]
                assert stem in source, f"{name}.py does not mention its output {pat}"


def test_readme_lists_every_script_and_output():
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    for name, path in index.scripts().items():
        assert f"[`{path.parent.name}/{name}.py`]" in readme, f"benchmarks/README.md lacks {name}.py"
        for entry in index.OUTPUTS[name]:
            assert f"`{index.pattern(entry)}`" in readme, f"benchmarks/README.md lacks {entry}"
    assert readme == index.render(), "benchmarks/README.md is stale: run benchmarks/tools/index.py"


def test_runner_lists_and_runs_the_scripts():
    run = BENCH / "run.py"
    listed = subprocess.run([sys.executable, str(run), "--list"], capture_output=True, text=True, check=True).stdout
    names = {line.split()[1] for line in listed.splitlines() if line.strip()}
    assert names == {n for n in index.scripts() if not n.startswith("_")}
    helped = subprocess.run([sys.executable, str(run), "index", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--check" in helped.stdout
    missing = subprocess.run([sys.executable, str(run), "no_such_benchmark"], capture_output=True, text=True)
    assert missing.returncode == 2
