"""``modprefs stats``: the statistics and report on ratings collected anywhere.

    modprefs stats --ratings SOURCE [--clips clips.csv] --out DIR [--scale MIN:MAX[:STEP]] [--overwrite]
                   [--map CANON=SOURCE,...] [--judges F] [--modality-terms F] [--seed N] [--n-boot N]
                   [--n-perm N] [--n-boot-alpha N] [--n-perm-alpha N] [--ci-level X] [--ci-method M]
                   [--threads N]

``SOURCE`` is any ratings source (:mod:`modprefs.ratings.sources`): a folder with ratings.csv
(+ trials.csv, participants.csv) in the workflow's schemas, one CSV/TSV/Parquet table (long, or
wide with rating_0/rating_1), a ``datasets`` save_to_disk folder, a folder of data files, or
``hf://owner/name``; only participant, clip (or prompt + response) and rating are required
(without a condition column every rating is one condition, analysed as text), ``--map`` renames
foreign columns. Ratings must be on ``--scale`` (default: a published dataset's own, else the paper's
1:100; e.g. 1:5, 0:10,
0:100, 1:7:0.5); statistics in rating units (gaps, thresholds, coefficients, AI-human errors) are
in its units, and AI judge ratings (1..100) are mapped onto it. ``clips.csv`` has clip_id,
prompt_id and optionally response (else read from the clip id's ``_N``) and n_chars; without
``--clips`` a published dataset's own clips (n_chars from its response texts), else the clips come
from the ratings: prompt_id + response columns, ``{prompt}_{response}``
clip ids, or else each clip is its own item (a single-stimulus, MOS-style design). Any number of
responses per prompt: the analyses of rating pairs (thresholds, winners, preference scores, Table
6) need the paper's two (0 and 1) and are otherwise skipped with that reason. Every input and
argument is checked before anything is written (every problem with file, row and column; exit
status 2, no traceback). The results are built in a temporary folder beside ``--out`` and moved
into place when complete: ratings/ (the validated tables), tables/, figures/, report.html. A
non-empty ``--out`` is refused unless ``--overwrite``, which replaces it whole; an ``--out`` that cannot be
written (a file, under a file, in /proc, /sys or /dev, a parent without write permission) is refused
before any work. Ctrl-C and SIGTERM remove the temporary folder and exit 130 and 143 with a one-line
message (:mod:`modprefs.output_folder`). Analyses whose
columns are absent are skipped with the missing column named (printed, and in the report). The
defaults are the workflow's (:data:`modprefs.stats.defaults.STATS_DEFAULTS`, the config's
study.scale default), so both give identical tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from modprefs.cli_args import add_threads_arg, count, level, pinned_threads, scale_arg, slope_alpha
from modprefs.errors import UserInputError
from modprefs.output_folder import (
    Terminated,
    output_folder_problem,
    report_stopped,
    staged_folder,
    terminate_raises,
)
from modprefs.scale import PAPER_SCALE, RatingScale
from modprefs.stats.defaults import STATS_DEFAULTS, STATS_SCALE

REPO = Path(__file__).resolve().parents[3]
TABLE_ANALYSES = (
    "table1",
    "table2",
    "table3",
    "decision_thresholds",
    "table4",
    "raters_needed",
    "cross_modality",
    "modality_effects",
    "justifications",
)
CI_METHODS = (  # stats.reliability.icc_ci.CI_METHODS
    "auto",
    "f_based",
    "jackknife",
    "stimulus",
    "prompt",
    "two_way",
    "parametric",
)
#: modprefs.stats.tables.modality.TABLE2_RANDOM (both kept import-free)
TABLE2_RANDOM = ("participant_slopes", "stimulus_modality", "paper")


class _ScaleNotGiven:
    """``--scale``'s default, shown as :data:`STATS_SCALE`: the scale a published dataset records, else that one."""

    def __str__(self) -> str:
        return STATS_SCALE


