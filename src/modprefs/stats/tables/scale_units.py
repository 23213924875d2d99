"""The study's rating scale in tables: its label, and the paper's 1..100 values restated on it.

Light (no statistics imported), so the report can use it without loading the analyses.

The paper's numbers are on its 1..100 slider. Beside a study on another scale a paper value is either shown as
printed (labelled 1-100) or mapped onto the study's scale by its *unit* (:data:`UNITS`):

* ``level`` -- a rating (a mean, a PRISM score): the linear map 1 -> min, 100 -> max
  (:meth:`modprefs.scale.RatingScale.from_paper_units`, not rounded);
* ``difference`` -- a difference or error of ratings (an MAE, a gap, a mean signed difference, an LMM
  coefficient in rating points): 1 point of the paper's 1..100 is ``span / 99`` study units;
* ``per_point`` -- a quantity per rating point (an ICC per point of AI gap): x ``99 / span``;
* ``unitless`` -- an ICC, a correlation, a proportion: unchanged.
"""

from __future__ import annotations

import math

from modprefs.scale import PAPER_SCALE, RatingScale

UNITS: tuple[str, ...] = ("level", "difference", "per_point", "unitless")


def scale_label(scale: RatingScale) -> str:
    """The scale as tables name it, e.g. ``"1-5 (step 1)"``: range and step only, so the workflow (labels from
    study.scale) and ``modprefs stats --scale`` (no labels) write the same tables."""
    return f"{scale.min:g}-{scale.max:g} (step {scale.step:g})"


def scale_text(scale: RatingScale) -> str:
    """The scale as the report states it: :meth:`RatingScale.describe` (with its end labels), or just
    :func:`scale_label` where the end labels are the end numbers (``--scale 1:5`` gives labels "1" and "5")."""
    if (scale.label_min, scale.label_max) == (f"{scale.min:g}", f"{scale.max:g}"):
        return scale_label(scale)
    return scale.describe()


def paper_on_scale(value: float, unit: str, scale: RatingScale) -> float:
    """A paper value (in its 1..100 units) restated on ``scale`` by its ``unit`` (module docstring).

    Raises:
        ValueError: an unknown ``unit``.
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    if not math.isfinite(value):
        return math.nan
    if unit == "level":
        return float(scale.from_paper_units(value, snap=False))
    if unit == "difference":
        return value * scale.span / PAPER_SCALE.span
    if unit == "per_point":
        return value * scale.paper_units_per_point()
    return value


def conversion_text(unit: str, scale: RatingScale) -> str:
    """How :func:`paper_on_scale` restates a paper value of ``unit`` on ``scale``, e.g. ``"rating difference:
    1-100 value x 4/99"``; ``"as printed"`` on the paper's scale.

    Raises:
        ValueError: an unknown ``unit``.
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
    if unit == "unitless":
        return "unitless: as printed on any scale"
    if scale.is_paper:
        return "as printed (the study is on the paper's 1-100 scale)"
    span, paper = f"{scale.span:g}", f"{PAPER_SCALE.span:g}"
    if unit == "level":
        return f"rating: {scale.min:g} + (1-100 value - 1) x {span}/{paper}"
    if unit == "difference":
        return f"rating difference: 1-100 value x {span}/{paper}"
    return f"per rating point: 1-100 value x {paper}/{span}"
