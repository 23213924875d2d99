"""Priors: the simulator parameters a plan assumes, with their uncertainty (pessimistic / central / optimistic).

The answer of a plan is driven by its priors -- above all by the single-rater reliability
ICC(2,1) of each modality. Two sources:

* **the paper** (:func:`paper_priors`): :class:`~modprefs.ratings.simulation.params.SimulationParams`'
  defaults, calibrated to the paper (Tables 1-4);
* **a pilot** (:mod:`modprefs.plan.pilot`): the simulator refitted to a pilot's ratings.

Uncertainty is that of the source study's estimates, by a parametric bootstrap: the source's
design (the paper's 100 prompts, 53 recruited raters per condition, 20 trials; or the pilot's own
layout) is simulated ``n_boot`` times at the central parameters and refitted. The pessimistic /
optimistic scenario moves each condition's ICC(2,1) to the basic-bootstrap bound (estimate minus
(q_hi - median), resp. plus (median - q_lo); quantiles ``quantiles``, default 10 % / 90 %) by
rescaling the latent clip variance (:func:`icc_curve` maps it to the fitted ICC); attrition rates
move to their Jeffreys-interval bounds and minutes per trial to the bounds of their mean.

The rating scale (``scale``, config ``study.scale``): the parameters stay in the paper's 1..100 units, the
simulated ratings (and so every fitted ICC, curve and bootstrap) are on the study's scale
(:mod:`modprefs.plan.fastsim`); a coarse scale such as 1..5 loses reliability to its rounding, which the
ICC curves include. :attr:`Priors.scale` carries it to the plan's simulations.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from modprefs.plan.analysis import condition_record
from modprefs.plan.errors import PlanInputError
from modprefs.plan.fastsim import simulate_study
from modprefs.plan.layout import Layout, balanced_layout, prism_like_lengths
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.study.terms import CONDITIONS

SCENARIOS: tuple[str, ...] = ("pessimistic", "central", "optimistic")
#: the paper's recruitment (§3.3, Table 3): recruited per condition, failures, non-completers among passers
PAPER_DESIGN = {"prompts": 100, "recruited": 53, "trials": 20}
PAPER_COUNTS = {
    "audio": {"recruited": 53, "failed": 7, "passed": 46, "incomplete": 2, "n_time": 46},
    "text": {"recruited": 53, "failed": 5, "passed": 48, "incomplete": 4, "n_time": 48},
}
CURVE_MULTIPLIERS = np.array(
    [0.01, 0.03, 0.05, 0.1, 0.15, 0.25, 0.4, 0.6, 0.8, 1.0, 1.25, 1.6, 2.2, 3.0, 4.5, 7.0, 12.0]
)


@dataclass
class IccCurve:
    """Expected fitted ICC(2,1) of one condition as a function of the latent clip-variance multiplier."""

    condition: str
    multipliers: np.ndarray
    icc: np.ndarray

    def __call__(self, m: float) -> float:
        return float(np.interp(math.log(m), np.log(self.multipliers), self.icc))

    def inverse(self, icc: float, argument: str) -> float:
        """The multiplier giving ``icc``; PlanInputError naming ``argument`` when out of reach."""
        lo, hi = float(self.icc[0]), float(self.icc[-1])
        if not lo <= icc <= hi:
            raise PlanInputError(
                f"{argument}: an expected {self.condition} ICC(2,1) of {icc:.3f} is outside what "
                f"the simulator reaches under these priors ({lo:.3f} to {hi:.3f})"
            )
        return float(math.exp(np.interp(icc, self.icc, np.log(self.multipliers))))


@dataclass
class Priors:
    """A plan's priors: scenario parameters, ICC curves and the table reporting them with uncertainty."""

    source: str
    scenarios: dict[str, SimulationParams]
    curves: dict[str, IccCurve]
    table: pd.DataFrame
    lengths_pool: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    scale: RatingScale = PAPER_SCALE  # the rating scale the simulated studies are on

    @property
    def central(self) -> SimulationParams:
        return self.scenarios["central"]