def _scale(text: str) -> RatingScale:
    """argparse type: ``MIN:MAX[:STEP]`` (:func:`modprefs.cli_args.scale_arg`); 1:100 is the paper's scale."""
    scale = scale_arg(text)
    return PAPER_SCALE if scale.is_paper else scale


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    st = sub.add_parser(
        "stats",
        help="statistics and report from ratings collected elsewhere",
        description=__doc__.split("\n\n")[2],
    )
    st.add_argument(
        "--ratings",
        required=True,
        metavar="SOURCE",
        help="ratings source: folder with ratings.csv [trials.csv participants.csv], a CSV/TSV/Parquet "
        "table (long or wide), a datasets save_to_disk folder, a folder of data files, or "
        "hf://owner/name",
    )
    st.add_argument(
        "--clips",
        type=Path,
        default=None,
        help="clips/stimuli table: clip_id, prompt_id [, response, n_chars, prism_score]; without it the clips "
        "come from the ratings (prompt_id + response, {prompt}_{response} clip ids, or each clip its own item)",
    )
    st.add_argument(
        "--scale",
        type=_scale,
        default=_ScaleNotGiven(),
        metavar="MIN:MAX[:STEP]",
        help="the rating scale every rating (and audio quality) must be on, e.g. 1:5, 0:10, 0:100, 1:7:0.5; "
        "thresholds, gaps and coefficients are in its units; when not given: the scale a dataset published by "
        "`modprefs publish` records (one that disagrees with it is refused), else the default",
    )
    st.add_argument(
        "--out",
        type=Path,
        required=True,
        help="output folder: ratings/, tables/, figures/, report.html (must be empty or absent unless --overwrite)",
    )
    st.add_argument("--overwrite", action="store_true", help="replace a non-empty --out as a whole")
    st.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="CANON=SOURCE[,...]",
        help="rename foreign columns, e.g. rating=score,clip_id=stimulus (repeatable; canonical names "
        "as in workflow/schemas, plus rating_0/rating_1/first_clip for wide tables)",
    )
    st.add_argument(
        "--judges",
        type=Path,
        default=None,
        help="AI judge ratings (results/judges/ratings.csv columns) for Tables 5-6; without it they are skipped",
    )
    st.add_argument(
        "--modality-terms",
        type=Path,
        default=REPO / STATS_DEFAULTS["modality_terms"],
        help="words left out of the justification analysis",
    )
    _add_stats_resampling_args(st)
    add_threads_arg(st)
    return st


