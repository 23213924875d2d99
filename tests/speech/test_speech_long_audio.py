"""Long given audio rendered block by block (modprefs.speech.long_audio, issue #49) gives the whole-array render.

A clip longer than STREAM_ABOVE_S is read, resampled, levelled and written a block at a time so that its length
does not decide the memory a render job needs (benchmarks/performance/given_long_audio.py measures it). Here the
block path is forced on short clips, with blocks of a few thousand samples so that every block boundary effect would
show, and its WAV and manifest row are compared with the whole-array path's.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf

from modprefs.speech import long_audio
from modprefs.speech.render import given_clip
from support.audio import speech_like

LEVEL = {"target_lufs": -23.0, "true_peak_dbfs": -1.0}


def _clip(path: Path) -> SimpleNamespace:
    return SimpleNamespace(clip_id="it1_0", prompt_id="it1", response=0, text="a response", audio=str(path))


def _render(path: Path, out: Path, force_blocks: bool, monkeypatch: pytest.MonkeyPatch, **kwargs) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    with monkeypatch.context() as m:
        if force_blocks:
            m.setattr(long_audio, "STREAM_ABOVE_S", 0.0)
            m.setattr(long_audio, "BLOCK", 4099)
        return given_clip(_clip(path), 24000, out, kwargs.pop("level", LEVEL), **kwargs)


@pytest.mark.parametrize(
    "rate, channels, peak_at",
    [(44100, 2, 0.97), (48000, 1, None), (16000, 1, 1.0), (24000, 2, None)],
    ids=["44k1-stereo-limited", "48k", "16k-clipped", "24k-stereo"],
)
def test_blocks_give_the_whole_arrays_wav_and_measures(tmp_path, monkeypatch, rate, channels, peak_at):
    x = speech_like(rate, 9.0, level_db=-8)
    if peak_at is not None:  # a click the gain pushes over the ceiling: the limiter acts
        x[rate * 4 : rate * 4 + 40] = peak_at
    frames = np.stack([x, 0.5 * x + 0.01], axis=1) if channels == 2 else x
    source = tmp_path / "take.wav"
    sf.write(source, frames, rate, subtype="PCM_24")
    whole = _render(source, tmp_path / "whole", False, monkeypatch)
    block = _render(source, tmp_path / "blocks", True, monkeypatch)
    assert (tmp_path / "blocks/it1_0.wav").read_bytes() == (tmp_path / "whole/it1_0.wav").read_bytes()
    assert not list((tmp_path / "blocks").glob(".long-audio-*"))  # the intermediate files are gone
    for key, value in whole.items():
        if key in ("path", "render_seconds"):
            continue
        if isinstance(value, float):  # the DC offset and the RMS are sums taken in another order
            assert block[key] == pytest.approx(value, rel=1e-12, abs=1e-15, nan_ok=True), key
        else:
            assert block[key] == value, key
    if peak_at is not None and rate == 44100:
        assert whole["limited"] > 0


def test_an_unlevelable_long_clip_is_kept_for_qc_as_the_whole_path_keeps_it(tmp_path, monkeypatch):
    """Silence cannot be normalised: both paths write it unlevelled with NaN loudness (audio QC then fails it)."""
    source = tmp_path / "silence.wav"
    sf.write(source, np.zeros(16000 * 3), 16000)
    whole = _render(source, tmp_path / "whole", False, monkeypatch)
    block = _render(source, tmp_path / "blocks", True, monkeypatch)
    assert (tmp_path / "blocks/it1_0.wav").read_bytes() == (tmp_path / "whole/it1_0.wav").read_bytes()
    assert np.isnan(block["lufs_after"]) and np.isnan(whole["lufs_after"]) and block["rms_dbfs"] == whole["rms_dbfs"]


def test_a_bad_long_file_is_named_as_the_whole_path_names_it(tmp_path, monkeypatch):
    from modprefs.speech.given import GivenAudioError

    source = tmp_path / "nan.wav"
    x = speech_like(16000, 3.0)
    x[100] = np.nan
    sf.write(source, x, 16000, subtype="FLOAT")
    with pytest.raises(GivenAudioError, match=r"clip it1_0: given audio .*nan.wav has NaN or infinite samples"):
        _render(source, tmp_path / "blocks", True, monkeypatch)
    assert not list((tmp_path / "blocks").glob("*"))