def _replaced(params: SimulationParams, field: str, value: float) -> SimulationParams:
    """``params`` with one field (named at run time) set to ``value``."""
    changes: dict[str, Any] = {field: value}
    return dataclasses.replace(params, **changes)


def scale_clip_variance(p: SimulationParams, condition: str, multiplier: float) -> SimulationParams:
    """``p`` with condition's latent clip variance multiplied by ``multiplier``."""
    name = f"var_clip_{condition}"
    return dataclasses.replace(p, **{name: getattr(p, name) * multiplier})


def icc_curve(
    p: SimulationParams,
    condition: str,
    seed: int,
    reps: int = 6,
    multipliers: np.ndarray = CURVE_MULTIPLIERS,
    scale: RatingScale = PAPER_SCALE,
) -> IccCurve:
    """Mean fitted ICC(2,1) over ``reps`` large studies (300 prompts, 60 raters, 20 trials) per multiplier,
    their ratings on ``scale``.

    The same random numbers at every multiplier (common random numbers), so the curve is smooth;
    it is made non-decreasing (the ICC rises with the clip variance).
    """
    icc = np.zeros(len(multipliers))
    for j, m in enumerate(multipliers):
        q = scale_clip_variance(p, condition, float(m))
        values = []
        for r in range(reps):
            rng = np.random.default_rng([seed, 0xC0C, r])
            layout = balanced_layout(300, 60, 20, (condition,), rng)
            study = simulate_study(q, layout, prism_like_lengths(300, rng), rng, attention=False, scale=scale)
            values.append(condition_record(study.ratings[condition])[0]["icc1"])
        icc[j] = np.nanmean(values)
    return IccCurve(condition, np.asarray(multipliers, float), np.maximum.accumulate(icc))


def jeffreys(successes: float, n: float, q: float) -> float:
    """Quantile ``q`` of the Jeffreys Beta(x + 1/2, n - x + 1/2) posterior of a rate."""
    return float(stats.beta.ppf(q, successes + 0.5, n - successes + 0.5))


def bootstrap_iccs(
    p: SimulationParams,
    layout: Layout,
    n_boot: int,
    seed: int,
    lengths: np.ndarray | None = None,
    scale: RatingScale = PAPER_SCALE,
) -> dict[str, np.ndarray]:
    """Fitted ICC(2,1) per condition over ``n_boot`` simulated studies of ``layout`` (attention failures
    are in the layout's participants already: everyone in it passes), their ratings on ``scale``."""
    out: dict[str, list[float]] = {c: [] for c in layout.conditions}
    for b in range(n_boot):
        rng = np.random.default_rng([seed, 0xB0, b])
        ln = lengths if lengths is not None else prism_like_lengths(layout.n_prompts, rng)
        study = simulate_study(p, layout, ln, rng, attention=False, scale=scale)
        for c, r in study.ratings.items():
            out[c].append(condition_record(r)[0]["icc1"])
    return {c: np.asarray(v) for c, v in out.items()}


