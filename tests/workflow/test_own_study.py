"""A lab's own study end to end (issues 26, 47): docs/own-study.md as written, through the workflow.

The shared run starts where a lab starts: a checkout, docs/own-study.md's YAML block copied into ``lab.yaml`` and
its two commands run as they stand (tests/support/doc_blocks.py copies them; nothing here retypes them), on eight items
whose audio is espeak-ng speech in four voices at 0.9-1.25x speed, stored at 16, 22.05, 44.1 and 48 kHz, some stereo
or FLAC, 24 dB apart (tests/support/pairs_study.py). The datasets-folder variant runs the same config to the study
tables; the audio-only and damaged-audio variants run small configs to the statistics or the audio review.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyloudnorm
import pytest
import soundfile as sf
import yaml

from support.doc_blocks import DOCS, commands, fenced_blocks, section
from support.pairs_study import ITEMS, pairs_as_datasets_folder, speak, write_pairs_study
from support.workflow_runner import copy_run, make_checkout, planned_jobs, run_workflow, write_config

pytestmark = [pytest.mark.slow, pytest.mark.integration]

TARGET_LUFS = -23.0
SCALE = {"min": 1, "max": 5, "step": 1, "labels": ["Bad", "Excellent"]}
STUDY_TABLES = ["results/study/stimuli.csv", "results/study/assignments.csv"]
RATING_TABLES = ["results/ratings/ratings.csv", "results/ratings/trials.csv", "results/ratings/participants.csv"]
OWN_STUDY = section(DOCS / "own-study.md", "Your own study")


def readme_lab_yaml() -> str:
    """docs/own-study.md's lab.yaml, as printed."""
    (block,) = fenced_blocks(OWN_STUDY, "yaml")
    return block


def readme_commands() -> list[str]:
    """docs/own-study.md's commands for a lab's study, as printed."""
    (block,) = fenced_blocks(OWN_STUDY, "bash")
    return commands(block)


def run_as_user(folder: Path, command: str, timeout: float = 2400) -> subprocess.CompletedProcess:
    """``command`` as a user types it in ``folder``, with this environment's ``snakemake`` first on PATH."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "OPENBLAS_NUM_THREADS": "1",
    }
    return subprocess.run(command, shell=True, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)


def own_study_config(workdir: Path, source: Path, **extra: dict) -> Path:
    """A small study of a lab's pairs table (for the variants that need no full run): its audio, a 1-5 scale."""
    path = write_config(
        workdir,
        {
            "data": {"source": str(source), "format": "pairs"},
            "sampling": {"n_prompts": 12},  # more than the items: every item is used
            "tts": {"backend": "given", "sample_rate": 24000, "shard_size": 7, "engines": []},
            "audio": {"target_lufs": TARGET_LUFS, "true_peak_dbfs": -1.0},
            "study": {"raters_per_condition": 6, "trials_per_participant": 4, "scale": SCALE},
            "stats": {"n_boot": 50, "n_perm": 50, "n_boot_alpha": 100, "n_perm_alpha": 100, "n_boot_threshold": 50},
            "reward": {"runs": {"main": {"epochs": 2}}, "pairs": {"colloquial": None}},
            **extra,
        },
    )
    return path


