"""A small lme4-style formula language for :mod:`modprefs.stats.mixed.lmm`.

Supported (a subset of R's ``lme4::lmer`` formulas)::

    y ~ a + b + a:b + a*b + (1 | g) + (1 + x | g) + (x | g) + (0 + x | g) + (1 | g1:g2) + (1 + x || g)

* ``a*b`` expands to ``a + b + a:b`` (and ``a*b*c`` to all interactions); ``0 +`` / ``- 1`` drop the
  intercept; ``1`` alone keeps it.
* Terms are ordered as R's ``terms()`` orders them: by interaction order, then by first appearance;
  the variables inside an interaction label are ordered by their first appearance in the formula
  (so ``len_z*modality`` after ``presented_first*modality`` gives ``modality:len_z``, as R names it).
* Numeric columns enter as they are; booleans as 0/1 named ``<column>TRUE`` (as R names a
  logical). Other columns (strings, pandas categoricals) are treatment-coded: one 0/1 column per
  non-reference level, the reference being the first level (sorted values, or the categorical's
  category order, as R's ``factor()``), named ``<column><level>`` as R does. Interactions of
  factors take products of their columns. Interactions of a factor whose main effect is absent
  are still treatment-coded (R would switch to full dummy coding there): write such models with
  explicit numeric columns.
* A grouping factor ``g1:g2`` is the combination of both columns' labels.
* ``(1 + x + z || g)`` (uncorrelated random effects) expands as lme4 expands it for numeric columns:
  ``(1 | g) + (0 + x | g) + (0 + z | g)``, one independent term per column, in that order.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

_RANDOM = re.compile(r"\(([^()|]*)\|([^()|]*)\)")
_UNCORRELATED = re.compile(r"\(([^()|]*)\|\|([^()|]*)\)")
_NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")


@dataclass(frozen=True)
class ParsedFormula:
    """The pieces of a formula.

    Attributes:
        response: name of the response column.
        intercept: whether the fixed part has an intercept.
        fixed: fixed-effect terms, each a tuple of variable names (a main effect has one).
        random: (intercept, slope terms, grouping variables) per random-effects term.
    """

    response: str
    intercept: bool
    fixed: tuple[tuple[str, ...], ...]
    random: tuple[tuple[bool, tuple[tuple[str, ...], ...], tuple[str, ...]], ...]


@dataclass(frozen=True)
class Design:
    """Numeric arrays for :func:`modprefs.stats.mixed.lmm.fit_lmm`.

    Attributes:
        y: (n,) response.
        X: (n, p) fixed-effects design.
        x_names: p column names, R style.
        groups: per random term, (n,) group labels.
        Zs: per random term, (n, r_k) columns.
        group_names: per random term, the grouping factor's name.
        coef_names: per random term, the r_k column names.
    """

    y: np.ndarray
    X: np.ndarray
    x_names: list[str]
    groups: list[np.ndarray]
    Zs: list[np.ndarray]
    group_names: list[str]
    coef_names: list[list[str]]


def _split_plus(expr: str) -> list[tuple[str, int]]:
    """Top-level '+'/'-' separated, non-empty pieces of ``expr`` as (text, sign)."""
    pieces, sign, buf = [], 1, ""
    for ch in expr + "+":
        if ch in "+-":
            if buf.strip():
                pieces.append((buf.strip(), sign))
            buf, sign = "", 1 if ch == "+" else -1
        else:
            buf += ch
    return pieces


def _check_name(name: str, formula: str) -> str:
    if not _NAME.match(name):
        raise ValueError(
            f"cannot parse {name!r} in formula {formula!r}: only column names, ':', '*', '+', "
            "'0'/'1'/'-1' and '(... | g)' terms are supported"
        )
    return name


def _expand_terms(expr: str, formula: str) -> tuple[bool | None, list[tuple[str, ...]]]:
    """Expand a '+'-separated term list into (intercept flag or None if unspecified, interaction tuples)."""
    intercept: bool | None = None
    terms: list[tuple[str, ...]] = []
    for text, sign in _split_plus(expr):
        if text in ("0", "1"):
            intercept = (text == "1") and sign > 0
            continue
        if sign < 0:
            raise ValueError(f"only '- 1' may be subtracted in formula {formula!r}")
        groups = [tuple(_check_name(v.strip(), formula) for v in f.split(":")) for f in text.split("*")]
        for k in range(1, len(groups) + 1):
            for combo in itertools.combinations(groups, k):
                merged: list[str] = []
                for g in combo:
                    merged.extend(v for v in g if v not in merged)
                terms.append(tuple(merged))
    return intercept, terms


def _order_terms(terms: list[tuple[str, ...]], order: list[str]) -> tuple[tuple[str, ...], ...]:
    """Deduplicate, sort variables by first appearance and terms by interaction order (R's terms())."""
    rank = {v: i for i, v in enumerate(order)}
    seen: list[tuple[str, ...]] = []
    for t in terms:
        canon = tuple(sorted(set(t), key=rank.__getitem__))
        if canon not in seen:
            seen.append(canon)
    return tuple(sorted(seen, key=len))  # stable: keeps first appearance within an order


def _split_uncorrelated(inner: str, group: str, formula: str) -> str:
    """lme4's expansion of ``(inner || group)``: ``(1 | group)`` (unless ``0 +``/``- 1``) and ``(0 + t | group)``
    per term of ``inner``, joined by ' + '."""
    icpt, terms = _expand_terms(inner, formula)
    parts = [f"(1 | {group.strip()})"] if icpt is not False else []
    parts.extend(f"(0 + {':'.join(t)} | {group.strip()})" for t in terms)
    if not parts:
        raise ValueError(f"random-effects term ({inner}|| {group}) has no columns in formula {formula!r}")
    return " + ".join(parts)


def parse_formula(formula: str) -> ParsedFormula:
    """Parse ``formula`` (see the module docstring) into a :class:`ParsedFormula`."""
    if formula.count("~") != 1:
        raise ValueError(f"formula must have exactly one '~': {formula!r}")
    lhs, rhs = (s.strip() for s in formula.split("~"))
    response = _check_name(lhs, formula)
    rhs = _UNCORRELATED.sub(lambda m: _split_uncorrelated(m.group(1), m.group(2), formula), rhs)
    random = []
    for inner, grp in _RANDOM.findall(rhs):
        icpt, slope_terms = _expand_terms(inner, formula)
        grouping = tuple(_check_name(g.strip(), formula) for g in grp.split(":"))
        random.append((icpt is not False, slope_terms, grouping))
    fixed_expr = _RANDOM.sub("", rhs)
    if "(" in fixed_expr or ")" in fixed_expr or "|" in fixed_expr:
        raise ValueError(
            f"cannot parse {formula!r}: parentheses and '|' only in random-effects terms "
            "'(expr | group)'; transform columns in the data frame"
        )
    intercept, fixed_terms = _expand_terms(fixed_expr, formula)
    if not random:
        raise ValueError(f"formula {formula!r} has no random-effects term '(... | group)'")
    order: list[str] = []
    for t in fixed_terms:
        for v in t:
            if v not in order:
                order.append(v)
    fixed = _order_terms(fixed_terms, order)
    rand = []
    for icpt, slope_terms, grouping in random:
        rorder: list[str] = []
        for t in slope_terms:
            rorder.extend(v for v in t if v not in rorder)
        rand.append((icpt, _order_terms(slope_terms, rorder), grouping))
    return ParsedFormula(response=response, intercept=intercept is not False, fixed=fixed, random=tuple(rand))


def _column_codes(df: pd.DataFrame, name: str) -> tuple[np.ndarray, list[str]]:
    """(n, c) numeric columns for one variable and their name suffixes (treatment coding for factors)."""
    if name not in df.columns:
        raise ValueError(f"column {name!r} is not in the data (columns: {list(df.columns)})")
    col = df[name]
    if col.isna().any():
        raise ValueError(f"column {name!r} has missing values; drop or impute them first")
    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=float)[:, None], ["TRUE"]  # R: a logical is a FALSE/TRUE factor
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype=float)[:, None], [""]
    levels = list(col.cat.categories) if isinstance(col.dtype, pd.CategoricalDtype) else sorted(col.unique())
    values = col.to_numpy()
    cols = [(values == lev).astype(float) for lev in levels[1:]]
    if not cols:
        raise ValueError(f"factor {name!r} has a single level")
    return np.column_stack(cols), [str(lev) for lev in levels[1:]]


