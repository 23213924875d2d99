"""Command line: ``modprefs stats`` runs the statistics on ratings collected anywhere.

    modprefs stats --ratings DIR --clips clips.csv --out DIR [--seed N] [--n-boot N] [--n-perm N]
                   [--n-boot-alpha N] [--n-perm-alpha N] [--ci-level X]

``DIR`` holds ratings.csv, trials.csv and participants.csv in the workflow's schemas
(``workflow/schemas/``); ``clips.csv`` has clip_id, prompt_id, n_chars (response, the clip's response
index 0/1, is read from the clip id's ``_0``/``_1`` suffix when absent). The inputs are validated
first (every problem with file, row and column); then the same tables, figures and report as the
workflow's statistics stage are written under ``--out`` (tables/, figures/, report.html).
Analyses whose inputs are absent are skipped with the reason printed and logged.

``modprefs app ...`` (load, serve, invite, export, status) runs the annotation web app that collects
such ratings with the paper's protocol: see docs/app.md and modprefs.app.cli.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import pandas as pd

from modprefs.io import write_csv, write_markdown_table, write_text

log = logging.getLogger("modprefs")

TABLE_ANALYSES = ("table1", "table2", "table3", "decision_thresholds", "table4", "raters_needed",
                  "cross_modality", "modality_effects", "justifications")


def read_clips(path: Path) -> pd.DataFrame:
    """clips.csv -> a stimuli table (prompt_id, clip_id, response, n_chars); errors name the column."""
    clips = pd.read_csv(path, dtype={"clip_id": str, "prompt_id": str})
    missing = [c for c in ("clip_id", "prompt_id", "n_chars") if c not in clips.columns]
    if missing:
        raise SystemExit(f"{path}: missing column(s) {missing} (need clip_id, prompt_id, n_chars)")
    if "response" not in clips.columns:
        suffix = clips["clip_id"].str.extract(r"_([01])$")[0]
        bad = clips.index[suffix.isna()]
        if len(bad):
            raise SystemExit(f"{path}: row {bad[0] + 2}, column clip_id: {clips.loc[bad[0], 'clip_id']!r} has no _0/_1 "
                             "suffix; add a `response` column (0/1)")
        clips["response"] = suffix.astype(int)
    return clips


def assignments_from_ratings(ratings: pd.DataFrame, stimuli: pd.DataFrame) -> pd.DataFrame:
    """The assignments a ratings table implies: first_clip = the response index presented first."""
    first = ratings[ratings["presented_first"].astype(str).str.lower().isin(["true", "1"])]
    response = first["clip_id"].astype(str).str.extract(r"_([01])$")[0].astype(int)
    out = first[["participant_id", "condition", "trial", "prompt_id"]].assign(first_clip=response.to_numpy())
    return out.sort_values(["participant_id", "trial"]).reset_index(drop=True)


def run_stats(ratings_dir: Path, clips: Path, out: Path, params: dict, judges: Path | None = None) -> list[str]:
    """Validate, analyse and write; returns the skipped analyses with reasons.

    ``judges``: an AI judge table (results/judges/ratings.csv columns) for Tables 5-6; without it
    they are skipped with that reason.
    """
    from modprefs.ratings.ingest import validate_ratings_dir
    from modprefs.report.html import build_report
    from modprefs.stats.analyses import ANALYSES
    from modprefs.stats.icc import icc_by_condition

    stimuli = read_clips(clips)
    validate_ratings_dir(ratings_dir, stimuli)
    # Once valid, read the files as the workflow's statistics rules do (plain CSV dtypes).
    ids = {c: str for c in ("participant_id", "prompt_id", "clip_id", "preference")}
    tables = {t: pd.read_csv(ratings_dir / f"{t}.csv", dtype=ids) for t in ("ratings", "trials", "participants")}
    if "source" not in tables["ratings"].columns:
        tables["ratings"]["source"] = "collected"
    tables["stimuli"] = stimuli
    tables["assignments"] = assignments_from_ratings(tables["ratings"], stimuli)
    tables["icc"] = icc_by_condition(tables["ratings"], tables["participants"], params["n_boot"], params["seed"],
                                     params["ci_level"], stimuli)
    written: list[tuple[str, object]] = []
    figures: list[tuple[str, Path]] = []

    def emit(name: str, table: pd.DataFrame, title: str | None) -> None:
        write_csv(table, out / "tables" / f"{name}.csv")
        write_markdown_table(table, out / "tables" / f"{name}.md", title=title, floatfmt=".4g")
        written.append((title or name, table))

    emit("icc", tables["icc"], "ICC per condition (stimulus bootstrap)")
    skipped = []
    analyses = list(TABLE_ANALYSES)
    if judges is None:
        skipped.append("table5, table6: no AI judge ratings given (--judges results/judges/ratings.csv)")
    else:
        tables["judges"] = pd.read_csv(judges, dtype={"prompt_id": str, "clip_id": str})
        analyses += ["table5", "table6"]
    for name in analyses:
        if name == "justifications" and tables["trials"]["justification"].fillna("").astype(str).str.strip().eq("").all():
            skipped.append(f"{name}: no written justifications in trials.csv")
            continue
        try:
            result = ANALYSES[name](tables, params)
        except (ValueError, KeyError) as exc:
            skipped.append(f"{name}: {exc}")
            continue
        for tname, table in result.tables.items():
            emit(tname, table, result.titles.get(tname))
        for fname, draw in result.figures.items():
            path = out / "figures" / f"{fname}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            draw(str(path))
            figures.append((fname.replace("_", " "), path))
    notes = [f"skipped {s}" for s in skipped]
    if (tables["ratings"]["source"].astype(str) == "simulated").any():
        notes.insert(0, "The ratings are SIMULATED.")
    config = {"ratings": str(ratings_dir), "clips": str(clips), **{k: v for k, v in params.items()}}
    write_text(build_report([("Tables", written), ("Figures", figures)], config, notes), out / "report.html")
    return skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="modprefs", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    st = sub.add_parser("stats", help="statistics and report from ratings collected elsewhere")
    st.add_argument("--ratings", type=Path, required=True, help="folder with ratings.csv, trials.csv, participants.csv")
    st.add_argument("--clips", type=Path, required=True, help="clips.csv: clip_id, prompt_id, n_chars [, response]")
    st.add_argument("--out", type=Path, required=True)
    st.add_argument("--judges", type=Path, default=None,
                    help="AI judge ratings (results/judges/ratings.csv columns) for Tables 5-6")
    st.add_argument("--seed", type=int, default=1)
    st.add_argument("--n-boot", type=int, default=2000)
    st.add_argument("--n-perm", type=int, default=2000)
    st.add_argument("--n-boot-alpha", type=int, default=5000)
    st.add_argument("--n-perm-alpha", type=int, default=5000)
    st.add_argument("--ci-level", type=float, default=0.95)
    st.add_argument("--modality-terms", type=Path,
                    default=Path(__file__).resolve().parents[2] / "resources/analysis/modality_terms.txt")
    from modprefs.app.cli import add_parser as add_app_parser  # `modprefs app ...` (docs/app.md)

    add_app_parser(sub)
    from modprefs.plan.cli import add_parser as add_plan_parser  # `modprefs plan ...` (docs/plan.md)

    add_plan_parser(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.command == "app":
        from modprefs.app.cli import run as run_app

        return run_app(args)
    if args.command == "plan":
        from modprefs.plan.cli import run as run_plan

        return run_plan(args)
    from modprefs.ratings.ingest import RatingsValidationError

    params = {"seed": args.seed, "n_boot": args.n_boot, "n_perm": args.n_perm, "n_boot_alpha": args.n_boot_alpha,
              "n_perm_alpha": args.n_perm_alpha, "ci_level": args.ci_level, "modality_terms": str(args.modality_terms)}
    try:
        skipped = run_stats(args.ratings, args.clips, args.out, params, args.judges)
    except RatingsValidationError as exc:
        print(exc, file=sys.stderr)
        return 2
    for s in skipped:
        print(f"skipped {s}", file=sys.stderr)
    print(f"wrote {args.out}/tables, {args.out}/figures and {args.out}/report.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
