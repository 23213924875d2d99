"""Decode a published dataset's Audio cells with `datasets` itself and compare them with the study's WAVs.

Runs in the side environment of tests/hf_audio/install.sh (PyPI torch + torchcodec + the project's `datasets`
release), not in the project's .venv, and imports nothing from modprefs:

    .venv-hfaudio/bin/python tests/hf_audio/decode_check.py DATASET_DIR EXPECT_JSON

EXPECT_JSON is a list of ``{"split", "row", "column", "wav"}``: the WAV file whose samples the Audio cell
``split[row][column]`` must decode to. Both readers are checked: ``datasets.load_from_disk(DATASET_DIR)`` and
``datasets.load_dataset("parquet", data_dir=DATASET_DIR/data/<split>)``. Each cell is decoded by the Audio feature
(torchcodec's AudioDecoder, float32 in [-1, 1], channels x samples) and compared sample for sample with the WAV
read by soundfile as float32. Prints one JSON report; exits 1 when any cell differs or fails to decode.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import datasets
import numpy as np
import soundfile as sf


def check_cell(cell: object, wav: Path) -> dict:
    """One decoded Audio cell against its WAV: sample rates, shapes and the largest absolute sample difference."""
    samples = cell.get_all_samples()  # type: ignore[attr-defined]  # torchcodec AudioDecoder
    got = samples.data.numpy()
    want, sr = sf.read(wav, dtype="float32", always_2d=True)
    want = want.T
    out = {"sr": int(samples.sample_rate), "wav_sr": int(sr), "shape": list(got.shape), "wav_shape": list(want.shape)}
    same_shape = got.shape == want.shape
    out["max_abs_diff"] = float(np.max(np.abs(got - want))) if same_shape and got.size else None
    out["equal"] = bool(same_shape and out["sr"] == out["wav_sr"] and np.array_equal(got, want))
    return out


def main(argv: list[str]) -> int:
    root, expect = Path(argv[0]), json.loads(Path(argv[1]).read_text())
    readers = {
        "load_from_disk": lambda split: datasets.load_from_disk(str(root))[split],
        "load_dataset_parquet": lambda split: datasets.load_dataset("parquet", data_dir=str(root / "data" / split))[
            "train"
        ],
    }
    report: dict = {"datasets": datasets.__version__, "cells": 0, "mismatches": [], "max_abs_diff": 0.0}
    for reader, load in readers.items():
        splits: dict[str, datasets.Dataset] = {}
        for e in expect:
            ds = splits.setdefault(e["split"], load(e["split"]))
            if not isinstance(ds.features[e["column"]], datasets.Audio):
                report["mismatches"].append({**e, "reader": reader, "error": "not an Audio column"})
                continue
            try:
                res = check_cell(ds[e["row"]][e["column"]], Path(e["wav"]))
            except Exception as exc:  # a cell that does not decode is a finding, reported with its address
                report["mismatches"].append({**e, "reader": reader, "error": f"{type(exc).__name__}: {exc}"})
                continue
            report["cells"] += 1
            if res["max_abs_diff"] is not None:
                report["max_abs_diff"] = max(report["max_abs_diff"], res["max_abs_diff"])
            if not res["equal"]:
                report["mismatches"].append({**e, "reader": reader, **res})
    print(json.dumps(report))
    return 1 if report["mismatches"] or not report["cells"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
