"""Run the simulated studies of a design grid: deterministic seeds, cached per design, in parallel.

A :class:`Task` is one (scenario, kind, design): ``kind="main"`` simulates ``n_sims`` studies at the
scenario's parameters (every planning quantity; plus, on the first ``n_calibration`` studies, the
analysis' own ICC interval for :mod:`modprefs.plan.intervals`); ``kind="icc_diff"`` simulates them
at the scenario's alternative for the ICC-difference power target (:func:`modprefs.plan.priors.icc_diff_params`)
with, per study, ``perm_draws`` draws of Table 4's permutation statistic (``icc_test="permutation"``) or, on
the first ``n_calibration`` studies, Table 4's crossed-jackknife test of the difference (``icc_test="calibrated"``
or ``"jackknife"``, with or without its H0 calibration: its SE and df calibrate the planned test against the Wald
SE, :func:`modprefs.plan.summary.icc_diff_power`).

Determinism: study i of a task uses ``SeedSequence([seed, design code, kind code]).spawn(...)[i]``
(the design code is a hash of its label), so results do not depend on the number of worker
processes, on the order tasks finish in, or on ``n_sims`` (the first 100 of 200 studies are those of
a 100-study run). Scenarios share the random numbers (common random numbers), which keeps the
pessimistic / central / optimistic comparison smooth.

Cache: a task's arrays are stored under ``cache_dir`` as ``{sha256}.npz``; the hash covers the
parameters, the design, the settings and the source code of every module the numbers depend on,
so a changed prior, setting or implementation never reads a stale result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from modprefs.io import atomic_path
from modprefs.plan.analysis import jackknife_difference_record, permutation_draws, study_record
from modprefs.plan.fastsim import simulate_study
from modprefs.plan.grid import Design
from modprefs.plan.intervals import ANALYSIS_CI_METHOD, analysis_half_widths, wald_half_width
from modprefs.plan.layout import balanced_layout, prism_like_lengths
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.defaults import STATS_DEFAULTS

log = logging.getLogger(__name__)

KINDS = {"main": 0, "icc_diff": 1}


@dataclass(frozen=True)
class SimSettings:
    """How each design is simulated and analysed (see :mod:`modprefs.plan.intervals` for the interval).

    n_sims: simulated studies per design and kind; seed: the planner's seed; interval: the planning
    interval; ci_method / n_boot / n_calibration / calibration_designs: the analysis' interval, how
    many studies of a design calibrate the planning interval against it (``interval="analysis"``) and
    on how many designs of the grid (:func:`modprefs.plan.intervals.calibration_designs`); ci_level:
    interval coverage;
    icc_test: the test Table 4 will use for the ICC difference (``calibrated``, ``jackknife`` or ``permutation``, as
    ``stats.icc_test``); perm_draws: permutation draws per study for the permutation test; table2: fit
    Table 2's model.
    """

    n_sims: int = 200
    seed: int = 1
    interval: str = "analysis"
    ci_method: str = ANALYSIS_CI_METHOD
    n_calibration: int = 5
    calibration_designs: int = 5
    n_boot: int = 100
    ci_level: float = 0.95
    icc_test: str = STATS_DEFAULTS["icc_test"]
    perm_draws: int = 1
    table2: bool = True


@dataclass(frozen=True)
class Task:
    """One unit of work: a scenario's parameters on one design (``kind``: see the module docstring); ``scale``: the
    study's rating scale the simulated ratings are on (:mod:`modprefs.plan.fastsim`)."""

    scenario: str
    kind: str
    params: SimulationParams
    design: Design
    settings: SimSettings
    lengths_pool: tuple[tuple[float, float], ...] | None = None
    scale: RatingScale = PAPER_SCALE


def _design_code(design: Design) -> int:
    return int(hashlib.sha256(design.label().encode()).hexdigest()[:8], 16)


_FINGERPRINT: str | None = None


