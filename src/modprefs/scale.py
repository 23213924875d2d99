"""The study's rating scale: its range, step and end labels (config ``study.scale``).

The paper's sliders run 1..100 in whole points with the end labels "Terrible" and "Perfect"; a lab may rate on
a 1-5 MOS scale, a 7-point Likert scale, a 0-100 slider or a 0-10 score. Every part that produces or checks a
rating reads the scale from here: the app's sliders, ingest validation, the simulator, the judges' mapping, the
statistics (thresholds and gaps are in *scale units*) and the report.

The simulator's latent parameters stay in the paper's 1..100 units: :meth:`RatingScale.from_paper_units` maps a
1..100 value linearly onto the scale and rounds it to the step, so a study on another scale keeps the paper's
effect sizes relative to the scale's range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PAPER_SCALE", "RatingScale", "parse_scale_arg", "scale_from_config"]

#: The paper's 1..100 slider range, in which the simulator's latent parameters are stated.
PAPER_MIN, PAPER_MAX = 1.0, 100.0
#: The most steps a scale may have (10,000: a 0-100 slider in steps of 0.01); finer is a typo, not a scale.
MAX_STEPS = 10_000


def _divisor_hint(span: float, step: float) -> float:
    """A step near ``step`` that divides ``span`` into a whole number of steps (for the error message)."""
    return span / max(1, round(span / step))


@dataclass(frozen=True)
class RatingScale:
    """A bounded rating scale.

    Attributes:
        min: lowest rating (scale units).
        max: highest rating (scale units), > ``min``.
        step: smallest difference between two ratings (scale units); ``(max - min) / step`` is a whole number.
        label_min: the label shown at ``min`` (e.g. "Terrible").
        label_max: the label shown at ``max`` (e.g. "Perfect").
    """

    min: float = 1.0
    max: float = 100.0
    step: float = 1.0
    label_min: str = "Terrible"
    label_max: str = "Perfect"

    def __post_init__(self) -> None:
        for name in ("min", "max", "step"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
                raise ValueError(f"study.scale.{name} must be a finite number, got {value!r}")
        if not self.max > self.min:
            raise ValueError(f"study.scale: max ({self.max:g}) must be greater than min ({self.min:g})")
        if not self.step > 0:
            raise ValueError(f"study.scale.step must be positive, got {self.step:g}")
        n = (self.max - self.min) / self.step
        if n > MAX_STEPS:
            raise ValueError(
                f"study.scale: a step of {self.step:g} cuts {self.min:g}-{self.max:g} into {n:,.0f} steps, more than "
                f"the {MAX_STEPS:,} a rating scale may have (a 0-100 slider in steps of 0.01); use a coarser step"
            )
        if abs(n - round(n)) > 1e-9 * max(1.0, n) or round(n) < 1:
            raise ValueError(
                f"study.scale: step {self.step:g} does not divide the range {self.min:g}-{self.max:g}: "
                f"(max - min) / step = {n:.6g} steps, which must be a whole number (e.g. step "
                f"{_divisor_hint(self.max - self.min, self.step):g})"
            )

    @property
    def n_points(self) -> int:
        """Distinct ratings on the scale (101 for 0..100 in steps of 1, 5 for 1..5)."""
        return int(round((self.max - self.min) / self.step)) + 1

    @property
    def span(self) -> float:
        """``max - min`` in scale units (99 for the paper's 1..100)."""
        return self.max - self.min

    @property
    def is_integer(self) -> bool:
        """Every rating is a whole number (integer min and step)."""
        return float(self.min).is_integer() and float(self.step).is_integer()

    @property
    def is_paper(self) -> bool:
        """The paper's 1..100 scale in whole points."""
        return (self.min, self.max, self.step) == (PAPER_MIN, PAPER_MAX, 1.0)

    def describe(self) -> str:
        """``"1-100 (step 1; 1 = Terrible, 100 = Perfect)"``: the scale as the report and tables state it."""
        return (
            f"{self.min:g}-{self.max:g} (step {self.step:g}; {self.min:g} = {self.label_min}, "
            f"{self.max:g} = {self.label_max})"
        )

    def on_scale(self, values: Any) -> np.ndarray:
        """Boolean mask, same shape as ``values``: within [min, max] and on a step (NaN is False)."""
        x = np.asarray(values, dtype=float)
        with np.errstate(invalid="ignore"):
            steps = (x - self.min) / self.step
            on_step = np.abs(steps - np.round(steps)) <= 1e-6
            return np.isfinite(x) & (x >= self.min - 1e-9) & (x <= self.max + 1e-9) & on_step

    def snap(self, values: Any) -> np.ndarray:
        """Round to the nearest step and clip to [min, max] (float array, same shape)."""
        x = np.asarray(values, dtype=float)
        snapped = self.min + np.round((x - self.min) / self.step) * self.step
        return np.clip(snapped, self.min, self.max)

    def from_paper_units(self, values: Any, snap: bool = True) -> np.ndarray:
        """Map 1..100 values linearly onto this scale (1 -> min, 100 -> max); rounded to the step if ``snap``.

        Values outside 1..100 map outside [min, max] unless ``snap`` (which also clips).
        """
        x = np.asarray(values, dtype=float)
        mapped = self.min + (x - PAPER_MIN) * self.span / (PAPER_MAX - PAPER_MIN)
        return self.snap(mapped) if snap else mapped

    def to_paper_units(self, values: Any) -> np.ndarray:
        """The inverse linear map: this scale's values on 1..100 (not rounded)."""
        x = np.asarray(values, dtype=float)
        return PAPER_MIN + (x - self.min) * (PAPER_MAX - PAPER_MIN) / self.span

    def paper_units_per_point(self) -> float:
        """How many 1..100 points one unit of this scale is worth (99 / span)."""
        return (PAPER_MAX - PAPER_MIN) / self.span

    def as_config(self) -> dict[str, Any]:
        """The ``study.scale`` mapping that rebuilds this scale."""
        return {
            "min": _plain(self.min),
            "max": _plain(self.max),
            "step": _plain(self.step),
            "labels": [self.label_min, self.label_max],
        }


def _plain(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


#: The paper's scale: 1..100 in whole points, "Terrible" .. "Perfect".
PAPER_SCALE = RatingScale()


def scale_from_config(config: Mapping[str, Any] | None) -> RatingScale:
    """The scale of a workflow config (its ``study.scale``; the paper's when absent), or of a ``study.scale``
    mapping itself (``{min, max, step, labels}``).

    Raises:
        ValueError: a bad range or step (the message names ``study.scale``'s key).
    """
    if not config:
        return PAPER_SCALE
    block: Mapping[str, Any] | None
    if "study" in config or not any(k in config for k in ("min", "max", "step", "labels")):
        block = (config.get("study") or {}).get("scale") if isinstance(config.get("study"), Mapping) else None
    else:
        block = config
    if not block:
        return PAPER_SCALE
    labels = list(block.get("labels") or [PAPER_SCALE.label_min, PAPER_SCALE.label_max])
    if len(labels) != 2:
        raise ValueError(f"study.scale.labels must be two strings [at min, at max], got {labels!r}")
    return RatingScale(
        min=float(block.get("min", PAPER_SCALE.min)),
        max=float(block.get("max", PAPER_SCALE.max)),
        step=float(block.get("step", PAPER_SCALE.step)),
        label_min=str(labels[0]),
        label_max=str(labels[1]),
    )


def parse_scale_arg(text: str) -> RatingScale:
    """``MIN:MAX`` or ``MIN:MAX:STEP`` (the ``--scale`` option) as a scale with neutral end labels.

    Raises:
        ValueError: not two or three numbers separated by ``:``, or an invalid range or step.
    """
    parts = str(text).split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"--scale {text!r}: expected MIN:MAX or MIN:MAX:STEP, e.g. 1:5 or 0:100")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"--scale {text!r}: MIN, MAX and STEP must be numbers") from None
    lo, hi = numbers[0], numbers[1]
    step = numbers[2] if len(numbers) == 3 else 1.0
    try:
        return RatingScale(min=lo, max=hi, step=step, label_min=f"{lo:g}", label_max=f"{hi:g}")
    except ValueError as err:
        raise ValueError(f"--scale {text!r}: {err}") from None
