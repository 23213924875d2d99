"""Shared helpers of the plan_*.py benchmarks: fresh studies at given parameters and the analysis' own tests."""

from __future__ import annotations

import os
import sys
import time
from multiprocessing import get_context
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "benchmarks" / "out"

from modprefs.plan.fastsim import simulate_study  # noqa: E402
from modprefs.plan.grid import Design  # noqa: E402
from modprefs.plan.layout import balanced_layout, prism_like_lengths  # noqa: E402


def fresh_study(params, design: Design, seed: int, stream: int):
    """A study at ``params`` from a stream the planner never uses (``[seed, 0xFE5, stream]``)."""
    rng = np.random.default_rng([seed, 0xFE5, stream])
    layout = balanced_layout(design.prompts, design.raters, design.trials, design.conditions, rng)
    return simulate_study(params, layout, prism_like_lengths(design.prompts, rng), rng, attention=False), rng


def parallel_map(fn, items, jobs: int = 2):
    """``map`` over worker processes (fork), results in order."""
    if jobs <= 1:
        return [fn(x) for x in items]
    with get_context("fork").Pool(jobs) as pool:
        return pool.map(fn, items, chunksize=1)


def mc_se(p: float, n: int) -> float:
    return float(np.sqrt(max(p * (1 - p), 1e-12) / n))


class Clock:
    """Wall and CPU seconds (this process and its finished children)."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = self._cpu()

    @staticmethod
    def _cpu() -> float:
        import resource

        s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    def seconds(self) -> dict[str, float]:
        return {
            "wall_s": round(time.perf_counter() - self.wall, 1),
            "cpu_s": round(self._cpu() - self.cpu, 1),
            "load_average_1min": round(os.getloadavg()[0], 1),
        }
