"""``modprefs plan``: how many prompts, raters and trials a study needs, by simulation, before paying for it.

    modprefs plan [--pilot SOURCE [--pilot-clips clips.csv] [--pilot-map CANON=SOURCE,...]]
                  --prompts 40,100 --raters 10:50:10 --trials 10,20
                  [--conditions both|audio|text] [--target-ci-half-width W] [--target-icc-k T]
                  [--target-conditions audio,text] [--assurance 0.8] [--target-power-icc-diff D]
                  [--target-power-table2 B [--table2-term modality|modality:len_z]] [--power 0.8]
                  [--target-agreement-half-width W] [--pay-per-hour 12] [--fee-rate 0] ...
                  [--scale MIN:MAX[:STEP]] [--n-sims 200] [--seed 1] [--jobs N] [--out results/plan]

Priors are the paper's (the simulator's calibrated defaults) unless ``--pilot`` gives a ratings
source (anything ``modprefs stats --ratings`` reads; ``--pilot-map`` renames foreign columns) to fit
them to (:mod:`modprefs.plan.pilot`). Every design of the grid is simulated
``--n-sims`` times under each scenario (pessimistic / central / optimistic priors), analysed the fast
way (:mod:`modprefs.plan.analysis`), and summarised (:mod:`modprefs.plan.summary`); the cheapest design
meeting every target is recommended per scenario. ``--out`` is checked before any simulation (writable, holding
nothing but an earlier plan's outputs) and replaced as a whole at the end (its ``cache/`` kept; Ctrl-C and
SIGTERM leave it as it was, exit 130 / 143). Writes under ``--out``: designs.csv, recommendation.csv,
priors.csv, plan.json, figures/*.png and report.html. Exit status: 0 a design meets the targets under
the central priors; 3 none does (the message names the targets missed); 2 a bad argument or input.
``--scale`` is the study's rating scale (config ``study.scale``; default the paper's 1..100): the simulated
ratings are on it, so a coarse scale's lost reliability is planned for, and quantities in rating units (the
Table 2 effect of ``--target-power-table2``, a pilot's statistics) are in its units; the ICC targets are
scale-free. docs/plan.md explains the method and its validation.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from modprefs.output_folder import Terminated, output_folder_problem, report_stopped, staged_folder, terminate_raises
from modprefs.plan.options import add_arguments, designs_and_targets, parse_quantiles, plan_scale, split_choices

if TYPE_CHECKING:
    from modprefs.scale import RatingScale

EXIT_UNMET = 3


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``modprefs plan``."""
    p = sub.add_parser(
        "plan",
        help="plan a study: prompts, raters, trials and cost for precision and power targets",
        description=__doc__.split("\n\n")[0],
    )
    add_arguments(p)
    return p


def plan_from_args(args: argparse.Namespace) -> int:
    """Run a plan from parsed options; writes the outputs; returns the exit status (see the module docstring)."""
    from modprefs.plan.planner import make_plan
    from modprefs.plan.priors import SCENARIOS

    t0 = time.perf_counter()
    _check_plan_out(args.out)
    args.jobs = _capped_jobs(args.jobs)
    designs, targets = designs_and_targets(args)
    costs = _costs(args, designs[0].conditions)
    scenarios = split_choices(args.scenarios, "--scenarios", SCENARIOS)
    settings = _settings(args, targets)
    cache = None if args.no_cache else (args.cache or args.out / "cache")
    priors = _priors(args, cache, parse_quantiles(args.quantiles), plan_scale(args.scale))
    result = make_plan(
        priors,
        designs,
        targets,
        costs,
        settings,
        scenarios,
        jobs=args.jobs,
        cache_dir=cache,
        progress=not args.no_progress,
    )
    with staged_folder(args.out, keep=("cache",)) as staged:
        lines = _write_outputs(args, staged, result, priors, targets, costs, settings, scenarios, len(designs), t0)
    print(result.statement)
    for line in [*priors.notes, *lines]:
        print(line)
    print(f"wrote {args.out}/designs.csv, recommendation.csv, priors.csv, plan.json, figures/ and report.html")
    main_scenario = "central" if "central" in scenarios else scenarios[0]
    if main_scenario in result.unmet:
        print(
            f"error: no design in the grid meets every target under the {main_scenario} priors: "
            + "; ".join(result.unmet[main_scenario])
            + ". Widen the grid (--prompts/--raters/--trials) or relax the targets.",
            file=sys.stderr,
        )
        return EXIT_UNMET
    return 0


