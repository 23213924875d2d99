"""Null size and power of the justification-term tests (§4.3; issue 27, items 1 and 8).

Under identical conditions, each participant has personal phrase habits: a Dirichlet(alpha) draw
over a fixed vocabulary of 18 reasons (and over 5 openers), alpha in {0.1, 0.3, 1.0, inf}
(inf = every participant uses the uniform distribution: independent documents). Each participant
has 20 trials and writes a justification on each with a personal probability r ~ Beta(1.4, 2.6)
(mean .35, the paper's 658 of ~1,800 trials); a justification is an opener and 1-3 reasons drawn
from the participant's habits. Sizes: ``paper`` = 46 audio + 48 text participants (the paper's
analysable counts), ``small`` = 20 + 20. The studies go through the shipped analysis
(:func:`modprefs.stats.tables.justifications.analyze_justifications`, the project's stop list and
modality-term list), and two tests are scored on the same studies:

``permutation``     the participant-level permutation test as the report uses it (``significant``:
                    Westfall-Young step-down maxT family-wise p <= .05 over the terms used by >= 5
                    participants);
``permutation_bh``  the same permutation p-values with Benjamini-Hochberg (``q`` <= .05), the
                    report's FDR column (what ``significant`` was before the family-wise procedure);
``chi2_documents``  the paper's document-level chi-square (Yates), BH over every term (``q_chi2``).

Reported per cell: the family-wise rate = share of studies with at least one discovery at .05
(under the global null every discovery is false, so this is also the FDR), its Monte Carlo SE
sqrt(r (1 - r) / n) and the mean number of discoveries; for the two permutation procedures, the
studies where only one of them has a discovery (discordant pairs, the same studies). Power: a true
modality effect -- audio participants' habit weight of the reason "it thought about the user" doubled
(then renormalised), so audio participants use "user" about twice as often (and x 4) -- at the paper
size, and the share of studies in which "user" is significant (direction audio) by each test.

The generator is independent of the project's simulator (modprefs.ratings.simulate).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/justifications_null.py [--n-studies 500]
        [--n-power 200] [--n-perm 2000] [--workers 1] [--quick]

Writes benchmarks/out/justifications_null.json and .md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from modprefs.stats.tables.justifications import MODALITY_TERMS_PATH, analyze_justifications  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "justifications_null.json"
TERMS = ROOT / MODALITY_TERMS_PATH
ALPHAS = (0.1, 0.3, 1.0, math.inf)
SIZES = {"paper": (46, 48), "small": (20, 20)}
TRIALS = 20
RATE_BETA = (1.4, 2.6)  # per-participant justification rate, mean .35
N_REASONS_P = (0.4, 0.4, 0.2)
Q = 0.05
OPENERS = (
    "I preferred the first one because",
    "The second was better:",
    "Both were similar, but",
    "I chose this one since",
    "Hard to say; maybe",
)
REASONS = (
    "it thought about the user",  # the power check's effect reason (index 0)
    "it was clear",
    "it was not clear",
    "it had more detail",
    "it was too long",
    "it was very concise",
    "the tone was friendly",
    "it answered the question directly",
    "it gave concrete examples",
    "it seemed accurate",
    "it felt generic",
    "the structure was logical",
    "it was more helpful",
    "there was no real difference",
    "it covered every step",
    "it was polite and warm",
    "it explained the reasoning",
    "I agreed with its advice",
)
EFFECT_REASON, EFFECT_TERM = 0, "user"
EFFECTS = (2.0, 4.0)  # the power check: audio weight of the effect reason x 2 and x 4


def _habits(rng: np.random.Generator, alpha: float, k: int) -> np.ndarray:
    """One participant's probabilities over k items: Dirichlet(alpha), uniform when alpha is inf."""
    return np.full(k, 1.0 / k) if math.isinf(alpha) else rng.dirichlet(np.full(k, alpha))


