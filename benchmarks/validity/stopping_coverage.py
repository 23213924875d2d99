"""Coverage of the interval reported when a declared stopping rule stops a study (issue #54), and participants saved.

A study recruits raters one look at a time (``min``, ``min + every``, ..., ``max`` raters, every rater rating every
item: a complete single-stimulus design, where the statistics' ``auto`` interval is McGraw & Wong's F interval with
the robust df, :func:`modprefs.stats.reliability.icc_f_interval.icc_a1_interval` with
:func:`~modprefs.stats.reliability.icc_f_interval.robust_degrees`). At each look the rule
(:mod:`modprefs.stats.sequential`: ``lower_bound`` = ICC(2,k)'s lower bound >= target, ``half_width`` = its interval
at most +-half_width) is checked on the interval at either

* ``naive``: the nominal 95 % at every look (what a lab watching a dashboard would do), or
* ``bonferroni``: 1 - alpha / looks (:func:`~modprefs.stats.sequential.look_level`, what the app does);

the study stops at the first look that meets the rule (else at ``max``). Reported per cell: the coverage of the
interval reported at the stop (does it contain the TRUE ICC(2,k) at the stop's k? Clopper-Pearson 95 % interval of
the coverage), the share of studies stopped before ``max``, the mean raters at the stop and the raters saved against
the fixed design of ``max`` raters, and the fixed design's own coverage (one 95 % interval at ``max``).

Generating models (items i, raters p; variances sum to 1; written here, independent of the project's simulator)::

    gaussian             y = a_i + v_p + e       all normal (the F interval's own model)
    rater_heterogeneity  y = a_i + v_p + s_p e   s_p a rater's own noise scale (lognormal, E[s^2] = 1, CV 0.8)
    heavy_tailed         y = a_i + v_p + e       a, v, e Student t(4) scaled to their variances

True ICC(2,1) = var_a / (var_a + var_v + var_e) in every model (E[s_p^2] = 1); ICC(2,k) its Spearman-Brown image.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/stopping_coverage.py [--n-studies 2000] [--seed 54]

Writes benchmarks/out/stopping_coverage.json and stopping_coverage.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from modprefs.stats.reliability.icc_f_interval import icc_a1_interval, mean_squares, robust_degrees  # noqa: E402
from modprefs.stats.reliability.rater_scaling import icc_k  # noqa: E402
from modprefs.stats.sequential import StoppingRule, condition_meets, look_level, look_point, n_looks  # noqa: E402

OUT = ROOT / "benchmarks" / "out"
MODELS = ("gaussian", "rater_heterogeneity", "heavy_tailed")
N_ITEMS = 30
VARIANCES = {"items": 0.3, "raters": 0.1, "resid": 0.6}  # ICC(2,1) = .30
RULES = {
    "lower_bound_0.8": StoppingRule(
        rule="lower_bound", target_icc=0.8, min_participants=5, max_participants=40, look_every=5
    ),
    "half_width_0.1": StoppingRule(
        rule="half_width", half_width=0.1, min_participants=5, max_participants=40, look_every=5
    ),
}


def _t(rng: np.random.Generator, var: float, size: tuple[int, ...] | int, df: float = 4.0) -> np.ndarray:
    """Student t(df) draws scaled to variance ``var``."""
    return rng.standard_t(df, size) * math.sqrt(var * (df - 2) / df)


def ratings(model: str, n_raters: int, rng: np.random.Generator) -> np.ndarray:
    """An (items x raters) table of one study under ``model``."""
    va, vv, ve = VARIANCES["items"], VARIANCES["raters"], VARIANCES["resid"]
    shape = (N_ITEMS, n_raters)
    if model == "heavy_tailed":
        a, v, e = _t(rng, va, N_ITEMS), _t(rng, vv, n_raters), _t(rng, ve, shape)
    else:
        a = rng.normal(0, math.sqrt(va), N_ITEMS)
        v = rng.normal(0, math.sqrt(vv), n_raters)
        e = rng.normal(0, math.sqrt(ve), shape)
    if model == "rater_heterogeneity":
        cv = 0.8
        sigma = math.sqrt(math.log(1 + cv**2))
        s2 = rng.lognormal(-(sigma**2) / 2, sigma, n_raters)  # E[s^2] = 1
        e = e * np.sqrt(s2)[None, :]
    return a[:, None] + v[None, :] + e


def interval_k(table: np.ndarray, level: float) -> tuple[float, float]:
    """ICC(2,k)'s interval at ``level`` for the table's k raters as ``stats.icc_ci_method: auto`` computes it on a
    complete single-stimulus design: the F interval with the robust df (:func:`robust_degrees`), ICC(2,1)'s bounds
    truncated to [0, 1] and mapped by Spearman-Brown."""
    lo, hi, _ = icc_a1_interval(mean_squares(table), level, robust_degrees(table))
    lo, hi = min(max(lo, 0.0), 1.0), min(max(hi, 0.0), 1.0)
    k = table.shape[1]
    return float(icc_k(lo, k)), float(icc_k(hi, k))


@dataclass
class Stop:
    n: int
    covered: bool
    early: bool


def run_study(table: np.ndarray, rule: StoppingRule, level: float, true1: float) -> Stop:
    """Apply ``rule`` with every look's interval at ``level`` to the study whose raters are ``table``'s columns."""
    for i in range(n_looks(rule)):
        n = look_point(rule, i)
        lo, hi = interval_k(table[:, :n], level)
        if condition_meets(rule, lo, hi) or i == n_looks(rule) - 1:
            truth = float(icc_k(true1, n))
            return Stop(n, bool(lo <= truth <= hi), condition_meets(rule, lo, hi) and n < rule.max_participants)
    raise AssertionError("unreachable: the last look always stops")


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    lo = float(stats.beta.ppf(0.025, hits, n - hits + 1)) if hits > 0 else 0.0
    hi = float(stats.beta.ppf(0.975, hits + 1, n - hits)) if hits < n else 1.0
    return lo, hi


def cell(model: str, rule_name: str, n_studies: int, seed: int) -> dict:
    """One model x rule: both corrections on the same simulated studies."""
    rule = RULES[rule_name]
    rng = np.random.default_rng([seed, MODELS.index(model), list(RULES).index(rule_name)])
    true1 = VARIANCES["items"] / sum(VARIANCES.values())
    stops: dict[str, list[Stop]] = {"naive": [], "bonferroni": []}
    fixed_hits = 0
    for _ in range(n_studies):
        table = ratings(model, rule.max_participants, rng)
        stops["naive"].append(run_study(table, rule, 0.95, true1))
        stops["bonferroni"].append(run_study(table, rule, look_level(rule), true1))
        lo, hi = interval_k(table, 0.95)
        fixed_hits += lo <= float(icc_k(true1, rule.max_participants)) <= hi
    out: dict = {"model": model, "rule": rule_name, **rule.as_config(), "n_studies": n_studies}
    out |= {"n_looks": n_looks(rule), "look_level": look_level(rule), "true_icc_2_1": true1}
    for name, got in stops.items():
        hits = sum(s.covered for s in got)
        mean_n = float(np.mean([s.n for s in got]))
        out[name] = {
            "coverage": hits / n_studies,
            "coverage_ci": clopper_pearson(hits, n_studies),
            "stopped_early": float(np.mean([s.early for s in got])),
            "mean_raters_at_stop": mean_n,
            "raters_saved_vs_fixed": rule.max_participants - mean_n,
        }
    out["fixed"] = {"raters": rule.max_participants, "coverage": fixed_hits / n_studies}
    return out


def markdown(cells: list[dict]) -> str:
    lines = [
        "# Coverage of the interval reported at the stop (issue #54)",
        "",
        f"{N_ITEMS} items, every rater rates every item (the F interval, robust df); "
        f"ICC(2,1) = {cells[0]['true_icc_2_1']:.2f};",
        "looks at 5, 10, ..., 40 raters (8 looks); nominal 95 %; Bonferroni: each look at 1 - .05 / 8 = 99.375 %.",
        "Coverage of the TRUE ICC(2,k) at the stop's k (Clopper-Pearson 95 % interval); saved = 40 - mean raters at",
        "the stop (the fixed design: 40 raters, one 95 % interval).",
        "",
        "| model | rule | naive coverage | Bonferroni coverage | stopped early | mean raters | saved "
        "| fixed coverage |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        nv, bf = c["naive"], c["bonferroni"]
        lines.append(
            f"| {c['model']} | {c['rule']} | {nv['coverage']:.3f} [{nv['coverage_ci'][0]:.3f}, "
            f"{nv['coverage_ci'][1]:.3f}] | {bf['coverage']:.3f} [{bf['coverage_ci'][0]:.3f}, "
            f"{bf['coverage_ci'][1]:.3f}] | {bf['stopped_early']:.2f} | {bf['mean_raters_at_stop']:.1f} | "
            f"{bf['raters_saved_vs_fixed']:.1f} | {c['fixed']['coverage']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-studies", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=54)
    args = ap.parse_args()
    cells = [cell(m, r, args.n_studies, args.seed) for m in MODELS for r in RULES]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "stopping_coverage.json").write_text(json.dumps({"cells": cells}, indent=2) + "\n", encoding="utf-8")
    (OUT / "stopping_coverage.md").write_text(markdown(cells), encoding="utf-8")
    print(markdown(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