def _add_stats_resampling_args(st: argparse.ArgumentParser) -> None:
    """``stats``' options on the seed, the intervals, the resampling counts and the ICC test."""
    st.add_argument(
        "--seed", type=count, default=STATS_DEFAULTS["seed"], help="seed of every bootstrap and permutation stream"
    )
    st.add_argument(
        "--n-boot",
        type=count,
        default=STATS_DEFAULTS["n_boot"],
        help="bootstrap resamples for the ICC intervals (0 = no intervals)",
    )
    st.add_argument(
        "--ci-method",
        choices=CI_METHODS,
        default=STATS_DEFAULTS["icc_ci_method"],
        help="ICC interval: auto = McGraw & Wong's F interval where a condition's ratings are complete and balanced "
        "(a prompt's pair of clips taken as items), without covariates, its df shrunk to the ratings' variability, "
        "unless tests of its assumptions reject (p < .05) or the crossed jackknife's interval is more than 1 + 4/k "
        "times as wide (k raters), else the crossed jackknife "
        "over prompts and participants (jackknife; "
        "measured coverage and width in benchmarks/out/icc_coverage.md, icc_interval_width.md), or a bootstrap "
        "of clips (stimulus, the paper's), prompts (prompt), clips and participants (two_way), or new data from "
        "the fitted model (parametric)",
    )
    st.add_argument(
        "--table2-random",
        choices=sorted(TABLE2_RANDOM),
        default=STATS_DEFAULTS["table2_random"],
        help="Table 2's random effects: by-participant order and trial slopes + (1|clip) + (1|clip:modality), "
        "simplified when singular (participant_slopes), (1|participant) + (1|clip) + (1|clip:modality) "
        "(stimulus_modality) or the paper's (1|participant) + (1|clip) (paper)",
    )
    st.add_argument(
        "--table2-slope-alpha",
        type=slope_alpha,
        default=STATS_DEFAULTS["table2_slope_alpha"],
        help="participant_slopes keeps the slopes only where their likelihood-ratio test against (1|participant) "
        "gives p <= this (Matuschek et al. 2017); 1 keeps every regular slope fit",
    )
    st.add_argument(
        "--icc-test",
        choices=("calibrated", "jackknife", "permutation"),
        default=STATS_DEFAULTS["icc_test"],
        help="Table 4's test of the audio - text ICC difference: the crossed-jackknife t test with its variance "
        "calibrated under H0 (calibrated), uncalibrated (jackknife), or the paper's participant permutation, which "
        "also selects the paper's alpha test (modprefs.stats.reliability.icc_difference)",
    )
    st.add_argument(
        "--n-perm",
        type=count,
        default=STATS_DEFAULTS["n_perm"],
        help="participant permutations for the ICC modality test",
    )
    st.add_argument(
        "--n-boot-alpha",
        type=count,
        default=STATS_DEFAULTS["n_boot_alpha"],
        help="bootstrap resamples for Krippendorff's alpha intervals",
    )
    st.add_argument(
        "--n-perm-alpha",
        type=count,
        default=STATS_DEFAULTS["n_perm_alpha"],
        help="participant permutations for the alpha modality test",
    )
    st.add_argument(
        "--n-boot-threshold",
        type=count,
        default=STATS_DEFAULTS["n_boot_threshold"],
        help="participant resamples for the binarisation thresholds' intervals (0 = none)",
    )
    st.add_argument(
        "--ci-level",
        type=level,
        default=STATS_DEFAULTS["ci_level"],
        help="two-sided level of every interval, in (0, 1)",
    )


def _check_out(out: Path, overwrite: bool, inputs: list[Path]) -> None:
    """``--out`` is absent, an empty folder, or (with ``--overwrite``) a folder that holds no input and not the
    working directory -- it is replaced as a whole."""
    problem = output_folder_problem(out)
    if problem:
        raise UserInputError(problem)
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise UserInputError(
                f"--out {out}: the folder is not empty; pass --overwrite to replace it as a whole "
                "(or choose another folder)"
            )
        here, target = Path.cwd().resolve(), out.resolve()
        if target == here or target in here.parents:
            raise UserInputError(f"--out {out}: is the working directory or holds it; --overwrite would replace it")
        for path in inputs:
            if target in path.resolve().parents or path.resolve() == target:
                raise UserInputError(f"--out {out}: holds the input {path}; --overwrite would delete it")


def _check_text_file(path: Path, option: str) -> None:
    from modprefs.file_access import file_problem  # noqa: PLC0415

    problem = file_problem(path)
    if problem:
        raise UserInputError(f"{option} {path}: {problem}")
    try:
        path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UserInputError(
            f"{option} {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}); save it as UTF-8"
        ) from None


def _read_judges(path: Path) -> Any:
    from modprefs.io_tables import read_table  # noqa: PLC0415
    from modprefs.stats.tables.ai_alignment import JUDGE_COLUMNS  # noqa: PLC0415

    judges = read_table(path, what=f"--judges {path}")
    missing = [c for c in JUDGE_COLUMNS if c not in judges.columns]
    if missing:
        raise UserInputError(
            f"--judges {path}: missing column(s) {missing} (results/judges/ratings.csv has {list(JUDGE_COLUMNS)})"
        )
    return judges


