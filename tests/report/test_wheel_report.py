"""An installed wheel (not editable, no checkout around it) quotes the measured false-positive rates (issue #53).

The report's measured figures come from benchmarks/out in a checkout and from the package's
``modprefs/report/measured_figures.json`` elsewhere (:func:`modprefs.report.measured.benchmark_summary`). The
shipped copy must equal what benchmarks/out says (benchmarks/tools/measured_figures.py writes it), and a wheel built
from the source tree must carry it: built here, installed (not editable) into a fresh venv with that venv's own pip,
and asked, from that venv's python, for the sentences the report prints. The fresh venv borrows the test venv's
dependencies through a ``.pth`` line (no network; numpy and pandas are not rebuilt): a path added that way has its
own ``.pth`` files ignored, so the test venv's editable modprefs cannot shadow the wheel's.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_figures_equal_the_benchmark_outputs():
    from modprefs.report.measured import FIGURES, QUOTED

    shipped = json.loads(FIGURES.read_text(encoding="utf-8"))
    assert sorted(shipped) == sorted(QUOTED)
    for name in QUOTED:
        measured = json.loads((ROOT / "benchmarks" / "out" / name).read_text(encoding="utf-8"))["summary"]
        assert shipped[name]["summary"] == measured, f"{name}: run benchmarks/tools/measured_figures.py"
    tool = ROOT / "benchmarks" / "tools" / "measured_figures.py"
    subprocess.run([sys.executable, str(tool), "--check"], check=True, capture_output=True)


def test_missing_output_falls_back_to_the_shipped_copy_by_name(tmp_path):
    from modprefs.report.measured import alpha_test_size, benchmark_summary, icc_test_size

    assert benchmark_summary(tmp_path / "icc_difference_null_v2.json")  # absent here: the shipped copy
    assert benchmark_summary(tmp_path / "absent.json") is None and benchmark_summary(None) is None
    assert "/" in (icc_test_size("calibrated", tmp_path / "icc_difference_null_v2.json") or "")
    assert alpha_test_size("calibrated", tmp_path / "alpha_difference_null.json")


RENDER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import modprefs
    from modprefs.report.html import coverage_note, table2_note
    from modprefs.report.measured import alpha_test_size, icc_test_size, table2_size

    bench = Path(modprefs.__file__).resolve().parents[2] / "benchmarks" / "out"  # where a checkout keeps them
    print(json.dumps({
        "file": modprefs.__file__,
        "bench_exists": bench.exists(),
        "icc": icc_test_size("calibrated", bench / "icc_difference_null_v2.json"),
        "alpha": alpha_test_size("calibrated", bench / "alpha_difference_null.json"),
        "table2": table2_size("participant_slopes", [bench / "table2_null.json", bench / "table2_null_slopes.json"]),
        "coverage": coverage_note("jackknife", bench / "icc_coverage.json"),
        "table2_note": table2_note("stimulus_modality", bench / "table2_null.json"),
    }))
    """
)


@pytest.mark.slow  # builds and installs a wheel: ~30 s on 2 cores
def test_wheel_install_quotes_the_measured_false_positive_rates(tmp_path):
    src = tmp_path / "src_tree"  # a copy, so that the build leaves no build/ in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = wheels.glob("modprefs-*.whl")
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    import sysconfig

    (site / "test_venv_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps", str(wheel)], check=True
    )
    target = site
    assert (target / "modprefs" / "report" / "measured_figures.json").is_file()
    run = subprocess.run(
        [str(python), "-c", RENDER],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert Path(out["file"]).resolve().is_relative_to(target.resolve())  # the wheel's copy, not the checkout
    assert not out["bench_exists"]
    assert out["icc"] and "ICC(2,1)" in out["icc"] and "/" in out["icc"]
    assert out["alpha"] and "%" in out["alpha"]
    assert out["table2"] and "null studies" in out["table2"]
    assert "not been measured" not in out["coverage"] and "Measured coverage" in out["coverage"]
    assert "not been measured" not in out["table2_note"] and "Rejection rates" in out["table2_note"]