#: what ``modprefs plan`` writes under ``--out`` (the folder is replaced as a whole, so it may hold nothing else)
PLAN_OUTPUT_NAMES = frozenset(
    {"designs.csv", "designs.md", "recommendation.csv", "priors.csv", "plan.json", "report.html", "figures", "cache"}
)


def _check_plan_out(out: Path) -> None:
    """``--out`` can be written and holds nothing but an earlier plan's outputs (checked before any simulation)."""
    from modprefs.plan.errors import PlanInputError

    problem = output_folder_problem(out)
    if problem:
        raise PlanInputError(problem)
    if out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in PLAN_OUTPUT_NAMES)
        if foreign:
            shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
            raise PlanInputError(
                f"--out {out}: holds files a plan does not write ({shown}); the plan replaces its folder as a "
                "whole, so choose an empty or new folder, or one holding only an earlier plan"
            )


def _capped_jobs(jobs: int) -> int:
    """``--jobs`` capped at the machine's cores, with a note (a process per design beyond them only waits)."""
    from modprefs.cores import capped_at_cores

    jobs, note = capped_at_cores(jobs, "--jobs")
    if note:
        print(note, file=sys.stderr)
    return jobs


def _costs(args: argparse.Namespace, conditions: tuple[str, ...]):
    """The cost inputs given on the command line (the rest default to the priors')."""
    from modprefs.plan.grid import Costs

    def per_condition(name: str) -> dict[str, float]:
        return {c: v for c in conditions if (v := getattr(args, f"{name}_{c}")) is not None}

    costs = Costs(
        pay_per_hour=args.pay_per_hour,
        fee_rate=args.fee_rate,
        overhead_minutes=args.overhead_minutes,
        minutes_per_trial=per_condition("minutes_per_trial"),
        attention_fail_rate=per_condition("attention_fail_rate"),
        incomplete_rate=per_condition("incomplete_rate"),
        pay_failed=not args.no_pay_failed,
    )
    costs.check()
    return costs


def _settings(args: argparse.Namespace, targets):
    """How each design is simulated and analysed (:class:`modprefs.plan.engine.SimSettings`)."""
    from modprefs.plan.engine import SimSettings
    from modprefs.plan.errors import PlanInputError
    from modprefs.plan.intervals import ANALYSIS_CI_METHOD
    from modprefs.stats.reliability.icc_ci import CI_METHODS

    ci_method = args.ci_method or ANALYSIS_CI_METHOD
    if ci_method not in CI_METHODS:
        raise PlanInputError(f"--ci-method: {ci_method!r} is not one of {list(CI_METHODS)}")
    return SimSettings(
        n_sims=args.n_sims,
        seed=args.seed,
        interval=args.interval,
        ci_method=ci_method,
        n_calibration=args.n_calibration,
        calibration_designs=args.calibration_designs,
        n_boot=args.n_boot,
        ci_level=args.ci_level,
        icc_test=args.icc_test,
        perm_draws=args.perm_draws,
        table2=targets.table2_effect is not None,
    )


def _priors(args: argparse.Namespace, cache: Path | None, quantiles: tuple[float, float], scale: RatingScale):
    """The paper's priors or the pilot's (cached by their inputs, the scale and the code), with ``--clips``' lengths."""
    from modprefs.plan.engine import cached_object
    from modprefs.plan.priors import paper_priors

    pool = _lengths_pool(args.clips) if args.clips is not None else None  # checked before any prior is fitted
    on_scale = {} if scale.is_paper else {"scale": [scale.min, scale.max, scale.step]}
    if args.pilot is not None:
        from modprefs.plan.pilot import pilot_priors, read_pilot
        from modprefs.ratings.sources import parse_column_map

        pilot = read_pilot(args.pilot, args.pilot_clips, parse_column_map(args.pilot_map), scale)
        tables = [pilot.ratings, pilot.participants, pilot.trials, pilot.clips]
        payload = {
            "pilot": [None if t is None else t.to_json() for t in tables],
            "seed": args.seed,
            "boot": args.prior_boot,
            "q": quantiles,
            **on_scale,
        }
        priors = cached_object(
            cache, payload, lambda: pilot_priors(pilot, args.seed, args.prior_boot, quantiles, scale=scale)
        )
    else:
        payload = {"paper": True, "seed": args.seed, "boot": args.prior_boot, "q": quantiles, **on_scale}
        priors = cached_object(cache, payload, lambda: paper_priors(args.seed, args.prior_boot, quantiles, scale=scale))
    if pool is not None:
        priors = dataclasses.replace(priors, lengths_pool=pool)
    return priors


