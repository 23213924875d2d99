"""A stopping rule declared before a study, and the interval that keeps its coverage after the stop.

The lab declares (config ``study.stopping``, stored by ``modprefs app load``): the rule (``lower_bound``: stop once
the lower bound of ICC(2,k) reaches ``target_icc`` in every condition; ``half_width``: once the interval of
ICC(2,k) is at most ``half_width`` wide on each side in every condition), the participants per condition before the
first look (``min_participants``), between looks (``look_every``) and at most (``max_participants``), and the error
``alpha`` of the reported interval.

Why a correction: looking at the interval after every few participants and stopping the first time it "looks good"
picks the look where the interval happened to be optimistic, so the interval reported at the stop covers the true
ICC less often than its nominal level (the more looks, the worse). Correction (Bonferroni over the declared looks,
an alpha spending of alpha / L per look): the looks are at most ``L = floor((max - min) / look_every) + 1``
(:func:`n_looks`), each computes the interval at level ``1 - alpha / L`` (:func:`look_level`). By the union bound,
P(some look's interval misses) <= sum over looks of alpha / L = alpha, whatever the data decide about stopping,
so the interval reported at the stop, which is one of them, covers with probability >= 1 - alpha. Conservative
(the looks' intervals are positively correlated, so the true miss rate is below alpha) and free of assumptions
on the interval beyond its own per-look coverage; a group-sequential boundary (O'Brien & Fleming 1979; the
Lan-DeMets spending function, Lan & DeMets 1983) spends less alpha per look but needs the joint distribution of the
looks' estimates. Reference: Jennison, C. & Turnbull, B. W. (2000). Group Sequential Methods with Applications to
Clinical Trials, ch. 9 (repeated confidence intervals; Bonferroni as their conservative bound).

Units: participants per condition (analysable: passed the attention check); ICC on its 0..1 scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

RULES = ("off", "lower_bound", "half_width")
#: ``study.stopping``'s keys and defaults (workflow/schemas/config.schema.yaml has the same)
STOPPING_DEFAULTS: dict[str, Any] = {
    "rule": "off",
    "target_icc": 0.75,
    "half_width": 0.1,
    "min_participants": 10,
    "max_participants": 53,
    "look_every": 5,
    "alpha": 0.05,
    "update_every_trials": 20,
}


class StoppingRuleError(ValueError):
    """A ``study.stopping`` key with a wrong value (the message names the file and the key)."""


@dataclass(frozen=True)
class StoppingRule:
    """The declared rule (see the module docstring); ``update_every_trials``: the live statistics' cadence."""

    rule: str = "off"
    target_icc: float = 0.75
    half_width: float = 0.1
    min_participants: int = 10
    max_participants: int = 53
    look_every: int = 5
    alpha: float = 0.05
    update_every_trials: int = 20

    @property
    def active(self) -> bool:
        return self.rule != "off"

    def as_config(self) -> dict[str, Any]:
        return asdict(self)


def n_looks(rule: StoppingRule) -> int:
    """The most looks the rule can take: at ``min_participants``, then every ``look_every`` up to ``max``."""
    return (rule.max_participants - rule.min_participants) // rule.look_every + 1


def look_level(rule: StoppingRule) -> float:
    """The two-sided level of each look's interval: ``1 - alpha / n_looks`` (Bonferroni).

    Examples
    --------
    Looks at 10, 20, 30 and 40 participants: each interval at 1 - .05 / 4:

    >>> from modprefs.stats.sequential import StoppingRule, look_level, n_looks
    >>> rule = StoppingRule(rule="lower_bound", min_participants=10, max_participants=40, look_every=10)
    >>> n_looks(rule), look_level(rule)
    (4, 0.9875)
    """
    return 1.0 - rule.alpha / n_looks(rule)


def look_point(rule: StoppingRule, index: int) -> int:
    """The participants per condition at which look ``index`` (0-based) is due."""
    return rule.min_participants + index * rule.look_every


def look_due(rule: StoppingRule, n_participants: int, looks_done: int) -> bool:
    """Whether the next look (number ``looks_done``) is due with ``n_participants`` per condition (the fewest of
    the conditions): it is once that count reaches its point, and never beyond :func:`n_looks` looks."""
    return rule.active and looks_done < n_looks(rule) and n_participants >= look_point(rule, looks_done)


