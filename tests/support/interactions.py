"""Synthetic PRISM-like interactions for the sampling tests and a screening rule that passes every one."""

from __future__ import annotations

import numpy as np
import pandas as pd

from modprefs.sampling.screening import ScreeningResult


def interactions(n: int = 100, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    c0 = rng.integers(50, 400, n)
    c1 = rng.integers(50, 400, n)
    c1[: n // 10] += 600  # a clear long-difference tail
    return pd.DataFrame(
        {
            "conversation_id": [f"c{i:04d}" for i in range(n)],
            "prompt": "q",
            "text_0": "a",
            "text_1": "b",
            "chars_0": c0,
            "chars_1": c1,
            "abs_char_diff": np.abs(c0 - c1),
            "history_chars": rng.integers(0, 500, n),
            "history_turns": rng.integers(0, 3, n),
        }
    )


def screen_passes(_row) -> ScreeningResult:
    return ScreeningResult(None)