def _term_columns(df: pd.DataFrame, term: tuple[str, ...], cache: dict) -> tuple[np.ndarray, list[str]]:
    """Columns and names of one (interaction) term: products of its variables' columns."""
    mats, names = [np.ones((len(df), 1))], [""]
    for v in term:
        if v not in cache:
            cache[v] = _column_codes(df, v)
        cols, suffixes = cache[v]
        mats_new, names_new = [], []
        for m_prev, n_prev in zip(mats[0].T, names):
            for j, suf in enumerate(suffixes):
                mats_new.append(m_prev * cols[:, j])
                label = f"{v}{suf}"
                names_new.append(label if not n_prev else f"{n_prev}:{label}")
        mats, names = [np.column_stack(mats_new)], names_new
    return mats[0], names


def _model_matrix(
    df: pd.DataFrame, intercept: bool, terms: tuple[tuple[str, ...], ...], cache: dict
) -> tuple[np.ndarray, list[str]]:
    blocks, names = [], []
    if intercept:
        blocks.append(np.ones((len(df), 1)))
        names.append("(Intercept)")
    for t in terms:
        cols, labels = _term_columns(df, t, cache)
        blocks.append(cols)
        names.extend(labels)
    if not blocks:
        return np.empty((len(df), 0)), []
    return np.column_stack(blocks), names


def build_design(df: pd.DataFrame, formula: str) -> Design:
    """Arrays for :func:`modprefs.stats.mixed.lmm.fit_lmm` from a data frame and a formula."""
    parsed = parse_formula(formula)
    if parsed.response not in df.columns:
        raise ValueError(f"response column {parsed.response!r} is not in the data")
    y = pd.to_numeric(df[parsed.response], errors="raise").to_numpy(dtype=float)
    cache: dict = {}
    X, x_names = _model_matrix(df, parsed.intercept, parsed.fixed, cache)
    groups, Zs, gnames, cnames = [], [], [], []
    for icpt, slope_terms, grouping in parsed.random:
        Z, names = _model_matrix(df, icpt, slope_terms, cache)
        if Z.shape[1] == 0:
            raise ValueError(f"random-effects term for {':'.join(grouping)} has no columns")
        for g in grouping:
            if g not in df.columns:
                raise ValueError(f"grouping column {g!r} is not in the data")
            if df[g].isna().any():
                raise ValueError(f"grouping column {g!r} has missing values")
        if len(grouping) == 1:
            labels = df[grouping[0]].to_numpy()
        else:
            labels = df[grouping[0]].astype(str)
            for g in grouping[1:]:
                labels = labels + ":" + df[g].astype(str)
            labels = labels.to_numpy()
        groups.append(labels)
        Zs.append(Z)
        gnames.append(":".join(grouping))
        cnames.append(names)
    return Design(y=y, X=X, x_names=x_names, groups=groups, Zs=Zs, group_names=gnames, coef_names=cnames)
