"""Evaluation of a trained reward model on pair tables.

- :func:`accuracy_table`: pairwise accuracy, micro (all pairs) and by ``category`` and ``source``,
  plus macro (the mean of the category accuracies, as ESDR-Bench's Macro); ties (``|r_c − r_r| ≤ tol``)
  are counted separately and left out of ``accuracy`` (``accuracy_ties_half`` counts them as ½).
- :func:`ood_table`: the same pairs with each clip's audio swapped for another TTS engine's
  rendition (``results/audio/engines/{backend}/{clip_id}.wav``; degradations re-applied), next to
  the study rendition: out-of-distribution accuracy by engine.
- :func:`drift_table`: mean chosen / rejected / overall reward, raw and after post-hoc centering
  (subtracting the mean of all scored sides, and per source): the scale drift that the centering
  loss controls (compare runs trained with λ = 0.01 and λ = 0 in :func:`summary_tables`).
- :func:`length_bias`: correlation of reward with response length (characters of the original
  response), accuracy on pairs whose longer response was rejected vs chosen.
- :func:`transfer_table`: runs trained on one label set (e.g. human text labels) scored on
  another's held-out pairs (e.g. human audio labels): the cross-modal transfer table.
- :func:`pair_type_table`: each run's accuracy by pair type (held out and all), each type labelled
  with where its labels come from (the rule-based colloquial pairs say so), and the builders that
  made nothing with the reason (e.g. no human-speech corpus for natural-vs-TTS pairs).

The OOD, transfer and pair-type tables carry every cell's ``n``; a cell with fewer than
:data:`MIN_N` pairs gets a caveat (a 95 % interval of an accuracy on 10 pairs is about ±0.3).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from modprefs.reward.baselines import BASELINES, baseline_credits, ceiling_of, compare, mean_credit, model_credit
from modprefs.reward.model import RewardModel, load_reward_model, pair_examples
from modprefs.reward.pairs import assign_split
from modprefs.reward.run_outputs import pair_accuracy, scores_table

log = logging.getLogger(__name__)

ACC_COLUMNS = ["split", "level", "key", "n", "correct", "wrong", "ties", "accuracy", "accuracy_ties_half"]
MIN_N = 20
PAIR_TYPE_LABELS = {
    "human_text": "study: human labels, text condition",
    "human_audio": "study: human labels, audio condition",
    "judge_text": "study: AI judge labels, text",
    "judge_audio": "study: AI judge labels, audio",
    "noise": "clean vs degraded audio (noise)",
    "clipping": "clean vs degraded audio (clipping)",
    "lowpass": "clean vs degraded audio (low-pass)",
    "colloquial_rule_based": "colloquial: RULE-BASED spoken-style rewrite vs written text (same voice)",
    "colloquial": "colloquial: LLM/user rewrite vs written text (same voice)",
    "wild": "modality: natural speech vs TTS (corpus tier wild)",
    "semi-wild": "modality: natural speech vs TTS (corpus tier semi-wild)",
    "scripted": "modality: natural speech vs TTS (corpus tier scripted)",
}


def caveat(n: int, min_n: int = MIN_N) -> str:
    """'' for ``n >= min_n``; else a note that the accuracy of so few pairs is indicative only."""
    if n >= min_n:
        return ""
    if n == 0:
        return "no pairs"
    half = 1.96 * np.sqrt(0.25 / n)
    return f"n={n} < {min_n}: indicative only (95% CI about ±{half:.2f})"


def score_pairs(
    model: RewardModel, pairs: pd.DataFrame, split: Sequence[str] | None = None, batch_size: int = 16
) -> pd.DataFrame:
    """Per-pair rewards (r_chosen, r_rejected) with the pair's metadata and split."""
    pairs = pairs.reset_index(drop=True)
    ex_c, ex_r = pair_examples(pairs, model.criteria)
    scores = model.score(ex_c + ex_r, batch_size)
    n = len(pairs)
    return scores_table(pairs, split if split is not None else ["all"] * n, scores[:n], scores[n:])


