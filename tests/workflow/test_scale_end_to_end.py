"""Any rating scale through every stage (issue 47): simulate -> stats -> report -> publish -> stats.

Each scale is a copy of the shared default run whose ``study.scale`` is changed; the workflow makes again what the
scale changes (its config record, the simulated ratings, the ICC table: ``--rerun-triggers mtime`` on the removed
outputs, so a code edit since the shared run was made reruns nothing else). Then, as a user would:
``modprefs stats`` on the run's ratings and judges with ``--scale`` (every table and the report), ``modprefs
publish`` of the run, and ``modprefs stats`` on the published folder *without* ``--scale``, which must take the
dataset's recorded scale and give the run's ``icc.csv`` byte for byte.

What is checked on each scale: the ratings are on it (its range and step); the report's header states it; every
table in rating units states it (its Markdown title names the scale, its CSV has the ``scale`` column); no paper
value stands beside the study's unlabelled (a paper column is either ``..._1_100``, as printed, or
``..._on_study_scale``); the card records the scale.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from modprefs.cli import main
from modprefs.publish.card import dataset_card  # noqa: F401 (the card's writer: its header holds rating_scale)
from modprefs.scale import parse_scale_arg
from modprefs.stats.tables.scale_units import scale_label
from support.workflow_runner import config_with, copy_run, run_workflow

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SCALES = ["0:10", "1:7:0.5", "1:5", "-3:3", "1:100"]
FAST = ["--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0", "--n-boot-threshold", "50"]
#: Tables whose values are ratings or rating differences (their units are the scale's)
RATING_UNIT_TABLES = (
    "audio_quality",
    "cross_modality_agreement",
    "random_slope",
    "table2_lmm",
    "table5_ai_human",
    "table5_clips",
    "table6_ai_diff_icc",
    "table6_per_prompt",
    "thresholds_gaps",
    "thresholds_recommendations",
)
#: a paper value beside the study's: as printed (1-100), restated on the study's scale, how, or unit-free (p)
PAPER_COLUMN = re.compile(r"^paper_(estimate_1_100|estimate_on_study_scale|conversion|p)$")


def _study_scale(arg: str) -> dict:
    scale = parse_scale_arg(arg)
    return {**scale.as_config(), "labels": ["Low", "High"]}


def _header(card: str) -> dict:
    return yaml.safe_load(card.split("---\n")[1])


@pytest.mark.parametrize("arg", SCALES)
def test_a_scale_runs_simulate_stats_report_publish_stats(default_run: Path, tmp_path: Path, arg: str) -> None:
    study_scale = _study_scale(arg)
    scale = parse_scale_arg(arg)
    run = copy_run(default_run, tmp_path / "run", drop=("results/dataset", "results/ratings", "results/stats"))
    (run / "results/config.yaml").unlink()
    # the ICC intervals' 2000 jackknife refits and Table 4's calibrated test are the cost of a stats run here: fewer
    # refits and the uncalibrated test (what is compared is every table's scale and the ICC table's bytes)
    stats = {"n_boot": 200, "icc_test": "jackknife"}
    cfg = config_with(default_run / "config.yaml", tmp_path / "cfg", {"study": {"scale": study_scale}, "stats": stats})
    targets = ("results/config.yaml", "results/ratings/ratings.csv", "results/stats/tables/icc.csv")
    proc = run_workflow(run, *targets, "--rerun-triggers", "mtime", configfile=cfg, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]

    # simulate: on the scale, its steps used
    ratings = pd.read_csv(run / "results/ratings/ratings.csv")
    assert scale.on_scale(ratings["rating"]).all()
    assert ratings["rating"].min() >= scale.min and ratings["rating"].max() <= scale.max
    assert ratings["rating"].nunique() >= min(5, scale.n_points)
    label = scale_label(scale)

    # stats -> report, on the run's ratings and judges
    record = yaml.safe_load((run / "results/config.yaml").read_text())
    st = record["stats"]
    common = ["--n-boot", str(st["n_boot"]), "--seed", str(record["seed"]), "--ci-level", str(st["ci_level"])]
    common += ["--ci-method", st["icc_ci_method"], "--icc-test", st["icc_test"], *FAST]
    out = tmp_path / "stats"
    results = run / "results"
    cmd = ["stats", "--ratings", str(results / "ratings"), "--clips", str(results / "study/stimuli.csv")]
    cmd += ["--judges", str(results / "judges/ratings.csv"), "--scale", arg, "--out", str(out), *common]
    assert main(cmd) == 0
    report = (out / "report.html").read_text()
    assert f"Rating scale (study.scale): {scale.min:g}-{scale.max:g} (step {scale.step:g}" in report
    if not scale.is_paper:
        assert "1-100 (step 1; 1 = Terrible" not in report
    _every_table_states_the_scale(out / "tables", scale, label)

    # publish: the card records the config that ran and the scale
    dataset = tmp_path / "dataset"
    assert main(["publish", "--results", str(results), "--out", str(dataset), "--salt", "s"]) == 0
    header = _header((dataset / "README.md").read_text())
    assert header["rating_scale"] == study_scale

    # stats on the published folder, without --scale: the dataset's scale, the run's icc.csv byte for byte
    again = tmp_path / "again"
    assert main(["stats", "--ratings", str(dataset), "--out", str(again), *common]) == 0
    assert (again / "tables/icc.csv").read_bytes() == (results / "stats/tables/icc.csv").read_bytes()
    assert (
        f"Rating scale (study.scale): {scale.min:g}-{scale.max:g} (step {scale.step:g}"
        in (again / "report.html").read_text()
    )


def _every_table_states_the_scale(tables: Path, scale, label: str) -> None:
    """Tables in rating units name the scale in their title and ``scale`` column; paper values are labelled."""
    seen = set()
    for csv in sorted(tables.glob("*.csv")):
        frame = pd.read_csv(csv, keep_default_na=False)
        paper = [c for c in frame.columns if "paper" in c.lower()]
        for column in paper:
            assert PAPER_COLUMN.match(column), (csv.name, column)
        if csv.stem in RATING_UNIT_TABLES and len(frame) and "skipped" not in frame.columns:
            seen.add(csv.stem)
            if not scale.is_paper:
                assert "scale" in frame.columns, csv.name
                assert set(frame["scale"].astype(str)) == {label}, (csv.name, set(frame["scale"]))
                title = (tables / f"{csv.stem}.md").read_text().splitlines()[0]
                assert label in title, (csv.name, title)
            numbers = frame.select_dtypes(include=[np.number])
            assert np.isfinite(numbers.to_numpy(dtype=float)[~np.isnan(numbers.to_numpy(dtype=float))]).all()
    assert seen == set(RATING_UNIT_TABLES), set(RATING_UNIT_TABLES) - seen