def code_fingerprint() -> str:
    """sha256 of the source of every module a task's numbers depend on."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        import modprefs.plan.analysis as a
        import modprefs.plan.fastsim as f
        import modprefs.plan.layout as lay
        import modprefs.plan.wald as w
        import modprefs.ratings.simulate as s
        import modprefs.ratings.simulation.latent as sl
        import modprefs.ratings.simulation.observed as so
        import modprefs.ratings.simulation.params as sp
        import modprefs.scale as sc
        import modprefs.stats.mixed.reml as r
        import modprefs.stats.reliability.icc as i
        import modprefs.stats.reliability.icc_ci as ic
        import modprefs.stats.reliability.icc_difference as idiff
        import modprefs.stats.reliability.icc_jackknife as ijk
        import modprefs.stats.reliability.icc_resampling as irs

        h = hashlib.sha256()
        for module in (a, f, lay, w, s, sl, so, sp, sc, i, ic, ijk, irs, idiff, r, sys.modules[__name__]):
            h.update(Path(str(module.__file__)).read_bytes())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def task_key(task: Task) -> str:
    """Content hash of a task (parameters, design, settings, lengths, rating scale, code)."""
    payload: dict[str, object] = {
        "scenario_params": task.params.to_dict(),
        "kind": task.kind,
        "design": dataclasses.asdict(task.design),
        "settings": dataclasses.asdict(task.settings),
        "lengths": task.lengths_pool,
        "code": code_fingerprint(),
    }
    if not task.scale.is_paper:  # the range and step (the labels change no number)
        payload["scale"] = [task.scale.min, task.scale.max, task.scale.step]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def _lengths(task: Task, rng: np.random.Generator) -> np.ndarray:
    if task.lengths_pool is None:
        return prism_like_lengths(task.design.prompts, rng)
    pool = np.asarray(task.lengths_pool, float)
    return pool[rng.choice(len(pool), task.design.prompts, replace=False)]


@contextlib.contextmanager
def _quiet(*names: str):
    """Raise the given loggers to ERROR for the block (the calibration's per-refit warnings)."""
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def run_task(task: Task) -> dict[str, np.ndarray]:
    """Simulate and analyse one task's studies; returns arrays (``rec:{key}`` per record field, ...)."""
    d, s = task.design, task.settings
    root = np.random.SeedSequence([s.seed, _design_code(d), KINDS[task.kind]])
    study_seeds = root.spawn(s.n_sims)
    boot_rng = np.random.default_rng(np.random.SeedSequence([s.seed, _design_code(d), KINDS[task.kind], 0xB007]))
    records: list[dict[str, float]] = []
    warm: dict[str, np.ndarray | None] = {}
    perm: list[np.ndarray] = []
    jk: list[dict[str, float]] = []
    cal: dict[str, list[float]] = {f"{c}": [] for c in d.conditions}
    for i, ss in enumerate(study_seeds):
        rng = np.random.default_rng(ss)
        layout = balanced_layout(d.prompts, d.raters, d.trials, d.conditions, rng)
        study = simulate_study(task.params, layout, _lengths(task, rng), rng, attention=False, scale=task.scale)
        rec = study_record(study, warm, table2=s.table2 and task.kind == "main")
        if task.kind == "icc_diff" and s.icc_test == "permutation":
            perm.append(permutation_draws(study, s.perm_draws, rng, warm.get("audio")))
        elif task.kind == "icc_diff" and i < s.n_calibration:
            with _quiet("modprefs.stats.reliability.icc_ci", "modprefs.stats.reliability.icc"):
                jk.append(jackknife_difference_record(study, s.n_boot, boot_rng, s.icc_test))
        elif task.kind == "main" and s.interval == "analysis" and i < s.n_calibration:
            # a failed bootstrap refit is dropped from that interval (the analysis does the same and logs it)
            with _quiet("modprefs.stats.reliability.icc_ci", "modprefs.stats.reliability.icc"):
                widths = analysis_half_widths(study, s.ci_method, s.n_boot, boot_rng, s.ci_level)
            for c, hw in widths.items():
                cal[c].append(hw)
        records.append(rec)
    keys = sorted({k for r in records for k in r})
    out = {f"rec:{k}": np.array([r.get(k, np.nan) for r in records], float) for k in keys}
    for c, values in cal.items():
        if values:
            out[f"cal_analysis:{c}"] = np.array(values, float)
            n = len(values)
            out[f"cal_wald:{c}"] = wald_half_width(out[f"rec:icck_{c}"][:n], out[f"rec:sek_{c}"][:n], s.ci_level)
    if perm:
        out["perm"] = np.concatenate(perm)
    if jk:
        for key in ("jk_se", "jk_df"):
            out[f"cal_{key}"] = np.array([r[key] for r in jk], float)
        n = len(jk)
        out["cal_wald_diff_se"] = np.hypot(out["rec:se1_audio"][:n], out["rec:se1_text"][:n])
    return out


def _cached(args: tuple[Task, str, str | None]) -> tuple[str, dict[str, np.ndarray]]:
    task, key, cache_dir = args
    path = Path(cache_dir) / f"{key}.npz" if cache_dir else None
    if path is not None and path.is_file():
        with np.load(path) as data:
            return key, {k: data[k] for k in data.files}
    result = run_task(task)
    if path is not None:
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **result)  # type: ignore[arg-type]  # array names as keywords
    return key, result


