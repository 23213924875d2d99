"""The options of ``modprefs plan`` and the workflow's ``plan:`` config block read as them.

:func:`add_arguments` declares every option (``modprefs plan`` and workflow/scripts/plan.py parse with it);
:func:`options_from_config` turns the ``plan:`` block into those options, and :func:`config_block_problems`
checks the block at the workflow's start (:mod:`modprefs.config_checks`) as the command would at its own, without
importing the command itself.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from modprefs.cli_args import number, whole
from modprefs.stats.defaults import STATS_DEFAULTS
from modprefs.study.terms import CONDITIONS

if TYPE_CHECKING:
    from modprefs.scale import RatingScale

#: where the workflow's rule plan writes (rules/plan.smk): the config's plan block cannot move it
WORKFLOW_PLAN_OUT = "results/plan"


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
        "--prior-boot", type=whole(10), default=60, help="parametric-bootstrap studies for the priors' uncertainty"
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
        type=number(),
        default=None,
        help="half-width of the ICC(2,k) interval the analysis reports, per target condition",
    )
    g.add_argument("--target-icc-k", type=number(), default=None, help="expected ICC(2,k) per target condition")
    g.add_argument("--target-conditions", default=None, help="conditions the ICC targets apply to (default: all run)")
    g.add_argument(
        "--assurance",
        type=number(),
        default=0.8,
        help="share of studies that must meet the CI half-width target (default 0.8)",
    )
    g.add_argument(
        "--target-power-icc-diff",
        type=number(),
        default=None,
        help="audio - text ICC(2,1) difference Table 4's test must detect",
    )
    g.add_argument(
        "--target-power-table2",
        type=number(),
        default=None,
        help="Table 2 effect of --table2-term to detect, in units of the rating scale (--scale; observed ratings)",
    )
    g.add_argument("--table2-term", default="modality", help="modality (default) or modality:len_z")
    g.add_argument("--power", type=number(), default=0.8, help="power the power targets need (default 0.8)")
    g.add_argument("--alpha", type=number(), default=0.05, help="tests' significance level (default 0.05)")
    g.add_argument(
        "--target-agreement-half-width",
        type=number(),
        default=None,
        help="95%% half-width of the cross-modality winner agreement",
    )


def _cost_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--pay-per-hour", type=number(0), default=12.0, help="pay per participant hour (paper: 12)")
    g.add_argument("--fee-rate", type=number(0), default=0.0, help="platform fee as a fraction of pay (default 0)")
    for c in CONDITIONS:
        g.add_argument(
            f"--minutes-per-trial-{c}",
            type=number(0, strict=True),
            default=None,
            help=f"minutes one {c} trial takes (default: the priors')",
        )
        g.add_argument(
            f"--attention-fail-rate-{c}",
            type=number(0),
            default=None,
            help=f"share of {c} participants failing the attention check (default: the priors')",
        )
        g.add_argument(
            f"--incomplete-rate-{c}",
            type=number(0),
            default=None,
            help=f"share of {c} participants who do not finish (default: the priors')",
        )
    g.add_argument("--overhead-minutes", type=number(0), default=None, help="minutes per session besides the trials")
    g.add_argument("--no-pay-failed", action="store_true", help="participants failing the attention check are not paid")


def _simulation_arguments(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--n-sims", type=whole(20), default=200, help="simulated studies per design and scenario (default 200)"
    )
    g.add_argument("--seed", type=whole(0), default=1, help="seed of the simulated studies and the priors' bootstrap")
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
        type=number(),
        default=0.95,
        help="level of the planned interval (the workflow passes stats.ci_level)",
    )
    g.add_argument(
        "--n-boot", type=whole(20), default=100, help="resamples of the analysis' interval in the calibration"
    )
    g.add_argument("--n-calibration", type=whole(2), default=5, help="studies per calibrating design (default 5)")
    g.add_argument(
        "--calibration-designs",
        type=whole(1),
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
    g.add_argument(
        "--perm-draws", type=whole(1), default=1, help="permutation draws per study for the permutation test"
    )
    g.add_argument("--jobs", type=whole(1), default=os.cpu_count() or 1, help="worker processes (default: all cores)")
    g.add_argument("--cache", type=Path, default=None, help="cache folder (default OUT/cache)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")


def split_choices(text: str, argument: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    from modprefs.plan.errors import PlanInputError

    items = tuple(x.strip() for x in str(text).split(",") if x.strip())
    bad = [x for x in items if x not in allowed]
    if bad or not items:
        raise PlanInputError(f"{argument}: {bad or text!r} not among {list(allowed)}")
    return items


def parse_quantiles(text: str) -> tuple[float, float]:
    from modprefs.plan.errors import PlanInputError

    try:
        lo, hi = (float(x) for x in str(text).split(","))
    except ValueError:
        raise PlanInputError(f"--quantiles: {text!r} is not two numbers 'lo,hi'") from None
    if not 0 < lo < 0.5 < hi < 1:
        raise PlanInputError(f"--quantiles: need 0 < lo < 0.5 < hi < 1, got {lo}, {hi}")
    return lo, hi


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


def designs_and_targets(args: argparse.Namespace):
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
        else split_choices(args.target_conditions, "--target-conditions", conditions)
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
    _check_effect_on_scale(targets, plan_scale(args.scale))
    return designs, targets


def plan_scale(text: str | None) -> RatingScale:
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
        designs_and_targets(args)
        parse_quantiles(args.quantiles)
    except UserInputError as err:
        return [as_key(str(err))]
    return []


def scale_option(study_scale: dict | None) -> list[str]:
    """The workflow's ``study.scale`` mapping as the ``--scale=MIN:MAX:STEP`` argument (for rules/plan.smk)."""
    from modprefs.scale import scale_from_config

    sc = scale_from_config(dict(study_scale or {}))
    return [f"--scale={sc.min:g}:{sc.max:g}:{sc.step:g}"]


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