def _write_outputs(
    args: argparse.Namespace,
    out: Path,
    result,
    priors,
    targets,
    costs,
    settings,
    scenarios: tuple[str, ...],
    n_designs: int,
    t0: float,
) -> list[str]:
    """designs.csv/.md, recommendation.csv, priors.csv, figures/, report.html, plan.json under ``out`` (the staged
    folder that becomes ``--out``); the recommendation lines."""
    from modprefs.io import write_csv, write_json, write_markdown_table, write_text
    from modprefs.plan.report import figures, plan_report_html, recommendation_lines, scale_units

    write_csv(result.table, out / "designs.csv")
    shown = [
        c
        for c in result.table.columns
        if not c.endswith("_mcse") and not c.startswith("meets_") and not c.startswith("interval_factor")
    ]
    write_markdown_table(
        result.table[shown], out / "designs.md", title="Designs (mean over simulated studies)", floatfmt=".3g"
    )
    write_csv(result.recommendations, out / "recommendation.csv")
    write_csv(priors.table, out / "priors.csv")
    figs = figures(result, targets, out / "figures")
    config = {
        "command": "modprefs plan",
        **{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items() if k not in ("func",)},
    }
    write_text(plan_report_html(result, priors, targets, figs, config), out / "report.html")
    lines = recommendation_lines(result)
    write_json(
        {
            "statement": result.statement,
            "recommendation": lines,
            "priors_source": priors.source,
            "priors_notes": priors.notes,
            "settings": dataclasses.asdict(settings),
            "targets": dataclasses.asdict(targets),
            "costs": dataclasses.asdict(costs),
            "unmet": result.unmet,
            "seconds": round(time.perf_counter() - t0, 1),
            "n_designs": n_designs,
            "scenarios": list(scenarios),
            "scale": {**priors.scale.as_config(), "units": scale_units(priors.scale)},
        },
        out / "plan.json",
    )
    return lines


def _lengths_pool(path: Path):
    import numpy as np
    import pandas as pd

    from modprefs.io_tables import read_table
    from modprefs.plan.errors import PlanInputError

    if not path.is_file():
        raise PlanInputError(f"--clips: {path} does not exist")
    clips = read_table(path, what=f"--clips {path}")  # the one table reader: ids verbatim, any cell length
    missing = [c for c in ("clip_id", "prompt_id", "n_chars") if c not in clips.columns]
    if missing:
        raise PlanInputError(f"--clips: {path} lacks column(s) {missing}")
    n_chars = pd.to_numeric(clips["n_chars"], errors="coerce")
    bad = np.flatnonzero((n_chars.isna() & clips["n_chars"].notna()).to_numpy() | (n_chars < 0).to_numpy())
    if bad.size:
        raise PlanInputError(
            f"--clips: {path} row {bad[0] + 2}, column n_chars: {str(clips['n_chars'].iat[bad[0]])[:40]!r} is not a "
            "number of characters (a whole number >= 0)"
        )
    clips = clips.assign(n_chars=n_chars)
    response = clips["clip_id"].astype(str).str.extract(r"_([01])$")[0]
    if "response" in clips.columns:
        response = clips["response"].astype(str)
    wide = clips.assign(response=response).pivot_table(index="prompt_id", columns="response", values="n_chars")
    if not {"0", "1"} <= set(map(str, wide.columns)):
        raise PlanInputError(f"--clips: {path} needs both responses (_0 and _1) of each prompt")
    wide.columns = [str(c) for c in wide.columns]
    wide = wide[["0", "1"]].dropna()
    return np.asarray(wide.to_numpy(float))


def run(args: argparse.Namespace) -> int:
    """Run ``modprefs plan``; expected errors print their message (naming the argument) and return 2."""
    from modprefs.errors import UserInputError

    try:
        with terminate_raises():
            return plan_from_args(args)
    except UserInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        return report_stopped("modprefs plan", exc, args.out)
