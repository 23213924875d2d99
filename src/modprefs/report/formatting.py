"""Numbers as a reader expects them in a results section (APA-style), never in e-notation.

* :func:`format_number`: fixed decimals; ``bounded=True`` drops the leading zero of quantities that cannot
  exceed 1 in magnitude (ICC, alpha, correlations: ``.333``, ``-.007``), as APA asks;
* :func:`format_p`: ``<.001``, else three decimals without the leading zero (``.012``); 1 stays ``1.000``;
* :func:`format_interval`: ``[lo, hi]`` in the estimate's format;
* :func:`format_estimate`: ``est [lo, hi]``.

Missing values (None, NaN) print as an en dash. Every function returns plain text (escape it for HTML).
"""

from __future__ import annotations

import math
from typing import Any

MISSING = "–"


def is_missing(x: Any) -> bool:
    """True for None, NaN, an empty string and values that do not parse as a number."""
    if x is None:
        return True
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return True


def format_number(x: Any, decimals: int = 2, bounded: bool = False) -> str:
    """``x`` with ``decimals`` decimals (thousands separated).

    ``bounded``: no leading zero (quantities with ``|x| <= 1``)."""
    if is_missing(x):
        return MISSING
    value = float(x)
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    text = f"{value:,.{decimals}f}"
    if text.lstrip("-").strip("0.") == "":
        text = text.lstrip("-")  # no "-0.00"
    if bounded and abs(value) < 1:
        text = text.replace("0.", ".", 1)
    return text.replace("-", "−")


def format_count(x: Any) -> str:
    """A count (raters, trials) without decimals; non-integers with one decimal (an average count)."""
    if is_missing(x):
        return MISSING
    value = float(x)
    return f"{value:,.0f}" if value.is_integer() else f"{value:,.1f}"


def format_p(p: Any) -> str:
    """A p-value by convention: ``<.001``, else three decimals without the leading zero."""
    if is_missing(p):
        return MISSING
    value = float(p)
    if value < 0.001:
        return "<.001"
    return "1.000" if value >= 1 else f"{value:.3f}".replace("0.", ".", 1)


def format_interval(lo: Any, hi: Any, decimals: int = 2, bounded: bool = False) -> str:
    """``[lo, hi]``; an en dash when either bound is missing."""
    if is_missing(lo) or is_missing(hi):
        return MISSING
    return f"[{format_number(lo, decimals, bounded)}, {format_number(hi, decimals, bounded)}]"


def format_estimate(est: Any, lo: Any = None, hi: Any = None, decimals: int = 2, bounded: bool = False) -> str:
    """``est [lo, hi]`` (the interval left out when missing)."""
    text = format_number(est, decimals, bounded)
    interval = format_interval(lo, hi, decimals, bounded)
    return text if interval == MISSING else f"{text} {interval}"