def run_stats(
    ratings: str | Path,
    clips: Path | None,
    out: Path,
    params: dict,
    judges: Path | None = None,
    columns: dict[str, str] | None = None,
    overwrite: bool = False,
) -> list[str]:
    """Validate every input, analyse, write ``out`` atomically; returns the skipped outputs with reasons.

    ``params``: :data:`~modprefs.stats.defaults.STATS_DEFAULTS` keys (``modality_terms`` a path) and optionally
    ``scale`` (a ``study.scale`` mapping; default the paper's 1..100). ``clips`` None: the clips are derived
    from the ratings (:func:`modprefs.ratings.sources.stimuli_from_ratings`).
    Raises a :class:`~modprefs.errors.UserInputError` (before anything is written) for any bad input.
    """
    from modprefs.ratings.ingest import ingest_ratings  # noqa: PLC0415
    from modprefs.ratings.read import read_stimuli  # noqa: PLC0415
    from modprefs.stats.tables.analyses import study_scale  # noqa: PLC0415

    out = Path(out)
    _check_out(
        out,
        overwrite,
        [
            Path(str(ratings)),
            *([Path(clips)] if clips is not None else []),
            Path(params["modality_terms"]),
            *([Path(judges)] if judges is not None else []),
        ],
    )
    _check_text_file(Path(params["modality_terms"]), "--modality-terms")
    stimuli = read_stimuli(clips, what=f"--clips {clips}") if clips is not None else None
    judge_table = _read_judges(judges) if judges is not None else None
    valid = ingest_ratings(ratings, stimuli, columns or {}, scale=study_scale(params))
    stimuli = valid.stimuli
    with staged_folder(out) as tmp:
        skipped, notes = _analyse(
            valid,
            stimuli,
            judge_table,
            (tmp, out),
            params,
            report_config(ratings, clips, judges, columns or {}, params),
        )
    return skipped


def report_config(
    ratings: str | Path, clips: Path | None, judges: Path | None, columns: dict[str, str], params: dict
) -> dict[str, Any]:
    """The run's settings in the workflow config's shape, for the report (which reads ``study.scale`` and
    ``stats.*`` as it does from a workflow run, and shows this as the run's configuration).

    ``study.scale``: the scale the statistics used (:func:`modprefs.stats.tables.analyses.study_scale` of
    ``params``, as a ``study.scale`` mapping); ``stats``: the resampling and interval settings; ``seed`` at the
    top level as in config.yaml; ``inputs``: the ratings source, ``--map``, ``--clips`` and ``--judges``.
    """
    from modprefs.stats.tables.analyses import study_scale  # noqa: PLC0415

    return {
        "seed": params["seed"],
        "inputs": {
            "ratings": str(ratings),
            "columns": dict(columns),
            "clips": str(clips) if clips is not None else None,
            "judges": str(judges) if judges is not None else None,
        },
        "study": {"scale": study_scale(params).as_config()},
        "stats": {k: v for k, v in params.items() if k not in ("seed", "scale")},
    }


