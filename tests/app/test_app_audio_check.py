"""`modprefs app load` checks every WAV against the audio manifest: mono, sample rate, duration, loudness.

Each test damages one clip of the tiny study (tests/support/app_study.py: 16 kHz 16-bit sine tones) and
expects the load to be refused with a message naming the clip, its file and what differs; the
untouched study loads, with and without a ``lufs_after`` column.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sqlalchemy")

import soundfile as sf
from scipy.signal import resample_poly

from modprefs.app.db import Database
from modprefs.app.loader import DURATION_TOLERANCE_S, StudyLoadError, check_wav, load_study
from modprefs.speech.loudness import integrated_loudness
from support.app_study import SR, make_study

CLIP = "attn_0"  # every participant's trial 0, so an audio slot needs it


@pytest.fixture
def study(tmp_path):
    return make_study(tmp_path / "study", n_prompts=4, raters_per_condition=2, trials=2)


def _with_lufs(study) -> pd.DataFrame:
    """The study's manifest with each clip's measured loudness as ``lufs_after`` (written back)."""
    man = pd.read_csv(study.files.manifest)
    man["lufs_after"] = [integrated_loudness(sf.read(study.dir / p)[0], SR) for p in man["path"]]
    man.to_csv(study.files.manifest, index=False)
    return man


def _load(study, tmp_path) -> dict[str, int]:
    return load_study(Database(f"sqlite:///{tmp_path}/app.db"), study.files, replace=True, force=True)


def _refusal(study, tmp_path) -> str:
    with pytest.raises(StudyLoadError) as exc:
        _load(study, tmp_path)
    msg = str(exc.value)
    assert "1 problem(s)" in msg, msg  # only the damaged clip, and one line for it
    return msg


def _wav(study) -> Path:
    return study.dir / "clips" / f"{CLIP}.wav"


def test_untouched_manifest_loads_with_and_without_lufs(study, tmp_path):
    assert _load(study, tmp_path)["clips"] > 2
    man = _with_lufs(study)
    assert man["lufs_after"].between(-20, -10).all()  # 0.2-amplitude tones: about -17 LUFS
    assert _load(study, tmp_path)["clips"] > 2


def test_clip_resampled_to_8khz_is_refused(study, tmp_path):
    data, sr = sf.read(_wav(study))
    sf.write(_wav(study), resample_poly(data, 1, 2), sr // 2, subtype="PCM_16")  # same duration, other rate
    msg = _refusal(study, tmp_path)
    assert (
        f"clip {CLIP}: audio file {_wav(study).resolve()} has sample rate 8000 Hz but the manifest says 16000 Hz" in msg
    )


def test_stereo_clip_is_refused(study, tmp_path):
    data, sr = sf.read(_wav(study))
    sf.write(_wav(study), np.stack([data, data], axis=1), sr, subtype="PCM_16")
    msg = _refusal(study, tmp_path)
    assert f"clip {CLIP}: audio file {_wav(study).resolve()} has 2 channels but the manifest's clips are mono" in msg


def test_truncated_clip_is_refused_and_the_tolerance_is_1_ms(study, tmp_path):
    data, sr = sf.read(_wav(study))
    expected = study.durations[CLIP]
    assert check_wav(_wav(study), expected)[1] is None
    sf.write(_wav(study), data[: -int(0.0005 * sr)], sr, subtype="PCM_16")  # 0.5 ms short: within 1 ms
    assert check_wav(_wav(study), expected)[0] == pytest.approx(expected - 0.0005)
    sf.write(_wav(study), data[: -int(0.05 * sr)], sr, subtype="PCM_16")  # 50 ms cut off
    assert DURATION_TOLERANCE_S == 0.001
    msg = _refusal(study, tmp_path)
    assert (
        f"clip {CLIP}: audio file {_wav(study).resolve()} lasts {expected - 0.05:.4f} s "
        f"but the manifest says {expected:.4f} s (more than 0.001 s apart)"
    ) in msg


def test_clip_6_db_louder_than_its_lufs_after_is_refused(study, tmp_path):
    man = _with_lufs(study).set_index("clip_id")
    data, sr = sf.read(_wav(study))
    # the 16-bit file reads what the manifest says to 0.01 LU
    assert integrated_loudness(data, sr) == pytest.approx(man.loc[CLIP, "lufs_after"], abs=0.01)
    sf.write(_wav(study), 2.0 * data, sr, subtype="PCM_16")  # +6.02 dB, no clipping (peak 0.4)
    msg = _refusal(study, tmp_path)
    louder = man.loc[CLIP, "lufs_after"] + 20 * np.log10(2)
    assert (
        f"clip {CLIP}: audio file {_wav(study).resolve()} reads {louder:.2f} LUFS but the manifest says "
        f"lufs_after {man.loc[CLIP, 'lufs_after']:.2f} LUFS (more than 0.5 LU apart)"
    ) in msg


def test_clip_0_3_lu_off_is_accepted_and_empty_lufs_is_not_checked(study, tmp_path):
    man = _with_lufs(study)
    man.loc[man.clip_id == CLIP, "lufs_after"] += 0.3
    man.loc[man.clip_id == "attn_1", "lufs_after"] = np.nan  # written as an empty cell: not measured
    man.to_csv(study.files.manifest, index=False)
    assert _load(study, tmp_path)["clips"] > 2


def test_every_difference_of_one_clip_is_listed(study, tmp_path):
    _with_lufs(study)
    data, sr = sf.read(_wav(study))
    sf.write(_wav(study), resample_poly(data[: len(data) // 2], 1, 2) * 2.0, sr // 2, subtype="PCM_16")
    msg = _refusal(study, tmp_path)
    for fragment in ("has sample rate 8000 Hz", "lasts", "reads", "; "):
        assert fragment in msg


@pytest.mark.parametrize(
    "value, fragment", [("fast", "is not a number"), ("16000.5", "is not a positive whole number")]
)
def test_bad_manifest_sample_rate_is_named(study, tmp_path, value, fragment):
    man = pd.read_csv(study.files.manifest, dtype=str)
    man.loc[man.clip_id == CLIP, "sample_rate"] = value
    man.to_csv(study.files.manifest, index=False)
    msg = _refusal(study, tmp_path)
    assert f"clip {CLIP}: {study.files.manifest}: sample_rate '{value}' {fragment}" in msg