@pytest.fixture(scope="module")
def own_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout in which a lab followed docs/own-study.md: its table and audio in ``lab/``, its ``lab.yaml``,
    its commands run as written."""
    run = make_checkout(tmp_path_factory.mktemp("own_run"))
    write_pairs_study(run / "lab", voices="espeak")
    (run / "lab.yaml").write_text(readme_lab_yaml())
    for command in readme_commands():
        proc = run_as_user(run, command)
        assert proc.returncode == 0, f"{command}\n{proc.stderr[-6000:]}"
        assert "Traceback" not in proc.stdout + proc.stderr, command
    return run


def _csv(run: Path, rel: str) -> pd.DataFrame:
    return pd.read_csv(run / rel, dtype={"prompt_id": str, "clip_id": str}, keep_default_na=False)


def test_the_readme_shows_the_lab_config_and_a_target_before_configfile() -> None:
    cfg = yaml.safe_load(readme_lab_yaml())
    assert cfg["tts"]["backend"] == "given" and "voice" not in cfg["tts"]  # the overlay need not unset the voice
    run_cmd, publish_cmd = readme_commands()
    assert run_cmd.split()[:1] == ["snakemake"] and run_cmd.endswith("--configfile lab.yaml")
    assert publish_cmd.split()[:2] == ["snakemake", "publish"]  # the target before --configfile


def test_every_study_clip_is_at_the_target_loudness_and_rate(own_run: Path) -> None:
    manifest = _csv(own_run, "results/audio/manifest.csv")
    assert len(manifest) == 2 * len(ITEMS) + 2
    given = manifest[manifest["backend"] == "given"]
    assert len(given) == 2 * len(ITEMS)
    before = given["lufs_before"].astype(float)
    assert before.max() - before.min() > 15  # stored 24 dB apart (a loud take capped at a 0.98 peak)
    for clip in manifest.itertuples():
        audio, rate = sf.read(own_run / clip.path)
        assert rate == 24000 and audio.ndim == 1, clip.clip_id
        # measured here, independently of modprefs.speech.loudness
        lufs = pyloudnorm.Meter(rate).integrated_loudness(audio)
        assert abs(lufs - TARGET_LUFS) <= 0.5, (clip.clip_id, lufs)
    qc = _csv(own_run, "results/audio/qc.csv")
    assert {"lufs_before", "lufs_after", "source_clipping_ratio"} <= set(qc.columns)
    # the given-audio defaults pass the lab's ordinary synthetic speech: every clip passes, none is replaced
    assert qc["qc_pass"].astype(str).eq("True").all(), qc.loc[qc["qc_pass"].astype(str) != "True", "qc_reasons"]


def test_the_text_condition_is_the_tables_text(own_run: Path) -> None:
    stimuli = _csv(own_run, "results/study/stimuli.csv")
    texts = {f"{item}_{k}": item_texts[k] for item, _, *item_texts, _, _ in ITEMS for k in (0, 1)}
    assert set(stimuli["clip_id"]) == set(texts)
    assert (stimuli["n_chars"] == stimuli["clip_id"].map(lambda c: len(texts[c]))).all()
    assert set(stimuli["transcript"]) == {"given"}
    assert set(stimuli["model_name"]) == {"sys-a", "sys-b"}
    conversations = pd.read_parquet(own_run / "results/data/conversations.parquet")
    assert conversations.set_index("conversation_id").at["help-01", "text_1"] == ITEMS[0][3]


def test_the_overlay_notes_the_unused_voice_and_the_run_is_on_the_labs_scale(own_run: Path) -> None:
    log = max((own_run / ".snakemake/log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    ratings = _csv(own_run, "results/ratings/ratings.csv")
    assert set(ratings["rating"].astype(int)) <= {1, 2, 3, 4, 5}
    assert ratings["rating"].nunique() >= 3
    report = (own_run / "results/report/report.html").read_text()
    assert "Stimuli: the pairs table lab/pairs.csv; audio the lab&#x27;s own audio" in report or (
        "Stimuli: the pairs table lab/pairs.csv; audio the lab's own audio" in report
    )
    assert "1-5 (step 1; 1 = Bad, 5 = Excellent)" in report
    assert (own_run / "results/stats/tables/icc.csv").is_file()
    assert log.is_file()


def test_the_readme_publish_command_writes_the_dataset(own_run: Path) -> None:
    dataset = own_run / "results/dataset"
    assert (dataset / "README.md").is_file() and (dataset / "dataset_dict.json").is_file()
    stimuli = pd.read_parquet(next((dataset / "data/stimuli").glob("*.parquet")))
    assert sorted(stimuli["prompt_id"]) == sorted(item[0] for item in ITEMS)


def test_the_same_items_as_a_datasets_folder_give_identical_study_tables(own_run: Path, tmp_path: Path) -> None:
    folder = pairs_as_datasets_folder(own_run / "lab/pairs.csv", tmp_path / "lab_dataset")
    run = make_checkout(tmp_path / "run")
    cfg = yaml.safe_load(readme_lab_yaml())
    cfg["data"]["source"] = str(folder)
    (run / "lab.yaml").write_text(yaml.safe_dump(cfg))
    proc = run_workflow(run, *STUDY_TABLES, *RATING_TABLES, timeout=1800, configfile=run / "lab.yaml")
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
    assert conversations.at["help-01", "asr_confidence_0"] > 0.5 and conversations.at["help-01", "asr_flag_0"] == ""
    assert (stimuli["n_chars"] > 20).all()
    # QC judged the ASR sides by confidence and DNSMOS: no round-trip WER of ASR against ASR
    qc = _csv(run, "results/audio/qc.csv")
    asr_clips = qc[qc["clip_id"].isin(stimuli["clip_id"])]
    assert (
        asr_clips["wer"].astype(str).isin(["", "nan"]).all() and (asr_clips["asr_confidence"].astype(float) > 0).all()
    )
    # every table says so
    assert set(_csv(run, "results/stats/tables/icc.csv")["transcript"]) == {
        "transcript: asr (6 of 6 clips' text is the ASR transcript of their audio)"
    }
    assert "transcript: asr" in (run / "results/stats/tables/table2_lmm.md").read_text().splitlines()[0]


def _damage(lab: Path) -> dict[str, str]:
    """Damage four sides of a lab's table in four ways; returns ``{clip: the reason QC must give}``."""
    table = pd.read_csv(lab / "pairs.csv", keep_default_na=False)
    # help-01 side 0: a take recorded too hot, clipped at full scale
    path = lab / table.at[0, "audio_0"]
    audio, rate = sf.read(path)
    sf.write(path, np.clip(np.asarray(audio) * 30, -1, 1), rate)
    # help-02 side 1: the audio says another item's answer (the table's text is not what is heard)
    other = lab / table.at[3, "audio_1"]
    audio, rate = sf.read(other)
    sf.write(lab / table.at[1, "audio_1"], audio, rate)
    # help-03 side 0: buried in loud noise
    path = lab / table.at[2, "audio_0"]
    audio, rate = sf.read(path)
    noise = np.random.default_rng(0).normal(0, 3 * np.sqrt(np.mean(np.square(audio))), size=np.shape(audio))
    sf.write(path, np.clip(np.asarray(audio) + noise, -1, 1), rate)
    # help-04 side 1: audio only (a neural voice Whisper hears well), and what it says is on the screening list
    ((speech, srate),) = speak(["They stabbed the loaf with a fork to see if it was done."])
    sf.write(lab / "audio/help-04_1_spoken.wav", speech, srate)
    table.at[3, "audio_1"], table.at[3, "response_1"] = "audio/help-04_1_spoken.wav", ""
    table.to_csv(lab / "pairs.csv", index=False)
    return {
        "help-01_0": "source_clipping_ratio",
        "help-02_1": "wer",
        "help-03_0": "dnsmos_ovrl",
        "help-04_1": "asr transcript flagged (harmful",
    }