def _analyse(
    valid: Any, stimuli: Any, judges: Any, staged: tuple[Path, Path], params: dict, config: dict
) -> tuple[list[str], list[str]]:
    """Write the validated tables under ``tmp/ratings`` (``staged``: the staging folder ``tmp`` and the ``--out`` it
    becomes, which progress lines name), read them back as the workflow does, run everything."""
    from modprefs.io import write_text  # noqa: PLC0415
    from modprefs.ratings.ingest import write_valid  # noqa: PLC0415
    from modprefs.ratings.read import pairs_reason, read_study  # noqa: PLC0415
    from modprefs.report.html import coverage_note, table2_note  # noqa: PLC0415
    from modprefs.report.measured import alpha_test_size, icc_test_size, table2_size  # noqa: PLC0415
    from modprefs.report.study_report import ReportInputs, folder_inputs, render_study_report  # noqa: PLC0415
    from modprefs.stats.tables.analyses import (  # noqa: PLC0415
        OUTPUTS,
        icc_table,
        run_analysis,
        scale_label,
        study_scale,
    )
    from modprefs.stats.tables.outputs import output_paths, write_result  # noqa: PLC0415

    tmp = staged[0]
    paths = {t: tmp / "ratings" / f"{t}.csv" for t in ("ratings", "trials", "participants")}
    write_valid(valid, paths)
    study = read_study(paths, stimuli=stimuli)
    tables = study.tables
    skipped: list[str] = []

    def emit(result: Any, table_names: tuple[str, ...], figure_names: tuple[str, ...]) -> None:
        write_result(result, output_paths(table_names, figure_names, tmp), staged)
        for name, table in result.tables.items():
            if list(table.columns) == ["status", "reason"] and (table["status"] == "skipped").all():
                skipped.append(f"{name}: {table['reason'].iloc[0]}")

    icc = icc_table(tables, params)
    emit(icc, ("icc",), ())
    tables["icc"] = icc.tables["icc"]
    analyses = list(TABLE_ANALYSES)
    if judges is None:
        skipped.append("table5, table6: no AI judge ratings given (--judges results/judges/ratings.csv)")
    else:
        tables["judges"] = judges
        study.present["judges"] = frozenset(judges.columns)
        analyses += ["table5", "table6"]
    for name in analyses:
        emit(run_analysis(name, tables, params, study.present), *OUTPUTS[name])
    notes = [*valid.notes, *(n for n in study.notes if n not in valid.notes)]
    scale, design = study_scale(params), pairs_reason(stimuli)
    notes.append(  # on every scale, the paper's too: the report states the scale its numbers are in
        f"rating scale {scale_label(scale)}: means, gaps, thresholds, errors and coefficients are in its units"
    )
    if design:
        notes.append(f"not the paper's pairwise design: the analyses of rating pairs are skipped ({design})")
    notes += [f"skipped {s}" for s in skipped]
    if (tables["ratings"]["source"].astype(str) == "simulated").any():
        notes.insert(0, "The ratings are SIMULATED.")
    notes += [
        coverage_note(params["icc_ci_method"], REPO / "benchmarks" / "out" / "icc_coverage.json"),
        table2_note(params["table2_random"], REPO / "benchmarks" / "out" / "table2_null.json"),
    ]
    bench = REPO / "benchmarks" / "out"
    sizes = {
        "icc": icc_test_size(str(params.get("icc_test", "calibrated")), bench / "icc_difference_null_v2.json"),
        "alpha": alpha_test_size(str(params.get("icc_test", "calibrated")), bench / "alpha_difference_null.json"),
        "table2": table2_size(params["table2_random"], [bench / "table2_null.json", bench / "table2_null_slopes.json"]),
    }
    table_paths, figure_paths = folder_inputs(tmp)
    report = ReportInputs(
        tables=table_paths,
        figures=figure_paths,
        config=config,
        ratings=paths["ratings"],
        notes=notes,
        measured_sizes={k: v for k, v in sizes.items() if v},
    )
    write_text(render_study_report(report), tmp / "report.html")
    return skipped, notes


def run(args: argparse.Namespace) -> int:
    """``modprefs stats`` from its parsed options: 0 when written, 2 for a bad input, 130/143 when stopped."""
    params = {
        k: getattr(args, k)
        for k in ("seed", "n_boot", "n_perm", "n_boot_alpha", "n_perm_alpha", "n_boot_threshold", "ci_level")
    }
    params.update(
        icc_ci_method=args.ci_method,
        table2_random=args.table2_random,
        table2_slope_alpha=args.table2_slope_alpha,
        icc_test=args.icc_test,
        modality_terms=str(args.modality_terms),
    )
    try:
        from modprefs.ratings.sources import parse_column_map  # noqa: PLC0415
        from modprefs.ratings.sources_published import scale_for  # noqa: PLC0415

        given = None if isinstance(args.scale, _ScaleNotGiven) else args.scale
        params["scale"] = scale_for(args.ratings, given, _scale(STATS_SCALE)).as_config()
        with pinned_threads(args.threads), terminate_raises():
            skipped = run_stats(
                args.ratings, args.clips, args.out, params, args.judges, parse_column_map(args.map), args.overwrite
            )
    except UserInputError as exc:
        print(f"modprefs stats: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        return report_stopped("modprefs stats", exc, args.out)
    for s in skipped:
        print(f"skipped {s}", file=sys.stderr)
    print(f"wrote {args.out}/ratings, {args.out}/tables, {args.out}/figures and {args.out}/report.html")
    return 0
