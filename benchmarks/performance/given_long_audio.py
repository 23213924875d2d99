"""Long given audio (issue #49): refused before any job by default, rendered within 1 GB when the lab allows it.

A lab's pairs table may point at a whole recorded session instead of a turn. Before issue #49 a 2-hour WAV passed
the start check and the render job, which held the clip several times in float64 plus its 4x oversampled copy for
the true-peak meter, needed about 1 GB for 5 minutes and 3.4 GB for 20 (20 GB for 2 hours). This benchmark:

1. **Refusal.** A pairs table (``tts.backend: given``) whose first item's audio is a 20-minute WAV: ``snakemake -n``
   on the repository's Snakefile with the default ``data.max_audio_s`` (600 s) must exit 1 naming the file, row and
   key, with no job planned; with ``data.max_audio_s: 1500`` (and QC's ``max_duration_s``) the dry run plans the jobs.
2. **Render memory.** One clip rendered as the workflow's render job renders it (``render.render_shard`` with
   ``tts.backend: given``: read, mono mix, polyphase resample to 24 kHz, BS.1770 level to -23 LUFS under a -1 dBTP
   limiter, 16-bit WAV), in a fresh process under ``/usr/bin/time -v`` (its peak resident memory, whole process:
   Python, numpy, scipy, pandas, soundfile included), for 5- and 20-minute WAVs; with ``--before-rev REV`` also with
   the library as it was at REV (a temporary git worktree), for the before/after comparison.

The WAVs are speech-like (voiced harmonics and noise under a 4 Hz syllable envelope with pauses, as
tests/support/audio.py's ``speech_like``) at 48 kHz, stereo, 16-bit, with a full-scale click every minute so that
the limiter acts, generated in 10-second pieces (fixed seeds).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/given_long_audio.py \\
        [--before-rev be0f164] [--minutes 5 20]

Writes benchmarks/out/given_long_audio.json and .md. About 3 minutes on one core (the before path's 20-minute render
needs 3.4 GB).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "out"
RATE, CHANNELS, PIECE_S = 48000, 2, 10
LIMIT_GB = 1.0


def speech_piece(seed: int, seconds: float = PIECE_S, sr: int = RATE) -> np.ndarray:
    """Ten seconds of a speech-like signal (tests/support/audio.py's ``speech_like``) at -8 dBFS peak."""
    from scipy.signal import butter, sosfilt

    rng = np.random.default_rng(seed)
    n = int(sr * seconds)
    t = np.arange(n) / sr
    syllables = np.clip(np.sin(2 * np.pi * 4 * t + rng.uniform(0, 6)), 0, None) ** 2
    pauses = np.repeat(rng.uniform(size=int(seconds * 4) + 1) > 0.3, sr // 4 + 1)[:n]
    phase = 2 * np.pi * np.cumsum(120 + 30 * np.sin(2 * np.pi * 0.5 * t)) / sr
    voiced = sum(np.sin(k * phase) / k for k in range(1, 20))
    noise = sosfilt(butter(4, [2000, 6000], "bandpass", fs=sr, output="sos"), rng.normal(size=n))
    x = syllables * pauses * (0.3 * voiced + 0.5 * noise)
    return 0.4 * x / np.abs(x).max()


def write_long_wav(path: Path, minutes: float) -> None:
    """A ``minutes``-long 48 kHz stereo 16-bit WAV, written a piece at a time; a click at the start of each minute."""
    import soundfile as sf

    with sf.SoundFile(path, "w", RATE, CHANNELS, "PCM_16", format="WAV") as out:
        for i in range(int(round(minutes * 60 / PIECE_S))):
            x = speech_piece(i % 30)
            if i % (60 // PIECE_S) == 0:
                x[RATE : RATE + 24] = 0.99  # a plosive / click the -23 LUFS gain pushes over the ceiling
            out.write(np.stack([x, 0.8 * x], axis=1))


def render_child(wav: str, clip_dir: str) -> None:
    """In a fresh process: render ``wav`` as the render job would; print the clip's manifest measures as JSON."""
    import pandas as pd

    from modprefs.speech.render import render_shard

    part = pd.DataFrame(
        [{"clip_id": "it1_0", "prompt_id": "it1", "response": 0, "text": "a long take", "audio": wav, "source_row": 2}]
    )
    start = time.perf_counter()
    level = {"target_lufs": -23.0, "true_peak_dbfs": -1.0}
    row = render_shard(part, {"backend": "given"}, 1, clip_dir, level=level).iloc[0]
    keys = ["duration_s", "lufs_before", "lufs_after", "true_peak_after_dbtp", "gain_db", "limited", "source_peak"]
    print(json.dumps({"seconds": round(time.perf_counter() - start, 1), **{k: float(row[k]) for k in keys}}))


def measure_render(wav: Path, src: Path, work: Path) -> dict:
    """Peak RSS (GB) and the measures of one render in a fresh process with the library at ``src``."""
    clip_dir = work / "clips"
    shutil.rmtree(clip_dir, ignore_errors=True)
    clip_dir.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = ["/usr/bin/time", "-v", sys.executable, __file__, "--render-child", str(wav), str(clip_dir)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1))
    result = {"peak_rss_gb": round(rss_kb / 1024**2, 3), "exit": proc.returncode}
    if proc.returncode == 0:
        result |= json.loads(proc.stdout.strip().splitlines()[-1])
    else:
        result["error"] = proc.stderr.strip().splitlines()[-3:]
    return result


def dry_run(work: Path, wav: Path, raised: bool) -> dict:
    """``snakemake -n`` in ``work`` on a given-audio pairs table whose first item is ``wav``."""
    import soundfile as sf
    import yaml

    short = work / "short.wav"
    for k in range(3):
        sf.write(work / f"t{k}.wav", speech_piece(100 + k, 3.0, 24000), 24000)
    sf.write(short, speech_piece(99, 3.0, 24000), 24000)
    rows = ["item_id,prompt,response_0,response_1,audio_0,audio_1", f"it1,A question?,one,two,{wav},{short}"]
    rows += [f"it{k + 2},Another question {k}?,yes {k},no {k},t{k}.wav,{short}" for k in range(2)]
    (work / "pairs.csv").write_text("\n".join(rows) + "\n")
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    for keys in (("attention_check",), ("sampling", "screening", "harmful_terms"), ("stats", "modality_terms")):
        node = cfg
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = str(ROOT / node[keys[-1]])
    cfg["data"] = {"source": "pairs.csv", "format": "pairs", **({"max_audio_s": 1500} if raised else {})}
    cfg["tts"] = {"backend": "given", "shard_size": 4}
    cfg["sampling"]["n_prompts"] = 3
    cfg["study"]["trials_per_participant"] = 2
    if raised:
        cfg["audio_qc"]["thresholds"] = {"max_duration_s": 1500}
    (work / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(ROOT / "Snakefile")]
    start = time.perf_counter()
    proc = subprocess.run([*cmd, "--directory", str(work)], capture_output=True, text=True, timeout=600)
    text = proc.stdout + proc.stderr
    return {
        "exit": proc.returncode,
        "seconds": round(time.perf_counter() - start, 1),
        "jobs_planned": "Job stats" in text,
        "traceback": "Traceback" in text,
        "message": [line.strip() for line in text.splitlines() if "max_audio_s" in line][:1],
    }


def before_worktree(rev: str, into: Path) -> Path:
    cmd = ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), rev]
    subprocess.run(cmd, check=True, capture_output=True)
    return into / "src"