COMPARE_COLUMNS = [
    "n_prompts",
    "model",
    "ci_low",
    "ci_high",
    *BASELINES,
    "minus_length",
    "minus_length_ci_low",
    "minus_length_ci_high",
    "beats_length",
]


def with_credits(scores: pd.DataFrame, tie_tol: float = 1e-6) -> pd.DataFrame:
    """``scores`` plus per-pair credits (1 / ½ / 0) of the model (``credit_model``) and of every baseline
    (``credit_length`` ...; :func:`modprefs.reward.baselines.baseline_credits`, the majority rule learnt from
    the ``train`` split) and ``cluster`` (the prompt: ``group``, else the pair)."""
    is_train = (scores["split"] == "train").to_numpy() if "split" in scores else np.zeros(len(scores), bool)
    train = is_train if is_train.any() else None
    credits = baseline_credits(scores, train).add_prefix("credit_")
    cluster = scores["group"].astype(object) if "group" in scores else pd.Series(None, index=scores.index, dtype=object)
    return scores.assign(
        credit_model=model_credit(scores["r_chosen"], scores["r_rejected"], tie_tol),
        cluster=cluster.where(cluster.notna(), scores["pair_id"].astype(str)).astype(str),
        **{c: credits[c] for c in credits.columns},
    )


def comparison(g: pd.DataFrame, seed: int = 0) -> dict[str, Any]:
    """:func:`modprefs.reward.baselines.compare` of a :func:`with_credits` subset (without ``n_pairs``)."""
    base = g[[f"credit_{b}" for b in BASELINES]].set_axis(list(BASELINES), axis=1)
    row = compare(g["credit_model"].to_numpy(float), base, g["cluster"].tolist(), seed)
    return {k: row[k] for k in COMPARE_COLUMNS}


def group_ceiling(categories: pd.Series, ceilings: Mapping[str, Mapping[str, Any]] | None) -> float:
    """The human agreement ceiling of a set of pairs (their ``category`` values, shape ``(n,)``): the mean of
    each pair's type ceiling (:func:`modprefs.reward.baselines.ceiling_of`) when every pair is of a ``human_*``
    type with one, else NaN (a ceiling for judge, degradation or colloquial labels is not defined)."""
    per_pair = np.array([ceiling_of(str(c), ceilings) for c in categories], dtype=float)
    return float(per_pair.mean()) if per_pair.size and np.isfinite(per_pair).all() else float("nan")


