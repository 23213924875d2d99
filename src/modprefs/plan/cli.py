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
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from modprefs.output_folder import Terminated, output_folder_problem, report_stopped, staged_folder, terminate_raises
from modprefs.stats.defaults import STATS_DEFAULTS
from modprefs.study.terms import CONDITIONS

if TYPE_CHECKING:
    from modprefs.scale import RatingScale

EXIT_UNMET = 3
#: where the workflow's rule plan writes (rules/plan.smk): the config's plan block cannot move it
WORKFLOW_PLAN_OUT = "results/plan"


def _number(minimum: float | None = None, strict: bool = False) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{raw!r} is not a number") from None
        if not math.isfinite(value) or (minimum is not None and (value < minimum or (strict and value == minimum))):
            bound = "" if minimum is None else f" {'>' if strict else '>='} {minimum:g}"
            raise argparse.ArgumentTypeError(f"{raw} must be a finite number{bound}")
        return value

    return parse


def _int(minimum: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{raw!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below the minimum {minimum}")
        return value

    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``plan`` options (shared by the CLI and the workflow adapter); imports nothing heavy."""
    _prior_arguments(p.add_argument_group("priors"))
    _design_arguments(p.add_argument_group("design grid"))
    _target_arguments(p.add_argument_group("targets (at least one)"))
    _cost_arguments(p.add_argument_group("costs (defaults: the priors' Table 3 / pilot values)"))
    _simulation_arguments(p.add_argument_group("simulation"))
    p.add_argument("--out", type=Path, default=Path("results/plan"), help="output folder (default results/plan)")


def _prior_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--pilot",
        type=Path,
        default=None,
        help="pilot ratings: any source 'modprefs stats --ratings' takes (a folder of ratings/participants/trials "
        "tables, one long or wide table, a datasets folder, ...); default: the paper's priors",
    )
    g.add_argument(
        "--pilot-map",
        action="append",
        default=[],
        metavar="CANON=SOURCE[,...]",
        help="rename the pilot's foreign columns, e.g. rating=score,participant_id=worker (as 'modprefs stats --map')",
    )
    g.add_argument(
        "--pilot-clips", type=Path, default=None, help="clips.csv of the pilot (clip_id, prompt_id, n_chars)"
    )
    g.add_argument(
        "--quantiles", default="0.1,0.9", help="quantiles of the pessimistic / optimistic priors (default 0.1,0.9)"
    )
    g.add_argument(
        "--prior-boot", type=_int(10), default=60, help="parametric-bootstrap studies for the priors' uncertainty"
    )
    g.add_argument(
        "--scale",
        default=None,
        metavar="MIN:MAX[:STEP]",
        help="the study's rating scale (config study.scale), e.g. 1:5 or 0:10:0.5; the simulated (and a pilot's) "
        "ratings are on it and rating-unit targets are in its units (default: the paper's 1:100)",
    )


def _design_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--prompts", default="100", help="prompt counts, e.g. 40,100 or 40:120:20 (default 100)")
    g.add_argument("--raters", default="10:50:10", help="analysable raters per condition (default 10:50:10)")
    g.add_argument("--trials", default="20", help="rated trials per participant, at most the prompts (default 20)")
    g.add_argument("--conditions", default="both", help="both | audio | text (default both)")
    g.add_argument(
        "--clips",
        type=Path,
        default=None,
        help="clips.csv whose n_chars the simulated prompts draw from (default: PRISM-like lengths)",
    )


def _target_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--target-ci-half-width",
        type=_number(),
        default=None,
        help="half-width of the ICC(2,k) interval the analysis reports, per target condition",
    )
    g.add_argument("--target-icc-k", type=_number(), default=None, help="expected ICC(2,k) per target condition")
    g.add_argument("--target-conditions", default=None, help="conditions the ICC targets apply to (default: all run)")
    g.add_argument(
        "--assurance",
        type=_number(),
        default=0.8,
        help="share of studies that must meet the CI half-width target (default 0.8)",
    )
    g.add_argument(
        "--target-power-icc-diff",
        type=_number(),
        default=None,
        help="audio - text ICC(2,1) difference Table 4's test must detect",
    )
    g.add_argument(
        "--target-power-table2",
        type=_number(),
        default=None,
        help="Table 2 effect of --table2-term to detect, in units of the rating scale (--scale; observed ratings)",
    )
    g.add_argument("--table2-term", default="modality", help="modality (default) or modality:len_z")
    g.add_argument("--power", type=_number(), default=0.8, help="power the power targets need (default 0.8)")
    g.add_argument("--alpha", type=_number(), default=0.05, help="tests' significance level (default 0.05)")
    g.add_argument(
        "--target-agreement-half-width",
        type=_number(),
        default=None,
        help="95%% half-width of the cross-modality winner agreement",
    )


def _cost_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--pay-per-hour", type=_number(0), default=12.0, help="pay per participant hour (paper: 12)")
    g.add_argument("--fee-rate", type=_number(0), default=0.0, help="platform fee as a fraction of pay (default 0)")
    for c in CONDITIONS:
        g.add_argument(
            f"--minutes-per-trial-{c}",
            type=_number(0, strict=True),
            default=None,
            help=f"minutes one {c} trial takes (default: the priors')",
        )
        g.add_argument(
            f"--attention-fail-rate-{c}",
            type=_number(0),
            default=None,
            help=f"share of {c} participants failing the attention check (default: the priors')",
        )
        g.add_argument(
            f"--incomplete-rate-{c}",
            type=_number(0),
            default=None,
            help=f"share of {c} participants who do not finish (default: the priors')",
        )
    g.add_argument("--overhead-minutes", type=_number(0), default=None, help="minutes per session besides the trials")
    g.add_argument("--no-pay-failed", action="store_true", help="participants failing the attention check are not paid")


def _simulation_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--n-sims", type=_int(20), default=200, help="simulated studies per design and scenario (default 200)"
    )
    g.add_argument("--seed", type=_int(0), default=1, help="seed of the simulated studies and the priors' bootstrap")
    g.add_argument("--scenarios", default="pessimistic,central,optimistic", help="which priors to plan under")
    g.add_argument(
        "--interval",
        choices=("analysis", "sampling", "wald"),
        default="analysis",
        help="planning interval (modprefs.plan.intervals)",
    )
    g.add_argument(
        "--ci-method",
        default=None,
        help="the analysis' ICC CI method the interval is calibrated to (stats.icc_ci_method; the workflow passes "
        "it; default: the analysis' default, auto, which on the simulated designs -- raters rate a subset of "
        "prompts, with order covariates -- is the crossed jackknife)",
    )
    g.add_argument(
        "--ci-level",
        type=_number(),
        default=0.95,
        help="level of the planned interval (the workflow passes stats.ci_level)",
    )
    g.add_argument(
        "--n-boot", type=_int(20), default=100, help="resamples of the analysis' interval in the calibration"
    )
    g.add_argument("--n-calibration", type=_int(2), default=5, help="studies per calibrating design (default 5)")
    g.add_argument(
        "--calibration-designs",
        type=_int(1),
        default=5,
        help="designs of the grid that calibrate the interval, spread over it (default 5; the rest use the ratio "
        "model)",
    )
    g.add_argument(
        "--icc-test",
        choices=("calibrated", "jackknife", "permutation"),
        default=STATS_DEFAULTS["icc_test"],
        help="Table 4's test of the ICC difference that the power is planned for (the analysis' stats.icc_test)",
    )
    g.add_argument("--perm-draws", type=_int(1), default=1, help="permutation draws per study for the permutation test")
    g.add_argument("--jobs", type=_int(1), default=os.cpu_count() or 1, help="worker processes (default: all cores)")
    g.add_argument("--cache", type=Path, default=None, help="cache folder (default OUT/cache)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``modprefs plan``."""
    p = sub.add_parser(
        "plan",
        help="plan a study: prompts, raters, trials and cost for precision and power targets",
        description=__doc__.split("\n\n")[0],
    )
    add_arguments(p)
    return p


def _split(text: str, argument: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    from modprefs.plan.errors import PlanInputError

    items = tuple(x.strip() for x in str(text).split(",") if x.strip())
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise PlanInputError(f"{argument}: {bad or text!r} not among {list(allowed)}")
    return items


def _quantiles(text: str) -> tuple[float, float]:
    from modprefs.plan.errors import PlanInputError

    try:
        lo, hi = (float(x) for x in str(text).split(","))
    except ValueError:
        raise PlanInputError(f"--quantiles: {text!r} is not two numbers 'lo,hi'") from None
    if not 0 < lo < 0.5 < hi < 1:
        raise PlanInputError(f"--quantiles: need 0 < lo < 0.5 < hi < 1, got {lo}, {hi}")
    return lo, hi


def plan_from_args(args: argparse.Namespace) -> int:
    """Run a plan from parsed options; writes the outputs; returns the exit status (see the module docstring)."""
    from modprefs.plan.planner import make_plan
    from modprefs.plan.priors import SCENARIOS

    t0 = time.perf_counter()
    _check_plan_out(args.out)
    args.jobs = _capped_jobs(args.jobs)
    designs, targets = _designs_and_targets(args)
    costs = _costs(args, designs[0].conditions)
    scenarios = _split(args.scenarios, "--scenarios", SCENARIOS)
    settings = _settings(args, targets)
    cache = None if args.no_cache else (args.cache or args.out / "cache")
    priors = _priors(args, cache, _quantiles(args.quantiles), _scale(args.scale))
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


def _check_effect_on_scale(targets, scale: RatingScale) -> None:
    """A Table 2 effect (rating points) smaller than the scale's range: no modality difference can be larger."""
    from modprefs.plan.errors import PlanInputError

    effect = targets.table2_effect
    if effect is not None and abs(effect) >= scale.span:
        raise PlanInputError(
            f"--target-power-table2: {effect:g} rating points is not smaller than the range of the rating scale "
            f"{scale.min:g}-{scale.max:g} ({scale.span:g} points; --scale), so no difference between the modalities "
            "can be that large: give the effect in the scale's units"
        )


def _designs_and_targets(args: argparse.Namespace):
    """The design grid and the targets (checked against the grid's conditions and the rating scale)."""
    from modprefs.plan.grid import CONDITION_CHOICES, Targets, design_grid, parse_int_list

    designs = design_grid(
        parse_int_list(args.prompts, "--prompts", 2),
        parse_int_list(args.raters, "--raters", 2),
        parse_int_list(args.trials, "--trials", 1),
        args.conditions,
    )
    conditions = CONDITION_CHOICES[args.conditions]
    target_conditions = (
        conditions
        if args.target_conditions is None
        else _split(args.target_conditions, "--target-conditions", conditions)
    )
    targets = Targets(
        ci_half_width=args.target_ci_half_width,
        icc_k=args.target_icc_k,
        icc_diff=args.target_power_icc_diff,
        table2_effect=args.target_power_table2,
        table2_term=args.table2_term,
        agreement_half_width=args.target_agreement_half_width,
        target_conditions=target_conditions,
        assurance=args.assurance,
        power=args.power,
        alpha=args.alpha,
        ci_level=args.ci_level,
    )
    targets.check(conditions)
    _check_effect_on_scale(targets, _scale(args.scale))
    return designs, targets


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


def _scale(text: str | None) -> RatingScale:
    """``--scale`` as a :class:`~modprefs.scale.RatingScale` (the paper's 1..100 when not given)."""
    from modprefs.plan.errors import PlanInputError
    from modprefs.scale import PAPER_SCALE, parse_scale_arg

    if text is None:
        return PAPER_SCALE
    try:
        return parse_scale_arg(text)
    except ValueError as exc:
        raise PlanInputError(str(exc)) from None


def config_block_problems(block: dict | None, study_scale: dict | None = None) -> list[str]:
    """What is wrong with the workflow's ``plan:`` block, found as ``modprefs plan`` would find it at its start
    (options, grid ranges, targets), with each option named as its config key (``plan.raters``); [] if none.

    Run when the workflow starts, so that a grid that can never run is not planned by ``snakemake -n``.
    """
    import re

    from modprefs.errors import UserInputError

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str):  # type: ignore[override]  # argparse would exit
            raise UserInputError(message)

    def as_key(text: str) -> str:
        text = text.replace("unrecognized arguments: ", "unknown key(s) or values: ")
        return re.sub(r"--([a-z0-9-]+)", lambda m: "plan." + m.group(1).replace("-", "_"), text)

    block = block or {}
    if "out" in block:
        return [
            f"plan.out: {block['out']!r}: the workflow writes the plan to {WORKFLOW_PLAN_OUT} (rule plan); leave "
            "plan.out out, or run `modprefs plan --out DIR` for another folder"
        ]
    parser = _Parser(prog="plan", add_help=False)
    add_arguments(parser)
    try:
        args = parser.parse_args(scale_option(study_scale) + options_from_config(block))
        _designs_and_targets(args)
        _quantiles(args.quantiles)
    except UserInputError as err:
        return [as_key(str(err))]
    return []


def scale_option(study_scale: dict | None) -> list[str]:
    """The workflow's ``study.scale`` mapping as the ``--scale=MIN:MAX:STEP`` argument (for rules/plan.smk)."""
    from modprefs.scale import scale_from_config

    sc = scale_from_config(dict(study_scale or {}))
    return [f"--scale={sc.min:g}:{sc.max:g}:{sc.step:g}"]


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


def options_from_config(block: dict | None) -> list[str]:
    """The workflow's ``plan:`` config block as ``modprefs plan`` arguments (keys are the long options
    with ``_`` for ``-``; ``true`` flags are given bare, ``false`` / null ones left out)."""
    argv: list[str] = []
    for key, value in (block or {}).items():
        flag = "--" + str(key).replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, dict):  # a column map: {canonical: source}
            argv += [flag, ",".join(f"{k}={v}" for k, v in value.items())]
        elif isinstance(value, (list, tuple)):
            argv += [flag, ",".join(str(v) for v in value)]
        else:
            argv += [flag, str(value)]
    return argv