def build_scenarios(
    central: SimulationParams,
    curves: dict[str, IccCurve],
    estimate: dict[str, float],
    boot: dict[str, np.ndarray],
    rates: dict[str, dict[str, tuple[float, float, float]]],
    minutes: dict[str, tuple[float, float, float]],
    quantiles: tuple[float, float],
) -> tuple[dict[str, SimulationParams], pd.DataFrame]:
    """Pessimistic / central / optimistic parameters and the priors table.

    Args:
        central: the central parameters.
        curves: per condition :class:`IccCurve` of ``central``.
        estimate: per condition the source's ICC(2,1) estimate (central).
        boot: per condition bootstrap ICC(2,1) estimates.
        rates: {"p_fail_attention" | "p_incomplete": {condition: (central, lo, hi)}}.
        minutes: {condition: (central, lo, hi)} minutes per trial.
        quantiles: (q_lo, q_hi) of the scenarios.
    """
    q_lo, q_hi = quantiles
    rows = []
    scen = {s: central for s in SCENARIOS}
    for c, curve in curves.items():
        b = boot[c][np.isfinite(boot[c])]
        med, lo, hi = (float(np.quantile(b, q)) for q in (0.5, q_lo, q_hi))
        est = estimate[c]
        base = curve(1.0)
        bounds = {"central": est}
        # move the central's expected ICC by the bootstrap's spread; at the curve's ends the scenario
        # stops there (a reliability the simulator cannot produce with these other parameters)
        for s, shift in (("pessimistic", -(hi - med)), ("optimistic", med - lo)):
            target = float(np.clip(base + shift, curve.icc[0], curve.icc[-1]))
            scen[s] = scale_clip_variance(scen[s], c, curve.inverse(target, "priors"))
            bounds[s] = est + target - base
        rows.append(
            {
                "quantity": "ICC(2,1)",
                "condition": c,
                "central": est,
                "pessimistic": bounds["pessimistic"],
                "optimistic": bounds["optimistic"],
                "bootstrap_sd": float(np.std(b, ddof=1)),
                "method": f"parametric bootstrap of the source design ({len(b)} studies), basic {q_lo:.0%}-{q_hi:.0%}",
            }
        )
    for name, label, worse in (
        ("p_fail_attention", "attention-check failure rate", "hi"),
        ("p_incomplete", "dropout rate (passed, did not finish)", "hi"),
    ):
        for c, (mid, lo, hi) in rates.get(name, {}).items():
            pess, opt = (hi, lo) if worse == "hi" else (lo, hi)
            scen["pessimistic"] = _replaced(scen["pessimistic"], f"{name}_{c}", pess)
            scen["optimistic"] = _replaced(scen["optimistic"], f"{name}_{c}", opt)
            rows.append(
                {
                    "quantity": label,
                    "condition": c,
                    "central": mid,
                    "pessimistic": pess,
                    "optimistic": opt,
                    "bootstrap_sd": math.nan,
                    "method": f"Jeffreys interval {q_lo:.0%}-{q_hi:.0%}",
                }
            )
    for c, (mid, lo, hi) in minutes.items():
        scen["pessimistic"] = _replaced(scen["pessimistic"], f"trial_time_mean_{c}", hi * 60)
        scen["optimistic"] = _replaced(scen["optimistic"], f"trial_time_mean_{c}", lo * 60)
        rows.append(
            {
                "quantity": "minutes per trial",
                "condition": c,
                "central": mid,
                "pessimistic": hi,
                "optimistic": lo,
                "bootstrap_sd": math.nan,
                "method": f"normal interval of the mean {q_lo:.0%}-{q_hi:.0%}",
            }
        )
    return scen, pd.DataFrame(rows)


def priors_for_source(
    central: SimulationParams,
    layout: Layout,
    source: str,
    seed: int = 1,
    n_boot: int = 60,
    quantiles: tuple[float, float] = (0.1, 0.9),
    rates: dict[str, dict[str, tuple[float, float, float]]] | None = None,
    minutes: dict[str, tuple[float, float, float]] | None = None,
    notes: list[str] | None = None,
    scale: RatingScale = PAPER_SCALE,
) -> Priors:
    """Priors centred on ``central`` with the ICC uncertainty of a study laid out as ``layout``.

    ``rates`` / ``minutes``: the attrition and timing intervals (:func:`build_scenarios`); none = fixed.
    ``scale``: the rating scale of the simulated studies.
    """
    curves = {c: icc_curve(central, c, seed, scale=scale) for c in CONDITIONS}
    boot = bootstrap_iccs(central, layout, n_boot, seed, scale=scale)
    # the central's expectation at the source's design
    estimate = {c: float(np.nanmean(boot[c])) for c in boot}
    scen, table = build_scenarios(
        central, {c: curves[c] for c in boot}, estimate, boot, rates or {}, minutes or {}, quantiles
    )
    return Priors(source=source, scenarios=scen, curves=curves, table=table, notes=list(notes or []), scale=scale)