def _acc_rows(
    scores: pd.DataFrame,
    split: str,
    tie_tol: float,
    seed: int = 0,
    ceilings: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    def row(level: str, key: str, g: pd.DataFrame) -> dict[str, Any]:
        acc = pair_accuracy(g["r_chosen"], g["r_rejected"], tie_tol)
        ceiling = group_ceiling(g["category"], ceilings) if "category" in g else float("nan")
        return {"split": split, "level": level, "key": key, **acc, **comparison(g, seed), "ceiling": ceiling}

    rows = [row("micro", "all", scores)]
    for level in ("category", "source", "criterion"):
        if level not in scores:
            continue
        for key, g in scores.groupby(scores[level].astype(str), sort=True):
            rows.append(row(level, str(key), g))
    cats = [r for r in rows if r["level"] == "category" and not np.isnan(r["accuracy"])]
    if cats:
        macro: dict[str, Any] = {"split": split, "level": "macro", "key": "category"}
        for c in ("n", "correct", "wrong", "ties"):
            macro[c] = sum(r[c] for r in cats)
        for c in ("accuracy", "accuracy_ties_half", "model", *BASELINES):
            vals = [r[c] for r in cats if not np.isnan(r[c])]
            macro[c] = float(np.mean(vals)) if vals else float("nan")
        ceils = [r["ceiling"] for r in cats]
        macro["ceiling"] = float(np.mean(ceils)) if np.isfinite(ceils).all() else float("nan")
        macro["n_prompts"] = int(scores["cluster"].nunique())
        macro["beats_length"] = "n/a"
        rows.append(macro)  # no interval: the categories share prompts
    return rows


def accuracy_table(
    scores: pd.DataFrame,
    tie_tol: float = 1e-6,
    seed: int = 0,
    ceilings: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Micro / by category / by source / by criterion / macro accuracy, per split and for all pairs, each beside
    the baselines on the same pairs (length, position, majority, PRISM; ties ½) with n in prompts and a
    prompt-clustered 95 % interval of the model's accuracy (ties ½) and of its difference from length-only;
    ``ceiling``: the human agreement ceiling of rows whose pairs all carry human labels (:func:`group_ceiling`;
    ``ceilings`` = the pair files' ``summary.json["ceiling"]``, from :func:`modprefs.reward.baselines`)."""
    scores = with_credits(scores, tie_tol)
    rows = []
    if "split" in scores and scores["split"].nunique() > 1:
        for split, g in scores.groupby("split", sort=True):
            rows += _acc_rows(g, str(split), tie_tol, seed, ceilings)
    rows += _acc_rows(scores, "all", tie_tol, seed, ceilings)
    return pd.DataFrame(rows, columns=ACC_COLUMNS + COMPARE_COLUMNS + ["ceiling"])


def engine_pairs(pairs: pd.DataFrame, engines_dir: str | os.PathLike[str], backend: str) -> pd.DataFrame:
    """The pairs whose two clips have ``engines_dir/backend/{clip_id}.wav``, with those paths swapped in
    (a degradation spec stays, so the rejected side is the engine's clip degraded the same way)."""
    root = Path(engines_dir) / backend
    keep, chosen, rejected = [], [], []
    for i, r in enumerate(pairs.itertuples(index=False)):
        cid, rid = getattr(r, "chosen_clip_id", None), getattr(r, "rejected_clip_id", None)
        if not cid or not rid or (isinstance(cid, float) and np.isnan(cid)):
            continue
        pc, pr = root / f"{cid}.wav", root / f"{rid}.wav"
        if pc.is_file() and pr.is_file():
            keep.append(i)
            chosen.append(str(pc))
            rejected.append(str(pr))
    out = pairs.iloc[keep].copy()
    out["chosen_audio"], out["rejected_audio"] = chosen, rejected
    return out


def ood_table(
    model: RewardModel,
    pairs: pd.DataFrame,
    engines_dir: str | os.PathLike[str] | None,
    backends: Iterable[str],
    split: Sequence[str] | None = None,
    study_engine: str = "study",
    tie_tol: float = 1e-6,
    batch_size: int = 16,
) -> pd.DataFrame:
    """Accuracy by TTS engine (micro and by source) on the pairs that have clip ids."""
    pairs = pairs.reset_index(drop=True)
    split_of = pd.Series(list(split) if split is not None else ["all"] * len(pairs))
    has_clip = pairs["chosen_clip_id"].notna() & pairs["rejected_clip_id"].notna()
    base = pairs[has_clip]
    variants = {study_engine: base}
    for b in backends:
        if engines_dir is None:
            break
        v = engine_pairs(base, engines_dir, b)
        if len(v) < len(base):
            log.warning("engine %s: %d of %d pairs lack a rendition; left out", b, len(base) - len(v), len(base))
        variants[b] = v
    rows = []
    for engine, v in variants.items():
        if v.empty:
            continue
        s = score_pairs(model, v, split_of.loc[v.index].tolist(), batch_size)
        for sp in sorted(set(s["split"])) + (["all"] if s["split"].nunique() > 1 else []):
            g = s if sp == "all" else s[s["split"] == sp]
            rows.append(
                {
                    "engine": engine,
                    "split": sp,
                    "level": "micro",
                    "key": "all",
                    **pair_accuracy(g["r_chosen"], g["r_rejected"], tie_tol),
                }
            )
            for key, h in g.groupby(g["source"].astype(str)):
                rows.append(
                    {
                        "engine": engine,
                        "split": sp,
                        "level": "source",
                        "key": key,
                        **pair_accuracy(h["r_chosen"], h["r_rejected"], tie_tol),
                    }
                )
    out = pd.DataFrame(rows, columns=["engine"] + ACC_COLUMNS)
    out["caveat"] = [caveat(int(n)) for n in out["n"]]
    return out


def drift_table(scores: pd.DataFrame, center_coef: float | None = None) -> pd.DataFrame:
    """Mean rewards (chosen, rejected, all, pair sum) raw and post-hoc centred, overall and per source."""
    rows = []
    all_mean = float(np.mean(np.concatenate([scores["r_chosen"], scores["r_rejected"]]))) if len(scores) else np.nan
    groups = [("all", scores)] + [(str(k), g) for k, g in scores.groupby(scores["source"].astype(str))]
    for key, g in groups:
        rc, rr = g["r_chosen"].to_numpy(float), g["r_rejected"].to_numpy(float)
        own = float(np.mean(np.concatenate([rc, rr])))
        rows.append(
            {
                "source": key,
                "n": len(g),
                "center_coef": center_coef,
                "mean_chosen": rc.mean(),
                "mean_rejected": rr.mean(),
                "mean_reward": own,
                "mean_pair_sum": float(np.mean(rc + rr)),
                "sd_reward": float(np.std(np.concatenate([rc, rr]))),
                "mean_chosen_centered": rc.mean() - all_mean,
                "mean_rejected_centered": rr.mean() - all_mean,
                "mean_chosen_source_centered": rc.mean() - own,
                "mean_rejected_source_centered": rr.mean() - own,
            }
        )
    return pd.DataFrame(rows)


def length_bias(scores: pd.DataFrame, tie_tol: float = 1e-6) -> pd.DataFrame:
    """Reward vs response length (pairs with lengths), overall and per source."""
    from scipy.stats import pearsonr, spearmanr

    rows = []
    s = scores.dropna(subset=["chosen_chars", "rejected_chars"])
    s = s[(s["chosen_chars"].astype(float) > 0) & (s["rejected_chars"].astype(float) > 0)]
    groups = [("all", s)] + [(str(k), g) for k, g in s.groupby(s["source"].astype(str))]
    for key, g in groups:
        chars = np.concatenate([g["chosen_chars"], g["rejected_chars"]]).astype(float)
        reward = np.concatenate([g["r_chosen"], g["r_rejected"]]).astype(float)
        varies = len(g) >= 3 and np.std(chars) > 0 and np.std(reward) > 0
        longer_rej = g[g["rejected_chars"].astype(float) > g["chosen_chars"].astype(float)]
        longer_cho = g[g["chosen_chars"].astype(float) > g["rejected_chars"].astype(float)]
        rows.append(
            {
                "source": key,
                "n_pairs": len(g),
                "pearson_r": float(pearsonr(chars, reward)[0]) if varies else np.nan,
                "spearman_rho": float(spearmanr(chars, reward)[0]) if varies else np.nan,
                "share_longer_chosen": len(longer_cho) / len(g) if len(g) else np.nan,
                "n_longer_rejected": len(longer_rej),
                "accuracy_longer_rejected": pair_accuracy(longer_rej["r_chosen"], longer_rej["r_rejected"], tie_tol)[
                    "accuracy"
                ]
                if len(longer_rej)
                else np.nan,
                "n_longer_chosen": len(longer_cho),
                "accuracy_longer_chosen": pair_accuracy(longer_cho["r_chosen"], longer_cho["r_rejected"], tie_tol)[
                    "accuracy"
                ]
                if len(longer_cho)
                else np.nan,
            }
        )
    return pd.DataFrame(rows)


def transfer_table(
    runs: Mapping[str, tuple[Any, pd.DataFrame]],
    split: str = "val",
    categories: Sequence[str] = ("human_text", "human_audio", "judge_text", "judge_audio"),
    tie_tol: float = 1e-6,
) -> pd.DataFrame:
    """Rows: runs (what they trained on); columns: held-out accuracy on each label category."""
    rows = []
    for run, (train_on, scores) in runs.items():
        s = scores[scores["split"] == split] if split != "all" else scores
        row: dict[str, Any] = {"run": run, "trained_on": "+".join(train_on) if train_on else "all"}
        for c in categories:
            g = s[s["category"].astype(str) == c]
            acc = pair_accuracy(g["r_chosen"], g["r_rejected"], tie_tol) if len(g) else None
            row[f"{c}_accuracy"] = acc["accuracy"] if acc else np.nan
            row[f"{c}_n"] = acc["n"] if acc else 0
        small = [f"{c} ({row[f'{c}_n']})" for c in categories if row[f"{c}_n"] < MIN_N]
        row["caveat"] = (
            f"n < {MIN_N} held-out pairs in {', '.join(small)}: those accuracies are indicative only" if small else ""
        )
        rows.append(row)
    return pd.DataFrame(rows)


PAIR_TYPE_COLUMNS = [
    "run",
    "pair_type",
    "label",
    "source",
    "val_n",
    "val_n_prompts",
    "val_accuracy",
    "val_model",
    "val_ci_low",
    "val_ci_high",
    *(f"val_{b}" for b in BASELINES),
    "val_minus_length",
    "val_minus_length_ci_low",
    "val_minus_length_ci_high",
    "beats_length",
    "ceiling",
    "all_n",
    "all_accuracy",
    "all_length",
    "caveat",
]


def pair_type_table(
    evals: Mapping[str, Mapping[str, Any]],
    pairs_summary: Mapping[str, Any] | None = None,
    tie_tol: float = 1e-6,
    seed: int = 0,
) -> pd.DataFrame:
    """Per run and pair type (``category``): held-out accuracy with n in pairs and prompts, beside the baselines
    on the same pairs and the human agreement ceiling (``human_*`` types; ``pairs_summary["ceiling"]``), with
    prompt-clustered 95 % intervals of the model (ties ½) and of model − length (``beats_length``), the
    overall accuracy, the type's label and a caveat; then one row per builder that made no pairs, with the
    reason (from the pairs' summary.json)."""
    ceilings = (pairs_summary or {}).get("ceiling")
    rows = []
    for run, e in evals.items():
        s = with_credits(e["scores"], tie_tol)
        for cat, g in s.groupby(s["category"].astype(str), sort=True):
            val = g[g["split"] == "val"]
            acc_val = pair_accuracy(val["r_chosen"], val["r_rejected"], tie_tol) if len(val) else None
            acc_all = pair_accuracy(g["r_chosen"], g["r_rejected"], tie_tol)
            cmp = comparison(val, seed)
            rows.append(
                {
                    "run": run,
                    "pair_type": cat,
                    "label": PAIR_TYPE_LABELS.get(cat, cat),
                    "source": str(g["source"].iloc[0]),
                    "val_n": len(val),
                    "val_n_prompts": cmp["n_prompts"],
                    "val_accuracy": acc_val["accuracy"] if acc_val else np.nan,
                    **{f"val_{k}": v for k, v in cmp.items() if k not in ("n_prompts", "beats_length")},
                    "beats_length": cmp["beats_length"],
                    "ceiling": ceiling_of(cat, ceilings),
                    "all_n": len(g),
                    "all_accuracy": acc_all["accuracy"],
                    "all_length": mean_credit(g["credit_length"].to_numpy(float)),
                    "caveat": caveat(len(val)),
                }
            )
    for builder, why in ((pairs_summary or {}).get("skipped") or {}).items():
        rows.append(
            {
                "run": "-",
                "pair_type": builder,
                "label": f"{builder}: not built",
                "source": builder,
                "val_n": 0,
                "val_n_prompts": 0,
                "all_n": 0,
                "beats_length": "n/a",
                "caveat": why,
            }
        )
    return pd.DataFrame(rows, columns=PAIR_TYPE_COLUMNS)


def not_beating_length(pair_types: pd.DataFrame, run: str = "main") -> list[str]:
    """The pair types whose held-out accuracy does not beat the length-only baseline in ``run`` (the prompt-
    clustered 95 % interval of model − length reaches 0 or lies below it), e.g. ``["human_text", ...]``."""
    if "beats_length" not in pair_types:
        return []
    hit = pair_types[(pair_types["run"].astype(str) == run) & (pair_types["beats_length"].astype(str) == "no")]
    return hit["pair_type"].astype(str).tolist()


def headline(acc: pd.DataFrame) -> dict[str, Any]:
    """eval.json's accuracies from an :func:`accuracy_table`: ``val_micro``, ``val_macro``, ``all_micro`` (ties
    left out), then for the held-out micro row its n in pairs and prompts, the model's accuracy with ties ½
    and its prompt-clustered 95 % interval, every baseline, and model − length with its interval."""

    def pick(split_name: str, level: str, key: str) -> pd.Series | None:
        hit = acc[(acc["split"] == split_name) & (acc["level"] == level) & (acc["key"] == key)]
        return None if hit.empty else hit.iloc[0]

    def number(row: pd.Series | None, col: str) -> float | None:
        return None if row is None or pd.isna(row[col]) else float(row[col])

    val = pick("val", "micro", "all")
    out: dict[str, Any] = {
        "val_micro": number(val, "accuracy"),
        "val_macro": number(pick("val", "macro", "category"), "accuracy"),
        "all_micro": number(pick("all", "micro", "all"), "accuracy"),
        "val_n_pairs": int(val["n"]) if val is not None else 0,
        "val_n_prompts": int(val["n_prompts"]) if val is not None else 0,
    }
    for col in ("model", "ci_low", "ci_high", *BASELINES, "minus_length", "minus_length_ci_low"):
        out[f"val_{col}"] = number(val, col)
    out["val_minus_length_ci_high"] = number(val, "minus_length_ci_high")
    out["val_beats_length"] = str(val["beats_length"]) if val is not None else "n/a"
    out["val_ceiling"] = number(val, "ceiling") if "ceiling" in acc else None
    return out


def evaluate_run(
    run_dir: str | os.PathLike[str],
    pairs: pd.DataFrame,
    engines_dir: str | os.PathLike[str] | None = None,
    backends: Iterable[str] = (),
    out_dir: str | os.PathLike[str] | None = None,
    batch_size: int = 16,
    cache_dir: str | os.PathLike[str] | None = None,
    ceilings: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Load the run's checkpoint, score every pair (split as in training), and build all tables.
    With ``out_dir``: writes scores.csv, accuracy.csv, ood.csv, drift.csv, length_bias.csv, eval.json.
    ``ceilings``: the pair files' ``summary.json["ceiling"]`` (the human agreement ceiling per label type), put
    beside the accuracy of human-labelled pairs (accuracy.csv's ``ceiling``; eval.json's ``val_ceiling`` and
    ``ceiling`` by pair type)."""
    import torch

    from modprefs.io import write_csv, write_json
    from modprefs.reward.examples import FeatureCache

    device = "cuda" if torch.cuda.is_available() else "cpu"  # a GPU when one is visible (qwen2.5-omni runs)
    model = load_reward_model(run_dir, device=device, cache=FeatureCache(cache_dir))
    train_cfg = model.extra_config.get("train", {})
    pairs = pairs.reset_index(drop=True)
    split = assign_split(pairs, float(train_cfg.get("val_fraction", 0.25)), int(train_cfg.get("seed", 0))).tolist()
    tol = float(train_cfg.get("tie_tol", 1e-6))
    scores = score_pairs(model, pairs, split, batch_size)
    tables = {
        "scores": scores,
        "accuracy": accuracy_table(scores, tol, int(train_cfg.get("seed", 0)), ceilings),
        "ood": ood_table(model, pairs, engines_dir, list(backends), split, tie_tol=tol, batch_size=batch_size),
        "drift": drift_table(scores, model.extra_config.get("center_coef")),
        "length_bias": length_bias(scores, tol),
    }
    summary = {
        "run_dir": str(run_dir),
        "n_pairs": len(pairs),
        "center_coef": model.extra_config.get("center_coef"),
        "train_on": train_cfg.get("train_on"),
        **headline(tables["accuracy"]),
        "ceiling": {
            str(cat): ceiling_of(str(cat), ceilings)
            for cat in sorted(scores["category"].astype(str).unique())
            if np.isfinite(ceiling_of(str(cat), ceilings))
        }
        if "category" in scores
        else {},
        "mean_reward": float(tables["drift"]["mean_reward"].iloc[0]) if len(scores) else None,
        "training_data_sha256": model.extra_config.get("training_data_sha256"),
    }
    if out_dir is not None:
        out = Path(out_dir)
        for name, df in tables.items():
            write_csv(df, out / f"{name}.csv")
        write_json(summary, out / "eval.json")
    return {"summary": summary, **tables}


def pair_ceilings(pairs_summary_json: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The human agreement ceilings of the pair files' ``summary.json`` (``evaluate_run``'s ``ceilings``)."""
    return json.loads(Path(pairs_summary_json).read_text()).get("ceiling")


def summary_tables(
    evals: Mapping[str, Mapping[str, Any]], pairs_summary: Mapping[str, Any] | None = None
) -> dict[str, pd.DataFrame]:
    """Across runs: headline accuracies, accuracy by pair type, the transfer table and drift (λ vs no λ).
    ``evals``: run -> {"summary": ..., "scores": DataFrame, "drift": DataFrame} (as :func:`evaluate_run`);
    ``pairs_summary``: the pair builders' summary.json (for the types that were not built, and why). The runs
    table leaves out eval.json's per-type ``ceiling`` (pair_types.csv has it by type; ``val_ceiling`` stays)."""
    transfer = transfer_table({r: (e["summary"].get("train_on"), e["scores"]) for r, e in evals.items()})
    drift = pd.concat([e["drift"].assign(run=r) for r, e in evals.items()], ignore_index=True)
    drift = drift[["run"] + [c for c in drift.columns if c != "run"]]
    headline = pd.DataFrame(
        [
            {"run": r, **{k: v for k, v in e["summary"].items() if k not in ("run_dir", "ceiling")}}
            for r, e in evals.items()
        ]
    )
    return {"runs": headline, "pair_types": pair_type_table(evals, pairs_summary), "transfer": transfer, "drift": drift}


SUMMARY_TITLES = {
    "runs": "Reward runs: held-out micro/macro accuracy beside the length / position / majority / PRISM baselines "
    "(ties ½), n in pairs and prompts, prompt-clustered 95 % intervals, and mean reward",
    "pair_types": "Accuracy by pair type beside the baselines on the same held-out pairs and the human agreement "
    "ceiling; n in pairs and prompts, prompt-clustered 95 % intervals; beats_length = the interval of model − "
    "length lies above 0 (rule-based colloquial pairs are labelled; n < 20 flagged)",
    "transfer": "Cross-modal transfer: held-out accuracy by label set (rows: what the run trained on; "
    "n per cell, n < 20 flagged)",
    "drift": "Reward drift: mean chosen/rejected reward per run (centering λ) and source",
}


def write_summary(
    evals: Mapping[str, Mapping[str, Any]],
    out_dir: str | os.PathLike[str],
    pairs_summary: Mapping[str, Any] | None = None,
) -> dict[str, pd.DataFrame]:
    """:func:`summary_tables` as ``out_dir/{name}.csv`` and titled ``.md``."""
    from modprefs.io import write_csv, write_markdown_table

    tables = summary_tables(evals, pairs_summary)
    for name, df in tables.items():
        write_csv(df, Path(out_dir) / f"{name}.csv")
        write_markdown_table(df, Path(out_dir) / f"{name}.md", title=SUMMARY_TITLES[name], floatfmt=".3f")
    log.info("summary of %d runs\n%s", len(evals), tables["runs"].to_string())
    return tables


def read_eval(out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    out = Path(out_dir)
    return {
        "summary": json.loads((out / "eval.json").read_text()),
        "scores": pd.read_csv(out / "scores.csv"),
        "drift": pd.read_csv(out / "drift.csv"),
    }


def write_summary_files(
    runs: Sequence[str],
    eval_files: Sequence[str | os.PathLike[str]],
    pairs_summary_json: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
) -> None:
    """:func:`write_summary` of the runs whose eval.json files are ``eval_files`` (one per run, in order),
    with the pair files' summary read from ``pairs_summary_json``."""
    evals = {run: read_eval(Path(p).parent) for run, p in zip(runs, eval_files)}
    pairs_summary = json.loads(Path(pairs_summary_json).read_text())
    write_summary(evals, out_dir, pairs_summary)