def test_a_table_whose_clips_fail_qc_in_several_ways_gets_one_message_naming_each(tmp_path: Path) -> None:
    data = write_pairs_study(tmp_path / "lab", n_items=4, voices="espeak")
    damaged = _damage(tmp_path / "lab")
    run = tmp_path / "run"
    own_study_config(run, data, study={"raters_per_condition": 4, "trials_per_participant": 2, "scale": SCALE})
    proc = run_workflow(run, "results/sampling/final_prompts.csv", timeout=1800)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text
    (message,) = {line for line in text.splitlines() if "fail audio QC and cannot be replaced" in line}
    assert "used whole" in message and f"{len(damaged)} clip(s)" in message
    block = text[text.index(message) :]
    for clip, reason in damaged.items():
        item, side = clip.rsplit("_", 1)
        row = 2 + [i[0] for i in ITEMS].index(item)
        (line,) = [line for line in block.splitlines() if f"item {item!r} side {side}" in line]
        assert f"row {row}" in line and f"column audio_{side}" in line and "lab/audio/" in line, line
        assert reason in line, line
        if reason != "asr transcript flagged (harmful":
            assert "(audio_qc.thresholds." in line, line


def test_editing_one_audio_file_reruns_its_shard_and_what_reads_audio_not_the_text_judge(
    own_run: Path, tmp_path: Path
) -> None:
    run = copy_run(own_run, tmp_path / "run")
    lab = run / "lab.yaml"
    # a finished study: nothing to do but the report, which names the repository's benchmark files by a path
    # relative to the run folder, so a copy moves them
    assert set(planned_jobs(run_workflow(run, "-n", configfile=lab))) <= {"report", "all"}

    clip = "help-03_1"
    audio_file = next((run / "lab/audio").glob(f"{clip}.*"))
    audio, rate = sf.read(audio_file)
    sf.write(audio_file, np.asarray(audio) * 0.5, rate)
    proc = run_workflow(run, "-n", configfile=lab)
    jobs = planned_jobs(proc)
    assert jobs.get("render_shard") == 1 and jobs.get("audio_qc") == 1, jobs
    assert "conversations" not in jobs and "sample_prompts" not in jobs, jobs
    assert {"audio_manifest", "stimuli"} <= set(jobs), jobs
    assert jobs.get("judge_modality") == 1 and "modality=audio" in proc.stdout, jobs
    assert "modality=text" not in proc.stdout

    # the table: the data step, the draw and everything after them
    run = copy_run(own_run, tmp_path / "run2")
    table = pd.read_csv(run / "lab/pairs.csv", keep_default_na=False)
    table.loc[0, "prompt"] += " Please answer briefly."
    table.to_csv(run / "lab/pairs.csv", index=False)
    jobs = planned_jobs(run_workflow(run, "-n", configfile=run / "lab.yaml"))
    assert {"conversations", "sample_prompts", "render_shard", "stimuli"} <= set(jobs), jobs
