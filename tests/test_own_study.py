"""A lab's own study end to end (issue 26): a pairs table with its own audio, through the whole workflow.

The audio is speech stored at 16, 22.05 and 44.1 kHz, some stereo or FLAC, at levels 10 dB apart
(tests/pairs_study.py). One whole run (judges, simulated ratings on a 1-5 scale, statistics, reward models,
report) is shared by the tests of this file; the datasets-folder and audio-only variants run to the study tables.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyloudnorm
import pytest
import soundfile as sf
import yaml

from pairs_study import ITEMS, pairs_as_datasets_folder, write_pairs_study
from workflow_runner import copy_run, planned_jobs, run_workflow, write_config

pytestmark = [pytest.mark.slow, pytest.mark.integration]

TARGET_LUFS = -23.0
SCALE = {"min": 1, "max": 5, "step": 1, "labels": ["Bad", "Excellent"]}
STUDY_TABLES = ["results/study/stimuli.csv", "results/study/assignments.csv"]
RATING_TABLES = ["results/ratings/ratings.csv", "results/ratings/trials.csv", "results/ratings/participants.csv"]


def own_study_config(workdir: Path, source: Path, **extra: dict) -> Path:
    """The embedded default turned into a lab's study: its pairs table and audio, a 1-5 scale, small sizes."""
    path = write_config(
        workdir,
        {
            "data": {"source": str(source), "format": "pairs"},
            "sampling": {"n_prompts": 12},  # more than the 6 items: every item is used
            "tts": {"backend": "given", "sample_rate": 24000, "shard_size": 7, "engines": []},
            "audio": {"target_lufs": TARGET_LUFS, "true_peak_dbfs": -1.0},
            # a lab's QC for its own (resampled, 16 kHz) recordings: Whisper tiny.en mishears some words; help-05's
            # second answer ("...short blue waves...") loses 4 of its 14 words here and 5 (WER .357) on another CPU
            # (CTranslate2's int8 kernels differ by instruction set), so the bound leaves room above both
            "audio_qc": {"thresholds": {"max_wer": 0.5, "max_words_per_s": 6.0}},
            "study": {"raters_per_condition": 6, "trials_per_participant": 4, "scale": SCALE},
            "stats": {"n_boot": 50, "n_perm": 50, "n_boot_alpha": 100, "n_perm_alpha": 100, "n_boot_threshold": 50},
            "reward": {"runs": {"main": {"epochs": 2}}, "pairs": {"colloquial": None}},
            **extra,
        },
    )
    cfg = yaml.safe_load(path.read_text())
    for key in ("voice", "lang", "speed"):  # the synthesiser's keys mean nothing to given audio
        cfg["tts"].pop(key, None)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def own_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole workflow on the lab's study; its table and audio live in the run folder (``lab/``), named by a
    relative path, so a copy of the run is a complete, up-to-date study."""
    run = tmp_path_factory.mktemp("own_run")
    write_pairs_study(run / "lab")
    own_study_config(run, Path("lab/pairs.csv"))
    proc = run_workflow(run, timeout=2400)
    assert proc.returncode == 0, proc.stderr[-6000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    return run


@pytest.fixture(scope="module")
def lab_data(own_run: Path) -> Path:
    return own_run / "lab/pairs.csv"


def _csv(run: Path, rel: str) -> pd.DataFrame:
    return pd.read_csv(run / rel, dtype={"prompt_id": str, "clip_id": str}, keep_default_na=False)


def test_every_study_clip_is_at_the_target_loudness_and_rate(own_run: Path) -> None:
    manifest = _csv(own_run, "results/audio/manifest.csv")
    assert len(manifest) == 2 * len(ITEMS) + 2
    given = manifest[manifest["backend"] == "given"]
    assert len(given) == 2 * len(ITEMS)
    before = given["lufs_before"].astype(float)
    assert before.max() - before.min() > 15  # the lab's takes were 10 dB apart (and more, as spoken)
    for clip in manifest.itertuples():
        audio, rate = sf.read(own_run / clip.path)
        assert rate == 24000 and audio.ndim == 1, clip.clip_id
        # measured here, independently of modprefs.speech.loudness
        lufs = pyloudnorm.Meter(rate).integrated_loudness(audio)
        assert abs(lufs - TARGET_LUFS) <= 0.5, (clip.clip_id, lufs)
    qc = _csv(own_run, "results/audio/qc.csv")
    assert {"lufs_before", "lufs_after"} <= set(qc.columns)


def test_the_text_condition_is_the_tables_text(own_run: Path, lab_data: Path) -> None:
    stimuli = _csv(own_run, "results/study/stimuli.csv")
    texts = {f"{item}_{k}": item_texts[k] for item, _, *item_texts, _, _ in ITEMS for k in (0, 1)}
    assert set(stimuli["clip_id"]) == set(texts)
    assert (stimuli["n_chars"] == stimuli["clip_id"].map(lambda c: len(texts[c]))).all()
    assert set(stimuli["transcript"]) == {"given"}
    assert set(stimuli["model_name"]) == {"sys-a", "sys-b"}
    conversations = pd.read_parquet(own_run / "results/data/conversations.parquet")
    assert conversations.set_index("conversation_id").at["help-01", "text_1"] == ITEMS[0][3]


def test_ratings_are_on_the_studys_scale_and_the_report_is_written(own_run: Path) -> None:
    ratings = _csv(own_run, "results/ratings/ratings.csv")
    assert set(ratings["rating"].astype(int)) <= {1, 2, 3, 4, 5}
    assert ratings["rating"].nunique() >= 3
    report = (own_run / "results/report/report.html").read_text()
    assert "Stimuli: the pairs table lab/pairs.csv; audio the lab&#x27;s own audio" in report or (
        "Stimuli: the pairs table lab/pairs.csv; audio the lab's own audio" in report
    )
    assert "1-5 (step 1; 1 = Bad, 5 = Excellent)" in report
    assert (own_run / "results/stats/tables/icc.csv").is_file()


def test_the_same_items_as_a_datasets_folder_give_identical_study_tables(
    own_run: Path, lab_data: Path, tmp_path: Path
) -> None:
    folder = pairs_as_datasets_folder(lab_data, tmp_path / "lab_dataset")
    run = tmp_path / "run"
    own_study_config(run, folder)
    proc = run_workflow(run, *STUDY_TABLES, *RATING_TABLES, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-6000:]
    for rel in STUDY_TABLES + RATING_TABLES:
        assert (run / rel).read_bytes() == (own_run / rel).read_bytes(), rel
    # the Audio cells were written out once, as the files they hold
    written = sorted(p.name for p in (run / "results/data/given_audio").iterdir() if not p.name.startswith("."))
    assert len(written) == 2 * len(ITEMS) and any(n.endswith(".flac") for n in written)


def test_audio_only_items_take_their_text_from_asr(tmp_path: Path) -> None:
    data = write_pairs_study(tmp_path / "lab", audio_only=True, n_items=3)
    run = tmp_path / "run"
    own_study_config(run, data, study={"raters_per_condition": 4, "trials_per_participant": 2, "scale": SCALE})
    proc = run_workflow(run, "results/stats/tables/icc.csv", "results/stats/tables/table2_lmm.md", timeout=1800)
    assert proc.returncode == 0, proc.stderr[-6000:]
    stimuli = _csv(run, "results/study/stimuli.csv")
    assert len(stimuli) == 6 and set(stimuli["transcript"]) == {"asr"}
    conversations = pd.read_parquet(run / "results/data/conversations.parquet").set_index("conversation_id")
    heard = conversations.at["help-01", "text_0"].lower()
    assert "sunny window" in heard, heard  # what the audio says, not an empty text
    assert (stimuli["n_chars"] > 20).all()
    # every table says so
    assert set(_csv(run, "results/stats/tables/icc.csv")["transcript"]) == {
        "transcript: asr (6 of 6 clips' text is the ASR transcript of their audio)"
    }
    assert "transcript: asr" in (run / "results/stats/tables/table2_lmm.md").read_text().splitlines()[0]


def test_editing_the_table_or_one_audio_file_reruns_exactly_its_dependents(own_run: Path, tmp_path: Path) -> None:
    run = copy_run(own_run, tmp_path / "run")
    # a finished study: nothing to do but the report, which names the repository's benchmark files by a path
    # relative to the run folder (this run uses the repository's Snakefile), so a copy moves them
    assert set(planned_jobs(run_workflow(run, "-n"))) <= {"report", "all"}

    # one audio file: its render shard and what reads the audio; not the data step, not the draw
    clip = "help-03_1"
    audio_file = next((run / "lab/audio").glob(f"{clip}.*"))
    audio, rate = sf.read(audio_file)
    sf.write(audio_file, np.asarray(audio) * 0.5, rate)
    jobs = planned_jobs(run_workflow(run, "-n"))
    assert jobs.get("render_shard") == 1 and jobs.get("audio_qc") == 1, jobs
    assert "conversations" not in jobs and "sample_prompts" not in jobs, jobs
    assert {"audio_manifest", "stimuli", "judge_modality"} <= set(jobs), jobs

    # the table: the data step, the draw and everything after them
    run = copy_run(own_run, tmp_path / "run2")
    table = pd.read_csv(run / "lab/pairs.csv", keep_default_na=False)
    table.loc[0, "prompt"] += " Please answer briefly."
    table.to_csv(run / "lab/pairs.csv", index=False)
    jobs = planned_jobs(run_workflow(run, "-n"))
    assert {"conversations", "sample_prompts", "render_shard", "stimuli"} <= set(jobs), jobs