def expected_cost(task: Task) -> float:
    """A task's expected CPU time, in units of one ICC fit per rating (to order the work longest first).

    Measured on the paper's design (benchmarks/performance/plan_grid.py): a simulated study costs about one fit per
    condition plus the Wald SE and Table 2 (~1.5 fits), an ICC-difference study adds 2 x ``perm_draws``
    refits under the permutation test, and a calibration study (of the interval, or of the jackknife
    difference test) refits the model once per prompt, per rater and per residual resample.
    """
    d, s = task.design, task.settings
    ratings = d.raters * d.trials * len(d.conditions)
    permutation = task.kind == "icc_diff" and s.icc_test == "permutation"
    per_study = 1.5 + (2.0 * s.perm_draws if permutation else 0.0)
    calibration = 0 if permutation else s.n_calibration * (d.prompts + d.raters + s.n_boot)
    return float(ratings * (s.n_sims * per_study + calibration))


def run_tasks(
    tasks: list[Task], jobs: int = 1, cache_dir: str | os.PathLike[str] | None = None, progress: bool = False
) -> list[dict[str, np.ndarray]]:
    """Run (or read from the cache) every task, ``jobs`` worker processes at a time.

    Args:
        tasks: the tasks (identical ones are run once).
        jobs: worker processes (1 = in this process).
        cache_dir: folder of cached results (None = no cache).
        progress: show a progress bar (tqdm, on stderr) over tasks.

    Returns:
        The arrays of each task, in the order of ``tasks``; identical whatever ``jobs`` is.
    """
    keys = [task_key(t) for t in tasks]
    unique = list({k: t for k, t in zip(keys, tasks)}.items())
    unique.sort(key=lambda kt: -expected_cost(kt[1]))  # longest first: the workers finish together
    cache = str(cache_dir) if cache_dir is not None else None
    if cache:
        Path(cache).mkdir(parents=True, exist_ok=True)
    args = [(t, k, cache) for k, t in unique]
    work: Iterable[tuple[str, dict[str, np.ndarray]]]
    pool = None
    if jobs > 1 and len(unique) > 1:
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        pool = get_context(method).Pool(min(jobs, len(unique)))
        work = pool.imap_unordered(_cached, args)
    else:
        work = map(_cached, args)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(unique), desc="plan: designs simulated", unit="design", file=sys.stderr)
    results: dict[str, dict[str, np.ndarray]] = {}
    try:
        for key, result in work:
            results[key] = result
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.close()
            pool.join()
    return [results[k] for k in keys]


def cached_object(cache_dir: str | os.PathLike[str] | None, payload: dict, compute):
    """``compute()``'s result, pickled under ``cache_dir`` by a hash of ``payload`` and the code (None = no cache).

    For the priors (their ICC curves and bootstrap), which every plan with the same priors reuses.
    """
    import pickle

    if cache_dir is None:
        return compute()
    import modprefs.plan.pilot as pilot
    import modprefs.plan.priors as priors

    h = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode())
    h.update(code_fingerprint().encode())
    for module in (priors, pilot):
        h.update(Path(str(module.__file__)).read_bytes())
    path = Path(cache_dir) / f"priors-{h.hexdigest()}.pkl"
    if path.is_file():
        with open(path, "rb") as fh:
            return pickle.load(fh)
    value = compute()
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh)
    return value