def generate(seed: int, alpha: float, size: str, effect: float = 1.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, participants) of one study: identical conditions except the effect reason's weight x ``effect``
    for audio participants (1.0 = the global null)."""
    rng = np.random.default_rng(seed)
    trials, people = [], []
    for cond, n in zip(("audio", "text"), SIZES[size]):
        for i in range(n):
            pid = f"{cond[0]}{i:03d}"
            people.append({"participant_id": pid, "condition": cond, "passed_attention": True})
            reasons = _habits(rng, alpha, len(REASONS))
            if cond == "audio" and effect != 1.0:
                reasons[EFFECT_REASON] *= effect
                reasons /= reasons.sum()
            openers = _habits(rng, alpha, len(OPENERS))
            written = np.flatnonzero(rng.random(TRIALS) < rng.beta(*RATE_BETA)) + 1
            ks = 1 + rng.choice(3, size=written.size, p=N_REASONS_P)
            picks = rng.choice(len(REASONS), size=(written.size, 3), p=reasons)
            heads = rng.choice(len(OPENERS), size=written.size, p=openers)
            for trial, k, pick, head in zip(written, ks, picks, heads):
                text = f"{OPENERS[head]} {', and '.join(REASONS[j] for j in pick[:k])}."
                trials.append({"participant_id": pid, "trial": int(trial), "justification": text})
    return pd.DataFrame(trials), pd.DataFrame(people)


def one_study(task: tuple) -> dict:
    """Both tests on one generated study: discoveries, terms tested, seconds."""
    seed, alpha, size, effect, n_perm = task
    trials, people = generate(seed, alpha, size, effect)
    t0 = time.perf_counter()
    res = analyze_justifications(trials, people, TERMS, n_perm=n_perm, seed=seed)
    terms = res.terms.set_index("term")
    hit = EFFECT_TERM in terms.index
    return {
        "perm": res.n_significant,
        "perm_bh": res.n_significant_fdr,
        "chi2": res.n_significant_chi2,
        "tested": res.n_tested,
        "terms": len(res.terms),
        "n_perm": res.n_perm,
        "seconds": time.perf_counter() - t0,
        "effect_perm": bool(
            hit and terms.at[EFFECT_TERM, "significant"] and terms.at[EFFECT_TERM, "more_in"] == "audio"
        ),
        "effect_perm_bh": bool(hit and terms.at[EFFECT_TERM, "q"] <= Q and terms.at[EFFECT_TERM, "more_in"] == "audio"),
        "effect_chi2": bool(
            hit and terms.at[EFFECT_TERM, "q_chi2"] <= Q and terms.at[EFFECT_TERM, "more_in"] == "audio"
        ),
    }


def _rate(hits: list[bool]) -> dict:
    n = len(hits)
    r = float(np.mean(hits)) if n else float("nan")
    return {"rate": r, "mc_se": math.sqrt(r * (1 - r) / n) if n else float("nan"), "n_hits": int(sum(hits))}


def summarise(rows: list[dict], power: bool = False) -> dict:
    out = {
        "n_studies": len(rows),
        "mean_terms": float(np.mean([r["terms"] for r in rows])),
        "mean_terms_tested": float(np.mean([r["tested"] for r in rows])),
        "n_perm": int(np.max([r["n_perm"] for r in rows])),
        "seconds_per_study": float(np.mean([r["seconds"] for r in rows])),
    }
    for test, key in (("permutation", "perm"), ("permutation_bh", "perm_bh"), ("chi2_documents", "chi2")):
        if power:
            out[test] = _rate([r[f"effect_{key}"] for r in rows])
        else:
            out[test] = _rate([r[key] > 0 for r in rows]) | {"mean_discoveries": float(np.mean([r[key] for r in rows]))}
    hit = (lambda r, k: r[f"effect_{k}"]) if power else (lambda r, k: r[k] > 0)
    out["discordant"] = {
        "permutation_only": int(sum(hit(r, "perm") and not hit(r, "perm_bh") for r in rows)),
        "permutation_bh_only": int(sum(hit(r, "perm_bh") and not hit(r, "perm") for r in rows)),
    }
    return out


def _label(alpha: float) -> str:
    return "inf" if math.isinf(alpha) else f"{alpha:g}"


def run(args: argparse.Namespace) -> dict:
    cells = [(a, s, 1.0, args.n_studies) for s in SIZES for a in ALPHAS]
    cells += [(a, "paper", e, args.n_power) for e in EFFECTS for a in (0.3, 1.0, math.inf)]
    pool = get_context("spawn").Pool(args.workers) if args.workers > 1 else None
    summary, power = {}, {}
    try:
        for ci, (alpha, size, effect, n) in enumerate(cells):
            tasks = [(1_000_000 * (ci + 1) + k, alpha, size, effect, args.n_perm) for k in range(n)]
            t0 = time.perf_counter()
            rows = pool.map(one_study, tasks, chunksize=8) if pool else [one_study(t) for t in tasks]
            key = f"alpha={_label(alpha)}/{size}" + (f"/effect=x{effect:g}" if effect != 1.0 else "")
            block = summarise(rows, power=effect != 1.0) | {"wall_seconds": time.perf_counter() - t0}
            (power if effect != 1.0 else summary)[key] = block
            print(key, "power" if effect != 1.0 else "null", json.dumps(block), flush=True)
    finally:
        if pool:
            pool.close()
    return {
        "description": __doc__.split("\n\n")[0],
        "settings": {
            "alphas": [_label(a) for a in ALPHAS],
            "sizes": {k: list(v) for k, v in SIZES.items()},
            "trials": TRIALS,
            "justification_rate": "Beta(1.4, 2.6) per participant (mean .35)",
            "reasons": len(REASONS),
            "openers": len(OPENERS),
            "n_perm_requested": args.n_perm,
            "q": Q,
            "power_effect": "audio participants' habit weight of 'it thought about the user' x 2 or x 4",
        },
        "summary": summary,
        "power": power,
    }


def markdown(result: dict) -> str:
    s = result["settings"]
    lines = [
        "# Justification terms: null size and power (benchmarks/validity/justifications_null.py)",
        "",
        "Identical conditions; each participant a Dirichlet(alpha) habit over "
        f"{s['reasons']} reasons and {s['openers']} openers (alpha = inf: independent documents); "
        f"{s['trials']} trials, justification rate {s['justification_rate']}; sizes {s['sizes']} "
        "(audio, text participants). Family-wise rate = share of studies with >= 1 discovery at "
        f"{s['q']}, with its Monte Carlo SE. `permutation`: the participant-level permutation test as the "
        "analysis reports it (`significant`: Westfall-Young step-down maxT, family-wise); `permutation BH`: "
        "the same p-values with Benjamini-Hochberg (the report's `q`); discordant: studies with a discovery "
        "by only one of the two (family-wise only : BH only); `chi2_documents`: the paper's document-level "
        "chi-square.",
        "",
        "| cell | studies | terms (tested) | permutations | permutation (reported): rate ± MC SE | "
        "permutation BH: rate ± MC SE | discordant | chi2 documents: rate ± MC SE | s / study |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, b in result["summary"].items():
        p, h, c, d = b["permutation"], b["permutation_bh"], b["chi2_documents"], b["discordant"]
        lines.append(
            f"| {key} | {b['n_studies']} | {b['mean_terms']:.1f} ({b['mean_terms_tested']:.1f}) | {b['n_perm']} | "
            f"{p['rate']:.3f} ± {p['mc_se']:.3f} | {h['rate']:.3f} ± {h['mc_se']:.3f} | "
            f"{d['permutation_only']}:{d['permutation_bh_only']} | {c['rate']:.3f} ± {c['mc_se']:.3f} | "
            f"{b['seconds_per_study']:.2f} |"
        )
    lines += [
        "",
        f"Power ({s['power_effect']}; paper size): share of studies with 'user' significant, direction audio.",
        "",
        "| cell | studies | permutation (reported) | permutation BH | discordant | "
        "chi2 documents (invalid under habits) |",
        "|---|---|---|---|---|---|",
    ]
    for key, b in result["power"].items():
        p, h, c, d = b["permutation"], b["permutation_bh"], b["chi2_documents"], b["discordant"]
        lines.append(
            f"| {key} | {b['n_studies']} | {p['rate']:.3f} ± {p['mc_se']:.3f} | {h['rate']:.3f} ± {h['mc_se']:.3f} | "
            f"{d['permutation_only']}:{d['permutation_bh_only']} | {c['rate']:.3f} ± {c['mc_se']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-studies", type=int, default=500)
    parser.add_argument("--n-power", type=int, default=200)
    parser.add_argument("--n-perm", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="20 studies per cell (a smoke run; writes nothing)")
    args = parser.parse_args()
    if args.quick:
        args.n_studies = args.n_power = 20
    t0 = time.perf_counter()
    result = run(args) | {"wall_seconds": time.perf_counter() - t0}
    if args.quick:
        return
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    OUT.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(f"wrote {OUT} and {OUT.with_suffix('.md')}")


if __name__ == "__main__":
    main()
