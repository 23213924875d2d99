"""The planner's inputs: the design grid, the targets and the costs, each checked with errors naming the argument.

A :class:`Design` is one study a lab could run: ``prompts`` prompts (two responses each),
``raters`` analysable raters per condition (participants who pass the attention check; those who
fail are replaced, :mod:`modprefs.plan.costs`), ``trials`` rated trials per participant (distinct
prompts, so at most ``prompts``) and the conditions run. Grid arguments are lists ("10,20,40") or
inclusive ranges ("10:40:10").
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from modprefs.plan.errors import PlanInputError
from modprefs.study.terms import CONDITIONS

CONDITION_CHOICES = {"both": CONDITIONS, "audio": ("audio",), "text": ("text",)}
MAX_DESIGNS = 400


@dataclass(frozen=True, order=True)
class Design:
    """One study design (see the module docstring)."""

    prompts: int
    raters: int
    trials: int
    conditions: tuple[str, ...] = CONDITIONS

    @property
    def ratings_per_clip(self) -> float:
        """Planned raters per clip and condition, k = raters * trials / prompts (before dropouts)."""
        return self.raters * self.trials / self.prompts

    def label(self) -> str:
        return f"P{self.prompts}-R{self.raters}-T{self.trials}-{'+'.join(self.conditions)}"


def parse_int_list(text: str, argument: str, minimum: int = 1) -> list[int]:
    """ "10,20,40" or "10:40:10" (inclusive) -> sorted distinct integers >= ``minimum``; errors name ``argument``."""
    values: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            bits = [int(b) for b in part.split(":")]
        except ValueError:
            raise PlanInputError(f"{argument}: {part!r} is not an integer or a start:stop[:step] range") from None
        if len(bits) == 1:
            values.append(bits[0])
            continue
        if len(bits) > 3:
            raise PlanInputError(f"{argument}: {part!r} is not an integer or a start:stop[:step] range")
        start, stop, step = bits[0], bits[1], bits[2] if len(bits) == 3 else 1
        if step <= 0 or stop < start:
            raise PlanInputError(f"{argument}: range {part!r} needs start <= stop and a positive step")
        values.extend(range(start, stop + 1, step))
    if not values:
        raise PlanInputError(f"{argument}: no values given")
    low = [v for v in values if v < minimum]
    if low:
        raise PlanInputError(f"{argument}: {low[0]} is below the minimum {minimum}")
    return sorted(set(values))


def design_grid(prompts: list[int], raters: list[int], trials: list[int], conditions: str = "both") -> list[Design]:
    """Every combination of the grid's values, checked.

    Raises:
        PlanInputError: unknown ``--conditions``; a trials value above a prompts value (a participant
            rates distinct prompts); a design leaving clips with fewer than 2 ratings per condition
            (raters * trials < 2 * prompts: no ICC); more than :data:`MAX_DESIGNS` designs.
    """
    if conditions not in CONDITION_CHOICES:
        raise PlanInputError(f"--conditions: {conditions!r} is not one of {sorted(CONDITION_CHOICES)}")
    for name, values, minimum in (("--prompts", prompts, 2), ("--raters", raters, 2), ("--trials", trials, 1)):
        if not values:
            raise PlanInputError(f"{name}: no values given")
        if min(values) < minimum:
            raise PlanInputError(f"{name}: {min(values)} is below the minimum {minimum}")
    if max(trials) > min(prompts):
        raise PlanInputError(
            f"--trials: {max(trials)} trials per participant exceeds {min(prompts)} prompts "
            "(--prompts); each participant rates distinct prompts"
        )
    designs = [Design(p, r, t, CONDITION_CHOICES[conditions]) for p, r, t in itertools.product(prompts, raters, trials)]
    thin = [d for d in designs if d.raters * d.trials < 2 * d.prompts]
    if thin:
        d = thin[0]
        raise PlanInputError(
            f"--raters: {d.raters} raters x {d.trials} trials cannot give every one of {d.prompts} "
            f"prompts' clips 2 ratings per condition (need raters x trials >= {2 * d.prompts}); "
            "raise --raters or --trials, or lower --prompts"
        )
    if len(designs) > MAX_DESIGNS:
        raise PlanInputError(
            f"--prompts/--raters/--trials: the grid has {len(designs)} designs (at most {MAX_DESIGNS})"
        )
    return designs


def _unit(value: float | None, argument: str, low: float = 0.0, high: float = 1.0) -> None:
    if value is not None and not (math.isfinite(value) and low < value < high):
        raise PlanInputError(f"{argument}: {value} must lie strictly between {low:g} and {high:g}")


@dataclass(frozen=True)
class Targets:
    """What a design must achieve (None = not a target).

    ci_half_width: half-width of the ICC(2,k) interval the analysis will report, per condition in
        ``target_conditions``, met in at least ``assurance`` of studies.
    icc_k: expected (mean) ICC(2,k) per condition in ``target_conditions``.
    icc_diff: audio - text difference in ICC(2,1) that the Table 4 test must detect with ``power``.
    table2_effect: size (rating points, observed scale) of Table 2's ``table2_term`` to detect with ``power``.
    agreement_half_width: expected 95 % (Wilson) half-width of the cross-modality winner agreement.
    """

    ci_half_width: float | None = None
    icc_k: float | None = None
    icc_diff: float | None = None
    table2_effect: float | None = None
    table2_term: str = "modality"
    agreement_half_width: float | None = None
    target_conditions: tuple[str, ...] = CONDITIONS
    assurance: float = 0.8
    power: float = 0.8
    alpha: float = 0.05
    ci_level: float = 0.95

    def check(self, conditions: tuple[str, ...]) -> None:
        """Raise :class:`PlanInputError` naming the argument of an impossible or inconsistent target."""
        _unit(self.ci_half_width, "--target-ci-half-width", 0.0, 0.5)
        _unit(self.icc_k, "--target-icc-k")
        _unit(self.assurance, "--assurance")
        _unit(self.power, "--power")
        _unit(self.alpha, "--alpha", 0.0, 0.5)
        _unit(self.ci_level, "--ci-level")
        _unit(self.agreement_half_width, "--target-agreement-half-width", 0.0, 0.5)
        if self.icc_diff is not None and not (math.isfinite(self.icc_diff) and 0 < abs(self.icc_diff) < 1):
            raise PlanInputError(
                f"--target-power-icc-diff: {self.icc_diff} must be a non-zero ICC difference strictly between -1 and 1"
            )
        if self.table2_effect is not None and not (math.isfinite(self.table2_effect) and self.table2_effect != 0):
            raise PlanInputError(
                f"--target-power-table2: {self.table2_effect} must be a non-zero finite effect (rating points)"
            )
        if self.table2_term not in TABLE2_TERMS:
            raise PlanInputError(f"--table2-term: {self.table2_term!r} is not one of {sorted(TABLE2_TERMS)}")
        both = set(conditions) == {"audio", "text"}
        for value, argument in (
            (self.icc_diff, "--target-power-icc-diff"),
            (self.table2_effect, "--target-power-table2"),
            (self.agreement_half_width, "--target-agreement-half-width"),
        ):
            if value is not None and not both:
                raise PlanInputError(f"{argument}: compares the modalities, so it needs --conditions both")
        unknown = set(self.target_conditions) - set(conditions)
        if unknown and (self.ci_half_width is not None or self.icc_k is not None):
            raise PlanInputError(
                f"--target-conditions: {sorted(unknown)} not run (--conditions gives {list(conditions)})"
            )
        if not self.any():
            raise PlanInputError(
                "no target given: set at least one of --target-ci-half-width, --target-icc-k, "
                "--target-power-icc-diff, --target-power-table2, --target-agreement-half-width"
            )

    def any(self) -> bool:
        return any(
            v is not None
            for v in (self.ci_half_width, self.icc_k, self.icc_diff, self.table2_effect, self.agreement_half_width)
        )


#: Table 2 terms a power target can name -> the fast fit's record key (:mod:`modprefs.plan.analysis`).
TABLE2_TERMS = {"modality": "t2_modality", "modality:len_z": "t2_len"}


@dataclass(frozen=True)
class Costs:
    """What a participant costs (None = from the priors: Table 3 or the pilot).

    minutes_per_trial: {condition: minutes}; overhead_minutes: per session (consent, demographics,
    attention check); pay_per_hour: currency units per hour of participant time; fee_rate:
    platform fee as a fraction of pay (Prolific's is ~1/3; 0 = none); attention_fail_rate and
    incomplete_rate: {condition: probability}; pay_failed: whether participants who fail the
    attention check are paid for their (short) session.
    """

    pay_per_hour: float = 12.0
    fee_rate: float = 0.0
    minutes_per_trial: dict[str, float] = field(default_factory=dict)
    overhead_minutes: float | None = None
    attention_fail_rate: dict[str, float] = field(default_factory=dict)
    incomplete_rate: dict[str, float] = field(default_factory=dict)
    pay_failed: bool = True

    def check(self) -> None:
        if not (math.isfinite(self.pay_per_hour) and self.pay_per_hour >= 0):
            raise PlanInputError(f"--pay-per-hour: {self.pay_per_hour} must be a finite number >= 0")
        if not (math.isfinite(self.fee_rate) and self.fee_rate >= 0):
            raise PlanInputError(f"--fee-rate: {self.fee_rate} must be a finite number >= 0")
        for c, m in self.minutes_per_trial.items():
            if not (math.isfinite(m) and m > 0):
                raise PlanInputError(f"--minutes-per-trial-{c}: {m} must be a positive number of minutes")
        if self.overhead_minutes is not None and not (
            math.isfinite(self.overhead_minutes) and self.overhead_minutes >= 0
        ):
            raise PlanInputError(f"--overhead-minutes: {self.overhead_minutes} must be >= 0")
        for name, rates in (
            ("attention-fail-rate", self.attention_fail_rate),
            ("incomplete-rate", self.incomplete_rate),
        ):
            for c, r in rates.items():
                if not (math.isfinite(r) and 0 <= r < 1):
                    raise PlanInputError(f"--{name}-{c}: {r} must lie in [0, 1)")