def paper_priors(
    seed: int = 1,
    n_boot: int = 60,
    quantiles: tuple[float, float] = (0.1, 0.9),
    params: SimulationParams | None = None,
    scale: RatingScale = PAPER_SCALE,
) -> Priors:
    """The paper's priors: :class:`SimulationParams` defaults, with the uncertainty of a paper-size study;
    the simulated ratings on ``scale`` (the paper's 1..100 by default)."""
    central = params if params is not None else SimulationParams()
    rng = np.random.default_rng([seed, 0x9A9E])
    layout = balanced_layout(
        PAPER_DESIGN["prompts"], PAPER_DESIGN["recruited"], PAPER_DESIGN["trials"], CONDITIONS, rng
    )
    # the paper's analysed panel: its passers (46 audio, 48 text) did the trials
    layout = _keep_participants(layout, {c: PAPER_COUNTS[c]["passed"] for c in CONDITIONS})
    q_lo, q_hi = quantiles
    rates: dict[str, dict[str, tuple[float, float, float]]] = {"p_fail_attention": {}, "p_incomplete": {}}
    minutes = {}
    for c, k in PAPER_COUNTS.items():
        rates["p_fail_attention"][c] = (
            central.by_condition("p_fail_attention", c),
            jeffreys(k["failed"], k["recruited"], q_lo),
            jeffreys(k["failed"], k["recruited"], q_hi),
        )
        rates["p_incomplete"][c] = (
            central.by_condition("p_incomplete", c),
            jeffreys(k["incomplete"], k["passed"], q_lo),
            jeffreys(k["incomplete"], k["passed"], q_hi),
        )
        m = central.by_condition("trial_time_mean", c) / 60
        se = central.by_condition("trial_time_sd", c) / 60 / math.sqrt(k["n_time"])
        minutes[c] = (m, m + stats.norm.ppf(q_lo) * se, m + stats.norm.ppf(q_hi) * se)
    return priors_for_source(
        central,
        layout,
        "paper (SimulationParams defaults, calibrated to the paper's Tables 1-4)",
        seed,
        n_boot,
        quantiles,
        rates,
        minutes,
        [
            "ICC(2,1) uncertainty: a paper-size study (100 prompts, 46 audio / 48 text analysed raters, 20 trials) "
            "simulated at the priors and refitted; the paper reports ICC(2,1) .333 audio / .295 text."
        ],
        scale,
    )


def _keep_participants(layout: Layout, n: dict[str, int]) -> Layout:
    """The layout restricted to the first ``n[c]`` participants of each condition."""
    out = {}
    for c, lay in layout.conditions.items():
        keep = lay.participant < n[c]
        out[c] = dataclasses.replace(
            lay,
            participant=lay.participant[keep],
            prompt=lay.prompt[keep],
            trial=lay.trial[keep],
            first=lay.first[keep],
            n_assigned=lay.n_assigned[: n[c]],
        )
    return dataclasses.replace(layout, conditions=out)


def icc_diff_params(scenario: SimulationParams, priors: Priors, delta: float) -> SimulationParams:
    """The scenario with audio's clip variance set so that E[ICC(2,1) audio] - E[ICC(2,1) text] = ``delta``.

    Text keeps the scenario's reliability; Raises PlanInputError (naming --target-power-icc-diff)
    when audio cannot reach it.
    """
    central = priors.central
    m_text = scenario.var_clip_text / central.var_clip_text
    target = priors.curves["text"](m_text) + delta
    m_audio = priors.curves["audio"].inverse(target, "--target-power-icc-diff")
    return dataclasses.replace(scenario, var_clip_audio=central.var_clip_audio * m_audio)