def markdown(result: dict) -> str:
    lines = [
        "# Long given audio: refused by default, rendered in blocks when allowed",
        "",
        f"{result['signal']}. Rerun: `{result['command']}`.",
        "",
        "## Refused before any job (`snakemake -n`, a 20-minute WAV as item it1's audio_0)",
        "",
        "| data.max_audio_s | exit | jobs planned | traceback | message |",
        "|---|---|---|---|---|",
    ]
    for name, r in result["dry_run"].items():
        lines.append(f"| {name} | {r['exit']} | {r['jobs_planned']} | {r['traceback']} | {(r['message'] or [''])[0]} |")
    lines += [
        "",
        f"## Render of one clip (peak resident memory of the whole process; limit {LIMIT_GB} GB)",
        "",
        "| library | minutes | peak RSS (GB) | seconds | LUFS after | dBTP after | limited |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["renders"]:
        if r["exit"]:
            lines.append(f"| {r['library']} | {r['minutes']} | {r['peak_rss_gb']} | failed: {r['error'][-1]} | | | |")
            continue
        lines.append(
            f"| {r['library']} | {r['minutes']} | {r['peak_rss_gb']:.2f} | {r['seconds']} | {r['lufs_after']:.2f} | "
            f"{r['true_peak_after_dbtp']:.2f} | {r['limited']:.4f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, nargs="+", default=[5.0, 20.0])
    parser.add_argument("--before-rev", default=None, help="also measure the library at this git revision")
    parser.add_argument("--render-child", nargs=2, metavar=("WAV", "CLIP_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.render_child:
        render_child(*args.render_child)
        return
    with tempfile.TemporaryDirectory(prefix="given-long-") as tmp:
        work = Path(tmp)
        wavs = {m: work / f"take_{m:g}min.wav" for m in args.minutes}
        for minutes, path in wavs.items():
            write_long_wav(path, minutes)
        longest = wavs[max(args.minutes)]
        runs = {}
        for name, raised in (("600 (default)", False), ("1500", True)):
            (work / name[:4]).mkdir()
            runs[name] = dry_run(work / name[:4], longest, raised)
        libraries = [("after", ROOT / "src")]
        if args.before_rev:
            libraries.insert(0, (f"before ({args.before_rev})", before_worktree(args.before_rev, work / "before")))
        renders = []
        try:
            for library, src in libraries:
                for minutes, path in wavs.items():
                    r = measure_render(path, src, work)
                    renders.append({"library": library, "minutes": minutes, **r})
                    print(renders[-1], flush=True)
        finally:
            if args.before_rev:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(work / "before")])
    command = "OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/performance/given_long_audio.py" + (
        f" --before-rev {args.before_rev}" if args.before_rev else ""
    )
    result = {
        "signal": f"Speech-like WAVs at {RATE} Hz, {CHANNELS} channels, 16-bit, a full-scale click each minute; "
        "rendered to 24 kHz mono at -23 LUFS / -1 dBTP",
        "command": command,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "dry_run": runs,
        "renders": renders,
        "limit_gb": LIMIT_GB,
    }
    OUT.mkdir(exist_ok=True)
    (OUT / "given_long_audio.json").write_text(json.dumps(result, indent=2) + "\n")
    (OUT / "given_long_audio.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
