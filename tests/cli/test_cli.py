"""`modprefs stats`: the statistics on ratings collected elsewhere (round trip through CSV files)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from modprefs.cli import main
from modprefs.ratings.read import first_clips
from modprefs.stats.cli import CI_METHODS
from modprefs.stats.defaults import STATS_DEFAULTS, STATS_SCALE
from support.study_files import write_study


def test_assignments_recovered_from_ratings(tmp_path):
    _, stimuli, a, ratings = write_study(tmp_path)
    derived = first_clips(ratings, stimuli.assign(response=stimuli["clip_id"].str[-1].astype(int))).set_index(
        ["participant_id", "trial"]
    )
    merged = a.set_index(["participant_id", "trial"]).join(derived.add_suffix("_d"), how="inner")
    assert len(merged) > 0 and (merged.first_clip == merged.first_clip_d).all()


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_stats_command_writes_tables_figures_report(tmp_path, capsys, caplog):
    caplog.set_level("INFO")
    d, _, _, _ = write_study(tmp_path)
    out = tmp_path / "out"
    rc = main(
        [
            "stats",
            "--ratings",
            str(d),
            "--clips",
            str(tmp_path / "clips.csv"),
            "--out",
            str(out),
            "--n-boot",
            "30",
            "--n-perm",
            "20",
            "--n-boot-alpha",
            "50",
            "--n-perm-alpha",
            "50",
            "--n-boot-threshold",
            "40",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    recs = pd.read_csv(out / "tables" / "thresholds_recommendations.csv")
    assert recs["n_boot"].max() <= 40 and (recs["n_boot"] > 0).any()  # the participant resamples asked for
    for name in (
        "icc",
        "table1_demographics",
        "table3_session",
        "table4_reliability",
        "thresholds_gaps",
        "raters_needed",
        "cross_modality_agreement",
        "justifications",
    ):
        assert (out / "tables" / f"{name}.csv").is_file(), name
    assert len(list((out / "figures").glob("*.png"))) == 3
    report = (out / "report.html").read_text(encoding="utf-8")
    # the report names the interval and Table 2's random structure, with what the benchmarks measured for them
    assert "ICC confidence intervals: auto: F-based (McGraw &amp; Wong 1996) where" in report
    assert "else logit-t, crossed jackknife" in report
    assert "Table 2&#x27;s omnibus model used stats.table2_random = participant_slopes" in report
    assert "Table 4" in (out / "report.html").read_text()
    assert sorted(p.name for p in (out / "ratings").iterdir()) == ["participants.csv", "ratings.csv", "trials.csv"]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".out.")]  # no temporary folder left
    # progress lines name the figures where they are after the run, not in the staging folder, which is gone (#49)
    shown = [r.getMessage().removeprefix("figure ") for r in caplog.records if r.getMessage().startswith("figure ")]
    assert len(shown) == 3 and all(Path(p).is_file() and Path(p).parent == out / "figures" for p in shown), shown


def test_stats_command_rejects_bad_ratings(tmp_path, capsys):  # (more in tests/stats/test_stats_cli_bad_inputs.py)
    d, _, _, _ = write_study(tmp_path)
    r = pd.read_csv(d / "ratings.csv")
    r.loc[2, "rating"] = 0
    r.to_csv(d / "ratings.csv", index=False)
    rc = main(["stats", "--ratings", str(d), "--clips", str(tmp_path / "clips.csv"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "ratings.csv" in err and "row 4" in err and "rating" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_stats_command_with_judge_ratings_adds_tables_5_and_6(tmp_path, capsys):
    d, stimuli, _, _ = write_study(tmp_path)
    stimuli[["clip_id", "prompt_id", "n_chars", "prism_score"]].to_csv(tmp_path / "clips.csv", index=False)
    rows = []
    for i, clip in enumerate(stimuli.itertuples()):
        for modality in ("text", "audio"):
            for sample in range(2):
                rows.append(
                    {
                        "judge": f"j-{modality}",
                        "backend": "openai",
                        "model": "m",
                        "prompt_version": "v1",
                        "modality": modality,
                        "kind": "response_quality",
                        "prompt_id": clip.prompt_id,
                        "clip_id": clip.clip_id,
                        "sample": sample,
                        "rating": 20 + (7 * i + 3 * sample) % 70,
                        "status": "ok",
                        "reason": "",
                    }
                )
    pd.DataFrame(rows).to_csv(tmp_path / "judges.csv", index=False)
    out = tmp_path / "out"
    rc = main(
        [
            "stats",
            "--ratings",
            str(d),
            "--clips",
            str(tmp_path / "clips.csv"),
            "--out",
            str(out),
            "--judges",
            str(tmp_path / "judges.csv"),
            "--n-boot",
            "20",
            "--n-perm",
            "10",
            "--n-boot-alpha",
            "20",
            "--n-perm-alpha",
            "20",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    t5 = pd.read_csv(out / "tables" / "table5_ai_human.csv")
    assert t5["estimate"].notna().sum() >= 4
    assert (out / "tables" / "table6_ai_diff_icc.csv").is_file()
    # without --judges the tables are skipped, with the reason
    main(
        [
            "stats",
            "--ratings",
            str(d),
            "--clips",
            str(tmp_path / "clips.csv"),
            "--out",
            str(tmp_path / "o2"),
            "--n-boot",
            "0",
            "--n-perm",
            "0",
            "--n-boot-alpha",
            "0",
            "--n-perm-alpha",
            "0",
        ]
    )
    assert "table5, table6: no AI judge ratings" in capsys.readouterr().err


@pytest.mark.slow  # over 5 s on 2 cores: not in `make test-fast`
def test_overwrite_replaces_the_output_as_a_whole(tmp_path, capsys):
    d, _, _, _ = write_study(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("an old report")
    (out / "tables").mkdir()
    (out / "tables" / "stale.csv").write_text("x\n1\n")
    args = [
        "stats",
        "--ratings",
        str(d),
        "--clips",
        str(tmp_path / "clips.csv"),
        "--out",
        str(out),
        "--n-boot",
        "0",
        "--n-perm",
        "0",
        "--n-boot-alpha",
        "0",
        "--n-perm-alpha",
        "0",
    ]
    assert main(args) == 2
    assert "is not empty; pass --overwrite" in capsys.readouterr().err
    assert (out / "report.html").read_text() == "an old report"
    assert main([*args, "--overwrite"]) == 0
    assert not (out / "tables" / "stale.csv").exists() and "an old report" not in (out / "report.html").read_text()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


def test_help_documents_every_option_with_its_default(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["stats", "--help"])
    assert exc.value.code == 0
    options = capsys.readouterr().out.split("options:", 1)[1]
    entries: dict[str, str] = {}
    for line in options.splitlines():
        if line.startswith("  -"):
            name = line.split()[0].rstrip(",")
            entries[name] = line
        elif entries:
            entries[name] += " " + line.strip()
    expected = {
        "--seed": STATS_DEFAULTS["seed"],
        "--n-boot": STATS_DEFAULTS["n_boot"],
        "--n-perm": STATS_DEFAULTS["n_perm"],
        "--n-boot-alpha": STATS_DEFAULTS["n_boot_alpha"],
        "--n-perm-alpha": STATS_DEFAULTS["n_perm_alpha"],
        "--n-boot-threshold": STATS_DEFAULTS["n_boot_threshold"],
        "--icc-test": STATS_DEFAULTS["icc_test"],
        "--ci-level": STATS_DEFAULTS["ci_level"],
        "--ci-method": STATS_DEFAULTS["icc_ci_method"],
        "--table2-random": STATS_DEFAULTS["table2_random"],
        "--table2-slope-alpha": STATS_DEFAULTS["table2_slope_alpha"],
        "--overwrite": "off",
        "--map": "none",
        "--judges": "none",
        "--clips": "none",  # optional: without it the clips come from the ratings
        "--scale": STATS_SCALE,
        "--threads": 1,  # BLAS/OpenMP threads pinned for the run (tests/workflow/test_threads.py)
    }
    for option, default in expected.items():
        assert f"(default: {default})" in " ".join(entries[option].split()), option
    # argparse wraps a long default path anywhere, so compare with the whitespace taken out
    assert "".join(entries["--modality-terms"].split()).endswith("resources/analysis/modality_terms.txt)")
    assert set(entries) == {"-h", "--ratings", "--out", "--modality-terms", *expected}
    for option in ("--ratings", "--out"):  # required: no default to show
        assert "default" not in entries[option]


# ---- one set of defaults, the same icc.csv from the CLI and the workflow --------------------------------------
def test_stats_defaults_equal_the_config_schema_and_config_yaml(repo_root):
    schema = yaml.safe_load((repo_root / "workflow/schemas/config.schema.yaml").read_text())["properties"]
    config = yaml.safe_load((repo_root / "config.yaml").read_text())
    stats_schema = schema["stats"]["properties"]
    for key, value in STATS_DEFAULTS.items():
        if key == "seed":
            assert config["seed"] == value
            continue
        assert stats_schema[key]["default"] == value, key
        assert config["stats"][key] == value, key
    assert set(stats_schema["icc_ci_method"]["enum"]) == set(CI_METHODS)
    from modprefs.stats.reliability.icc_ci import CI_METHODS as LIBRARY_METHODS

    assert tuple(LIBRARY_METHODS) == CI_METHODS
    from modprefs.stats.cli import TABLE2_RANDOM
    from modprefs.stats.tables.modality import TABLE2_RANDOM as LIBRARY_TABLE2

    assert tuple(LIBRARY_TABLE2) == TABLE2_RANDOM == tuple(stats_schema["table2_random"]["enum"])


@pytest.mark.slow
def test_workflow_and_modprefs_stats_give_identical_icc(tmp_path):
    from support.workflow_runner import run_workflow, write_config

    d, stimuli, a, _ = write_study(tmp_path)
    wd = tmp_path / "wd"
    (wd / "results/study").mkdir(parents=True)
    stimuli.to_csv(wd / "results/study/stimuli.csv", index=False)
    a.to_csv(wd / "results/study/assignments.csv", index=False)
    stats = {"n_boot": 25, "ci_level": 0.9}  # the CI method: each entry point's default
    cfg = write_config(wd, {"ratings": {"source": str(d)}, "stats": stats, "seed": 99})
    proc = run_workflow(
        wd, "--allowed-rules", "ingest_ratings", "icc_table", "--", "results/stats/tables/icc.csv", configfile=cfg
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "cli"
    rc = main(
        [
            "stats",
            "--ratings",
            str(d),
            "--clips",
            str(wd / "results/study/stimuli.csv"),
            "--out",
            str(out),
            "--n-boot",
            "25",
            "--ci-level",
            "0.9",
            "--seed",
            "99",
            "--n-perm",
            "0",
            "--n-boot-alpha",
            "0",
            "--n-perm-alpha",
            "0",
        ]
    )
    assert rc == 0
    workflow_icc = (wd / "results/stats/tables/icc.csv").read_bytes()
    assert (out / "tables" / "icc.csv").read_bytes() == workflow_icc
    icc = pd.read_csv(out / "tables" / "icc.csv")
    assert icc["n_boot"].eq(25).all() and icc["ci_method"].str.contains("crossed jackknife").all()
    assert all(math.isfinite(x) for x in icc["icc_2_1_lo"])
    assert (out / "tables" / "icc.md").read_text() == (wd / "results/stats/tables/icc.md").read_text()


def test_an_option_value_that_starts_with_a_minus_sign_is_read_as_the_value():
    """``--scale -3:3`` (argparse alone: "expected one argument"); negative numbers and flags are unchanged."""
    from modprefs.cli import attach_dash_values

    assert attach_dash_values(["stats", "--scale", "-3:3", "--out", "d"]) == ["stats", "--scale=-3:3", "--out", "d"]
    assert attach_dash_values(["--scale", "-0.5:0.5:0.25"]) == ["--scale=-0.5:0.5:0.25"]
    assert attach_dash_values(["--scale=-2:2", "--overwrite", "--seed", "-1"]) == [
        "--scale=-2:2",
        "--overwrite",
        "--seed=-1",
    ]
    assert attach_dash_values(["--overwrite", "--out", "x"]) == ["--overwrite", "--out", "x"]