def condition_meets(rule: StoppingRule, icc_2_k_lo: float, icc_2_k_hi: float) -> bool:
    """Whether one condition's ICC(2,k) interval (at :func:`look_level`) meets the rule's target.

    Examples
    --------
    >>> from modprefs.stats.sequential import StoppingRule, condition_meets
    >>> rule = StoppingRule(rule="lower_bound", target_icc=0.75)
    >>> condition_meets(rule, 0.78, 0.92), condition_meets(rule, 0.70, 0.90)
    (True, False)
    >>> condition_meets(StoppingRule(rule="half_width", half_width=0.1), 0.72, 0.90)  # half-width .09
    True
    """
    if not (math.isfinite(icc_2_k_lo) and math.isfinite(icc_2_k_hi)):
        return False
    if rule.rule == "lower_bound":
        return icc_2_k_lo >= rule.target_icc
    if rule.rule == "half_width":
        return (icc_2_k_hi - icc_2_k_lo) / 2.0 <= rule.half_width
    return False


def decide(
    rule: StoppingRule, intervals: Mapping[str, tuple[float, float]], n_participants: int, look_index: int
) -> str:
    """Look ``look_index``'s (0-based) decision over every condition's ICC(2,k) interval ``{condition: (lo, hi)}``
    at :func:`look_level`: ``met`` (every condition meets the target), ``max`` (not met, and ``max_participants``
    reached or this was the last look) or ``continue``."""
    if intervals and all(condition_meets(rule, lo, hi) for lo, hi in intervals.values()):
        return "met"
    if n_participants >= rule.max_participants or look_index >= n_looks(rule) - 1:
        return "max"
    return "continue"


def _number(raw: Any, key: str, where: str, lo: float, hi: float, integer: bool = False) -> Any:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or (integer and not float(raw).is_integer()):
        kind = "a whole number" if integer else "a number"
        raise StoppingRuleError(f"{where}: study.stopping.{key} is {raw!r}, not {kind}")
    if not lo <= raw <= hi or not math.isfinite(raw):
        raise StoppingRuleError(f"{where}: study.stopping.{key} = {raw} is not in {lo:g}..{hi:g}")
    return int(raw) if integer else float(raw)


def rule_from_config(section: Mapping[str, Any] | None, where: str = "config") -> StoppingRule:
    """The rule of a ``study.stopping`` mapping (None: off). Refuses an unknown key or a bad value with a
    :class:`StoppingRuleError` naming ``where`` (the file) and the key."""
    section = dict(section or {})
    unknown = sorted(set(section) - set(STOPPING_DEFAULTS))
    if unknown:
        raise StoppingRuleError(
            f"{where}: unknown key(s) study.stopping.{unknown} (known: {sorted(STOPPING_DEFAULTS)})"
        )
    if section.get("rule") is False:  # YAML 1.1 reads an unquoted `off` as false
        section["rule"] = "off"
    values = {**STOPPING_DEFAULTS, **section}
    if values["rule"] not in RULES:
        raise StoppingRuleError(f"{where}: study.stopping.rule is {values['rule']!r}, not one of {', '.join(RULES)}")
    rule = StoppingRule(
        rule=str(values["rule"]),
        target_icc=_number(values["target_icc"], "target_icc", where, 1e-9, 1 - 1e-9),
        half_width=_number(values["half_width"], "half_width", where, 1e-9, 1.0),
        min_participants=_number(values["min_participants"], "min_participants", where, 3, 10**6, True),
        max_participants=_number(values["max_participants"], "max_participants", where, 3, 10**6, True),
        look_every=_number(values["look_every"], "look_every", where, 1, 10**6, True),
        alpha=_number(values["alpha"], "alpha", where, 1e-6, 0.5),
        update_every_trials=_number(values["update_every_trials"], "update_every_trials", where, 1, 10**6, True),
    )
    if rule.max_participants < rule.min_participants:
        raise StoppingRuleError(
            f"{where}: study.stopping.max_participants ({rule.max_participants}) is below min_participants "
            f"({rule.min_participants})"
        )
    return rule
