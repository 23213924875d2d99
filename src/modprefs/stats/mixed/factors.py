"""Grouping factors as integer codes, built the way lme4 builds them (unused levels dropped)."""

from __future__ import annotations

import numpy as np


def encode_factor(g: np.ndarray, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of a grouping factor and its levels.

    ``g``: (n,) labels of any dtype; ``label`` names the factor in errors. Returns (codes (n,) intp in
    0..q-1, levels (q,) sorted). NaN or missing (None) labels and a non-1-D ``g`` raise ValueError.
    """
    g = np.asarray(g)
    if g.ndim != 1:
        raise ValueError(f"{label} must be one-dimensional, got shape {g.shape}")
    if g.dtype.kind == "f" and np.isnan(g).any():
        raise ValueError(f"{label} contains NaN")
    if g.dtype == object and any(v is None or (isinstance(v, float) and np.isnan(v)) for v in g):
        raise ValueError(f"{label} contains missing labels")
    levels, codes = np.unique(g, return_inverse=True)
    return codes.reshape(-1).astype(np.intp), levels
