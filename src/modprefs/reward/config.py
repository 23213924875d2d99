"""The ``reward:`` section of the workflow config: defaults, merging and per-run settings.

The workflow works without a ``reward:`` section (every key has a default here, and config.yaml shows
each one); a user's section is deep-merged over :data:`DEFAULTS`. Unknown or mistyped keys at any depth
(``reward.pairs.degradaton``) are rejected by the config schema (workflow/schemas/config.schema.yaml)
with their dotted name before any job runs; :func:`reward_config` checks the top level for Python
callers. A ``null`` set (``pairs.colloquial: null``) turns that pair set off. ``runs`` maps a run name
to overrides of ``train`` (and of ``model`` under a ``model`` key); each run is trained into
``results/reward/{run}/``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

DEFAULTS: dict[str, Any] = {
    # criterion -> instruction (text prefix); merged over modprefs.reward.model.DEFAULT_CRITERIA
    "criteria": {},
    "pairs": {
        "sources": ["human", "judge"],  # study label sources (human text/audio, judge text/audio)
        "judge_ratings": "auto",  # auto: results/judges/ratings.csv if config has `judges`; a path; null
        # decisiveness thresholds on the mean-rating gap, in units of the study's rating scale (study.scale)
        "min_gap": {"text": 0.0, "audio": 0.0},
        # quality_text / quality_audio instructions instead of one `quality` (off: the text and audio labels of a
        # prompt are opposite labels on identical inputs wherever readers and listeners disagree)
        "criterion_by_modality": True,
        "criterion_by_source": True,  # the AI judges' labels under their own instruction (quality_text_judge, ...)
        "degradation": {"kinds": ["noise", "clipping", "lowpass"], "per_clip": 1},
        # natural vs TTS; needs a human-speech corpus manifest (null: no modality pairs)
        "corpus": {
            "manifest": None,
            "name": "corpus",
            "max_pairs": 200,
            "min_context_turns": 1,
            "voices": None,
        },  # null: modprefs.reward.build.DEFAULT_VOICES
        # spoken-style rewrite vs written excerpt of study responses (null: none)
        "colloquial": {
            "rewriter": "rule-based",
            "n": 12,
            "max_chars": 160,
            # rule-based: every other written side a longer opening of the response than its rewrite (length no cue)
            "length_balanced": True,
            "rewrites": None,
            "endpoint": None,
            # one voice for both sides; piper renders 7x faster than the study's kokoro-onnx
            # (benchmarks/out/tts_rtf.json); null: the study voice
            "tts": {"backend": "piper", "voice": "en_US-joe-medium"},
        },
    },
    "model": {"backbone": {"name": "minilm-logmel"}, "pooling": "mean"},
    "train": {
        "epochs": 20,
        "batch_size": 16,
        "grad_accum": 1,
        "lr": "auto",
        "center_coef": 0.01,
        "margin_scale": 0.0,
        # covariate: β·log(chars ratio) in the BT logit, learnt, left out of the reward; balanced: longer- and
        # shorter-chosen training pairs weigh the same per pair type
        "length_control": "none",
        "val_fraction": 0.25,
        "device": "auto",
        "precision": "auto",
    },
    "runs": {
        "main": {},
        "no_centering": {"center_coef": 0.0},
        "text_labels": {"train_on": ["human_text"]},
        "audio_labels": {"train_on": ["human_audio"]},
    },
}
PAIR_SETS = ("study", "degradation", "modality", "colloquial")


def _merge(base: Any, override: Any) -> Any:
    if isinstance(base, Mapping) and isinstance(override, Mapping):
        out = dict(base)
        for k, v in override.items():
            out[k] = _merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(override)


def reward_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The full reward section: DEFAULTS deep-merged with ``config["reward"]`` (``runs`` replaced whole)."""
    user = dict(config.get("reward") or {})
    out = _merge(DEFAULTS, {k: v for k, v in user.items() if k != "runs"})
    if "runs" in user:
        out["runs"] = copy.deepcopy(user["runs"]) or {"main": {}}
    unknown = sorted(set(out) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"reward: unknown key(s) {unknown}; known: {sorted(DEFAULTS)}")
    return out


def run_settings(rcfg: Mapping[str, Any], run: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(model config, train config) of one run: the run's overrides over ``model`` and ``train``."""
    if run not in rcfg["runs"]:
        raise ValueError(f"reward.runs has no run {run!r} (runs: {sorted(rcfg['runs'])})")
    overrides = dict(rcfg["runs"][run] or {})
    model = _merge(rcfg["model"], overrides.pop("model", {}) or {})
    from modprefs.reward.model import DEFAULT_CRITERIA

    model["criteria"] = {**DEFAULT_CRITERIA, **(rcfg.get("criteria") or {})}
    train = {"seed": seed, **_merge(rcfg["train"], overrides)}
    return model, train


def judge_ratings_path(config: Mapping[str, Any]) -> str | None:
    """The judge table to read (or None): ``auto`` = results/judges/ratings.csv when the judges stage
    is configured and ``judge`` is among the sources."""
    rcfg = reward_config(config)
    if "judge" not in rcfg["pairs"]["sources"]:
        return None
    value = rcfg["pairs"]["judge_ratings"]
    if value == "auto":
        return "results/judges/ratings.csv" if config.get("judges") else None
    return value or None


def needs_gpu(rcfg: Mapping[str, Any], run: str) -> int:
    """1 if the run's backbone is a large one and training is not pinned to the CPU."""
    model, train = run_settings(rcfg, run, 0)
    large = model["backbone"].get("name") == "qwen2.5-omni"
    return int(large and str(train.get("device", "auto")) != "cpu")


def train_threads(rcfg: Mapping[str, Any], run: str) -> int:
    """Threads a training job asks for: 1 for the small default backbone (its ops are tiny: one thread is
    nearly as fast as two and does not stall when another process shares the cores; two runs then train
    side by side), 4 for a large backbone (featurization and CPU fallbacks)."""
    return 4 if needs_gpu(rcfg, run) or run_settings(rcfg, run, 0)[0]["backbone"].get("name") == "qwen2.5-omni" else 1
