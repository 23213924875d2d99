"""`modprefs publish` (issue #30): a finished study as a Hugging Face dataset, read back by `modprefs stats`.

Most tests run on a small synthetic results/ folder (simulated ratings, short sine WAVs): no workflow run. The
last ones publish the shared default run (`default_run`) and run the `publish` rule on a copy of it. Issue #47: the
card shows the config the run used (results/config.yaml, rule run_config) and the dataset records the rating scale,
which `modprefs stats` on it uses.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf
import yaml

from modprefs.cli import main
from modprefs.publish import PublishOptions
from modprefs.publish.build import PublishError, build_splits, read_results
from modprefs.publish.card import SIMULATED_BANNER, dataset_card
from modprefs.publish.privacy import find_leaks, pseudonyms, scrub_text
from modprefs.publish.run_config import write_run_config
from modprefs.ratings.simulate import simulate_ratings
from modprefs.ratings.simulation.params import SimulationParams
from modprefs.scale import PAPER_SCALE, RatingScale, scale_from_config
from modprefs.study.design import make_assignments
from support.recovery_model import paper_stimuli

SALT = "test-salt-do-not-publish"
PROLIFIC = "5f8a1b2c3d4e5f6a7b8c9d0e"  # a Prolific-like 24-hex id
EMAIL = "jane.doe@example.org"
URL = "https://example.com/my-profile?id=42"
IP = "192.168.17.42"
SESSION = "sess-7f3e9a1c-secret"
STATS_ARGS = ["--n-boot", "25", "--seed", "7", "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"]
STATS_ARGS += ["--n-boot-threshold", "0"]
#: the side environment in which `datasets` decodes Audio cells itself (tests/hf_audio/install.sh)
HF_AUDIO_PYTHON = Path(__file__).resolve().parents[2] / ".venv-hfaudio" / "bin" / "python"
DECODE_CHECK = Path(__file__).resolve().parents[1] / "hf_audio" / "decode_check.py"
SHIPPED_CONFIG = Path(__file__).resolve().parents[2] / "config.yaml"
MOS = {"min": 1, "max": 5, "step": 1, "labels": ["Bad", "Excellent"]}  # a 1-5 study.scale


def card_parts(out: Path) -> tuple[dict, dict]:
    """(YAML header, the "Configuration used" block loaded) of the published folder's card."""
    card = (out / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    shown = card.split("## Configuration used\n\n```yaml\n", 1)[1].split("```", 1)[0]
    return header, yaml.safe_load(shown)


def _wav(path: Path, seconds: float, freq: float, sr: int = 16000) -> None:
    t = np.arange(int(seconds * sr)) / sr
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, (0.2 * np.sin(2 * np.pi * freq * t)).astype("float32"), sr, subtype="PCM_16")


def make_results(work: Path, plant: bool = False, scale: dict | None = None) -> Path:
    """A finished run's results/ (docs/CONTRACTS.md) with simulated ratings, its config record results/config.yaml
    (the shipped config, ``study.scale`` = ``scale`` when given); ``plant``: identifiers planted."""
    res = work / "results"
    stimuli = paper_stimuli(5).head(24)
    prompts = list(dict.fromkeys(stimuli.prompt_id))
    a = make_assignments(prompts, 8, 6, seed=5)
    ratings, trials, participants, _ = simulate_ratings(
        stimuli, a, SimulationParams(), seed=5, scale=scale_from_config(scale) if scale else None
    )
    conv = pd.DataFrame(
        {
            "conversation_id": prompts,
            "history": [
                [{"role": "user", "content": f"hi {p}"}, {"role": "model", "content": "hello"}] for p in prompts
            ],
            "prompt": [f"question {p}?" for p in prompts],
            "text_0": [f"answer zero of {p}" for p in prompts],
            "text_1": [f"answer one of {p}" for p in prompts],
            "model_name_0": "m0",
            "model_name_1": "m1",
        }
    )
    (res / "data").mkdir(parents=True)
    conv.to_parquet(res / "data/conversations.parquet")
    (res / "sampling").mkdir()
    pd.DataFrame({"prompt_id": prompts, "conversation_id": prompts, "stratum": "other"}).to_csv(
        res / "sampling/final_prompts.csv", index=False
    )
    rows = []
    for i, clip in enumerate(["attn_0", "attn_1", *stimuli.clip_id]):
        rel = f"results/audio/clips/{clip}.wav"
        _wav(work / rel, 0.1 + 0.01 * (i % 5), 200 + 10 * i)
        rows.append(
            {"clip_id": clip, "prompt_id": clip.rsplit("_", 1)[0], "response": int(clip[-1]), "path": rel,
             "sample_rate": 16000, "duration_s": 0.1, "backend": "kokoro-onnx", "model": "k", "voice": "af",
             "rms_dbfs": -23.0, "peak": 0.2, "clipping_ratio": 0.0, "lufs_after": -23.0}
        )  # fmt: skip
    pd.DataFrame(rows).to_csv(res / "audio/manifest.csv", index=False)
    (res / "study").mkdir()
    stimuli.to_csv(res / "study/stimuli.csv", index=False)
    if plant:
        ids = {p: f"{k:04x}{PROLIFIC[4:]}" for k, p in enumerate(sorted(participants.participant_id))}
        for df in (ratings, trials, participants):
            df["participant_id"] = df["participant_id"].map(ids)
        participants["prolific_pid"] = participants["participant_id"]
        participants["ip_address"] = IP
        participants["notes"] = f"contact via {IP}"  # an identifier in a column with an innocent name
        ratings["session_id"] = SESSION
        trials["justification"] = trials["justification"].astype(object)
        trials.loc[trials.index[:3], "justification"] = f"mail me at {EMAIL} or see {URL} (I am {PROLIFIC})"
    (res / "ratings").mkdir()
    ratings.to_csv(res / "ratings/ratings.csv", index=False)
    trials.to_csv(res / "ratings/trials.csv", index=False)
    participants.to_csv(res / "ratings/participants.csv", index=False)
    (res / "stats/tables").mkdir(parents=True)
    cfg = yaml.safe_load(SHIPPED_CONFIG.read_text())
    if scale:
        cfg["study"]["scale"] = scale
    write_run_config(cfg, res / "config.yaml")  # as the rule run_config writes it
    return res


def add_icc(res: Path, tmp: Path, scale: str = "1:100") -> None:
    """results/stats/tables/icc.csv as the workflow makes it (= `modprefs stats` on results/ratings, tested in
    tests/cli/test_cli.py), the ratings on ``scale``."""
    out = tmp / f"stats_of_run_{scale.replace(':', '-')}"
    args = ["stats", "--ratings", str(res / "ratings"), "--clips", str(res / "study/stimuli.csv"), "--out", str(out)]
    assert main([*args, *STATS_ARGS, "--scale", scale]) == 0
    (res / "stats/tables/icc.csv").write_bytes((out / "tables/icc.csv").read_bytes())


def audio_cells_expected(res: Path, out: Path) -> list[dict]:
    """Every Audio cell of the published stimuli and preference splits, with the study WAV it must decode to
    (results/audio/manifest.csv: clip id -> path; a preference's chosen clip is its prompt's ``chosen_response``)."""
    manifest = pd.read_csv(res / "audio/manifest.csv").set_index("clip_id")

    def wav(clip: str) -> str:
        return str(res.parent / manifest.loc[clip, "path"])

    def split(name: str, columns: list[str]) -> pd.DataFrame:
        return pd.concat(pd.read_parquet(f, columns=columns) for f in sorted((out / "data" / name).glob("*.parquet")))

    stim = split("stimuli", ["prompt_id", "clip_id_0", "clip_id_1"]).reset_index(drop=True)
    expect = [
        {"split": "stimuli", "row": i, "column": f"audio_{k}", "wav": wav(row[f"clip_id_{k}"])}
        for i, row in stim.iterrows()
        for k in (0, 1)
    ]
    clips = stim.set_index("prompt_id")
    for name in ("preferences_text", "preferences_audio"):
        prefs = split(name, ["prompt_id", "chosen_response"]).reset_index(drop=True)
        for i, row in prefs.iterrows():
            win = int(row["chosen_response"])
            for column, k in (("chosen_audio", win), ("rejected_audio", 1 - win)):
                clip = clips.at[row["prompt_id"], f"clip_id_{k}"]
                expect.append({"split": name, "row": i, "column": column, "wav": wav(clip)})
    return expect


def decode_with_datasets(out: Path, expect: list[dict], tmp_path: Path) -> tuple[int, dict]:
    """(exit status, report) of tests/hf_audio/decode_check.py: `datasets` decoding ``expect``'s Audio cells of the
    published folder ``out`` with both readers, in the side environment (skipped without it; a failure when
    MODPREFS_REQUIRE_HF_AUDIO is set, as in CI)."""
    if not HF_AUDIO_PYTHON.exists():
        why = "datasets' Audio decoding needs the side environment of tests/hf_audio/install.sh (torch + torchcodec)"
        if os.environ.get("MODPREFS_REQUIRE_HF_AUDIO"):
            pytest.fail(f"MODPREFS_REQUIRE_HF_AUDIO is set: {why}")
        pytest.skip(why)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "expect.json"
    path.write_text(json.dumps(expect))
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf_cache"), "HF_DATASETS_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [str(HF_AUDIO_PYTHON), str(DECODE_CHECK), str(out), str(path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> tuple[Path, Path]:
    """(results, published folder) of the synthetic study, icc.csv computed by `modprefs stats`."""
    work = tmp_path_factory.mktemp("pub")
    res = make_results(work)
    add_icc(res, work)
    out = work / "dataset"
    assert main(["publish", "--results", str(res), "--out", str(out), "--salt", SALT]) == 0
    return res, out


# ---- pure parts -----------------------------------------------------------------------------------------
def test_pseudonyms_salted_and_in_the_ids_order():
    ids = ["P0003", "P0001", "P0002", PROLIFIC]
    a, b = pseudonyms(ids, "s1"), pseudonyms(ids, "s2")
    assert sorted(a, key=a.get) == sorted(ids) and set(a.values()).isdisjoint(b.values())
    assert all(v.startswith("p") and len(v) == 17 for v in a.values()) and pseudonyms(ids, "s1") == a


def test_scrub_text_replaces_identifiers():
    text = scrub_text(f"mail {EMAIL}, see {URL} or www.x.org from {IP}, id {PROLIFIC}.")
    assert text == "mail [email], see [url] or [url] from [ip], id [id]."
    kept = scrub_text(f"{EMAIL} {URL}", emails=False, urls=False)
    assert EMAIL in kept and URL in kept
    assert find_leaks({"a": ["x P1 y", "P12"]}, ["P1"]) == ["a: 'P1'"]


# ---- the published dataset --------------------------------------------------------------------------------
@pytest.mark.slow
def test_publish_writes_a_dataset_both_readers_load(published):
    import datasets

    res, out = published
    dd = datasets.load_from_disk(str(out))
    assert set(dd) == {
        "stimuli",
        "ratings",
        "participants",
        "preferences_text",
        "preferences_audio",
        "item_reliability",
    }
    assert len(dd["stimuli"]) == 12 and len(dd["ratings"]) == len(pd.read_csv(res / "ratings/ratings.csv"))
    for split in dd:
        files = sorted((out / "data" / split).glob("*.parquet"))
        assert [f.name for f in files] == ["train-00000-of-00001.parquet"]
        pq = datasets.load_dataset("parquet", data_dir=str(out / "data" / split))
        assert pq["train"].num_rows == dd[split].num_rows and pq["train"].features == dd[split].features
    assert isinstance(dd["stimuli"].features["audio_0"], datasets.Audio)
    assert set(dd["ratings"]["source"]) == {"simulated"}
    first = dd["stimuli"].select_columns(["prompt_id", "history"])[0]  # (Audio cells decode only with torchcodec)
    assert first["history"] == [
        {"role": "user", "content": f"hi {first['prompt_id']}"},
        {"role": "assistant", "content": "hello"},
    ]


@pytest.mark.slow
def test_every_audio_cell_is_its_study_wav(published):
    import datasets

    res, out = published
    manifest = pd.read_csv(res / "audio/manifest.csv").set_index("clip_id")
    for source in ("disk", "parquet"):
        if source == "disk":
            stim = datasets.load_from_disk(str(out))["stimuli"]
        else:
            stim = datasets.load_dataset("parquet", data_dir=str(out / "data/stimuli"))["train"]
        stim = stim.cast_column("audio_0", datasets.Audio(decode=False)).cast_column(
            "audio_1", datasets.Audio(decode=False)
        )
        for row in stim:
            for k in (0, 1):
                wav = res.parent / manifest.loc[row[f"clip_id_{k}"], "path"]
                cell = row[f"audio_{k}"]
                assert cell["bytes"] == wav.read_bytes()  # the exact study file
                got, sr = sf.read(io.BytesIO(cell["bytes"]))
                want, sr0 = sf.read(wav)
                assert sr == sr0 and np.array_equal(got, want)


@pytest.mark.slow
def test_datasets_decodes_every_audio_cell_to_its_wav(published, tmp_path):
    """Acceptance: every Audio cell (stimuli and both preference splits), decoded by `datasets` itself with
    load_from_disk and with load_dataset("parquet"), gives its study WAV's samples exactly; a cell compared with
    the other response's WAV is caught."""
    res, out = published
    expect = audio_cells_expected(res, out)
    n_pref = sum(e["split"] != "stimuli" for e in expect)
    assert sum(e["split"] == "stimuli" for e in expect) == 24 and n_pref > 0
    rc, report = decode_with_datasets(out, expect, tmp_path / "ok")
    assert rc == 0 and report["mismatches"] == [], report
    assert report["cells"] == 2 * len(expect) and report["max_abs_diff"] == 0.0
    # the check can fail: chosen and rejected swapped in one row of a preference split
    i = next(j for j, e in enumerate(expect) if e["column"] == "chosen_audio")
    swapped = [dict(e) for e in expect]
    swapped[i]["wav"], swapped[i + 1]["wav"] = expect[i + 1]["wav"], expect[i]["wav"]
    rc, report = decode_with_datasets(out, swapped, tmp_path / "swapped")
    assert rc == 1
    assert {(m["split"], m["row"]) for m in report["mismatches"]} == {(expect[i]["split"], expect[i]["row"])}
    assert {m["reader"] for m in report["mismatches"]} == {"load_from_disk", "load_dataset_parquet"}


def skip_reason(table: Path) -> str | None:
    """The reason of a skipped analysis' table (one status/reason row), None for a computed one."""
    df = pd.read_csv(table)
    return str(df["reason"].iloc[0]) if list(df.columns) == ["status", "reason"] else None


@pytest.mark.slow
def test_stats_on_the_published_dataset_equal_the_runs_icc(published, tmp_path):
    res, out = published
    for clips in (["--clips", str(res / "study/stimuli.csv")], []):  # given, and the published stimuli split
        dest = tmp_path / f"stats{len(clips)}"
        assert main(["stats", "--ratings", str(out), *clips, "--out", str(dest), *STATS_ARGS]) == 0
        assert (dest / "tables/icc.csv").read_bytes() == (res / "stats/tables/icc.csv").read_bytes()
    # without --clips the published stimuli give n_chars (the response texts' lengths): Table 2 is not skipped for
    # the want of it
    reason = skip_reason(tmp_path / "stats0/tables/table2_lmm.csv")
    assert reason is None or "n_chars" not in reason, reason


@pytest.mark.slow
def test_card_records_the_runs_config_and_scale(published):
    """Issue #47: the card shows the run's config record (results/config.yaml), not the shipped config, and the
    dataset records the rating scale (card header, ratings split description)."""
    import datasets

    res, out = published
    header, shown = card_parts(out)
    assert shown == yaml.safe_load((res / "config.yaml").read_text())
    assert header["rating_scale"] == PAPER_SCALE.as_config()
    description = datasets.load_from_disk(str(out))["ratings"].info.description
    assert PAPER_SCALE.describe() in description and PAPER_SCALE.describe() in (out / "README.md").read_text()


@pytest.mark.slow
def test_a_1_to_5_study_is_read_back_on_its_recorded_scale(tmp_path, capsys):
    """A study rated on 1-5 (study.scale): the dataset records 1-5; `modprefs stats` on it without --scale uses it
    (the run's icc.csv byte for byte), with --scale 1:5 too, and refuses --scale 1:100 naming both scales."""
    res = make_results(tmp_path, scale=MOS)
    add_icc(res, tmp_path, "1:5")
    out = tmp_path / "dataset"
    assert main(["publish", "--results", str(res), "--out", str(out), "--salt", SALT]) == 0
    header, shown = card_parts(out)
    assert header["rating_scale"] == MOS and shown["study"]["scale"] == MOS
    assert RatingScale(1, 5, 1, "Bad", "Excellent").describe() in (out / "README.md").read_text()
    dest = tmp_path / "stats"
    assert main(["stats", "--ratings", str(out), "--out", str(dest), *STATS_ARGS]) == 0
    assert (dest / "tables/icc.csv").read_bytes() == (res / "stats/tables/icc.csv").read_bytes()
    assert "1-5 (step 1; 1 = Bad, 5 = Excellent)" in (dest / "report.html").read_text()
    capsys.readouterr()
    bad = tmp_path / "stats_bad"
    assert main(["stats", "--ratings", str(out), "--out", str(bad), *STATS_ARGS, "--scale", "1:100"]) == 2
    err = capsys.readouterr().err
    assert "--scale 1:100:1" in err and "1:5:1" in err and "Traceback" not in err and err.count("\n") == 1
    assert not bad.exists()
    same = tmp_path / "stats_same"
    assert main(["stats", "--ratings", str(out), "--out", str(same), *STATS_ARGS, "--scale", "1:5"]) == 0
    assert (same / "tables/icc.csv").read_bytes() == (res / "stats/tables/icc.csv").read_bytes()


@pytest.mark.slow
def test_the_published_stimuli_are_a_pairs_source_with_their_own_audio(published, tmp_path):
    """Item 2's stimulus half: data.source = the published folder (data.format: pairs, tts.backend: given)."""
    from modprefs.data.pairs_interactions import load_pairs

    res, out = published
    data = {"format": "pairs", "source": str(out)}  # no hf_split, no columns: the published study is recognised
    conv = load_pairs(data, "given", audio_dir=tmp_path / "audio").set_index("conversation_id")
    stim = pd.read_csv(res / "study/stimuli.csv")
    manifest = pd.read_csv(res / "audio/manifest.csv").set_index("clip_id")
    source = pd.read_parquet(res / "data/conversations.parquet").set_index("conversation_id")
    assert sorted(conv.index) == sorted(stim["prompt_id"].unique())
    for prompt in conv.index:
        for k in (0, 1):
            assert conv.at[prompt, f"text_{k}"] == source.at[prompt, f"text_{k}"]
            assert conv.at[prompt, f"model_name_{k}"] == source.at[prompt, f"model_name_{k}"]
            wav = res.parent / manifest.loc[f"{prompt}_{k}", "path"]
            assert Path(conv.at[prompt, f"audio_{k}"]).read_bytes() == wav.read_bytes()  # the study's own file
        assert conv.at[prompt, "history"][1] == {"role": "model", "content": "hello"}
    # a data.columns given by the user still wins over the published names
    with pytest.raises(Exception, match="nope"):
        load_pairs({**data, "columns": {"item_id": "nope"}}, "given", audio_dir=tmp_path / "audio2")


@pytest.mark.slow
def test_preferences_go_through_trls_reward_data_path(published):
    import datasets
    from transformers import AutoTokenizer
    from trl import RewardConfig, RewardTrainer
    from trl.data_utils import is_conversational

    from modprefs.reward.backbones.minilm import minilm_path

    _, out = published
    dd = datasets.load_from_disk(str(out))
    text = dd["preferences_text"]
    assert len(text) > 0 and is_conversational(text.remove_columns(["chosen_audio", "rejected_audio"])[0])
    tok = AutoTokenizer.from_pretrained(str(minilm_path()))
    tok.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    args = RewardConfig(output_dir=str(out.parent / "trl"), report_to=[], bf16=False, use_cpu=True)
    # RewardTrainer's own dataset preprocessing (chat template, tokenizing, length filter); audio left to a
    # speech reward model: decoding Audio cells needs torchcodec, so the text path drops them first
    prepared = RewardTrainer._prepare_dataset(
        None, text.remove_columns(["chosen_audio", "rejected_audio"]), tok, args, "train"
    )
    assert len(prepared) == len(text) and all(len(x) > 0 for x in prepared["chosen_ids"])
    assert prepared[0]["chosen_ids"] != prepared[0]["rejected_ids"]
    for row in text.cast_column("chosen_audio", datasets.Audio(decode=False)).cast_column(
        "rejected_audio", datasets.Audio(decode=False)
    ):
        assert row["margin"] > 0 and 0 <= row["agreement"] <= 1 and row["n_raters"] > 0
        for c in ("chosen_audio", "rejected_audio"):
            samples, sr = sf.read(io.BytesIO(row[c]["bytes"]))
            assert sr == 16000 and len(samples) > 0
    rel = dd["item_reliability"].to_pandas()
    assert set(rel["condition"]) == {"text", "audio"} and rel["majority_share"].between(0.5, 1).all()


@pytest.mark.slow
def test_card_shows_icc_table_and_simulated_banner(published):
    res, out = published
    card = (out / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["license"] == "cc-by-4.0" and header["size_categories"]
    assert {c["config_name"] for c in header["configs"]} >= {"ratings", "stimuli", "preferences_text"}
    assert SIMULATED_BANNER in card and "## Reliability (ICC)" in card
    icc = pd.read_csv(res / "stats/tables/icc.csv")
    for cond, lo in zip(icc["condition"], icc["icc_2_k_lo"]):
        assert f"| {cond} " in card
        if not math.isnan(lo):
            assert f"{lo:.4g}" in card


def test_collected_ratings_get_no_banner(tmp_path):
    res = make_results(tmp_path)
    for t in ("ratings", "trials", "participants"):
        df = pd.read_csv(res / f"ratings/{t}.csv")
        df["source"] = "collected"
        df.to_csv(res / f"ratings/{t}.csv", index=False)
    pd.DataFrame({"condition": ["text"], "icc_2_k": [0.5]}).to_csv(res / "stats/tables/icc.csv", index=False)
    run = read_results(res)
    splits = build_splits(
        run, PublishOptions(salt=SALT), audio={c: {"bytes": b"", "path": c} for c in run.manifest.clip_id}
    )
    assert set(splits.frames["ratings"]["source"]) == {"human"}
    card = dataset_card(splits.frames, run.icc, None, "cc-by-4.0", splits.ties, splits.dropped)
    assert SIMULATED_BANNER not in card


@pytest.mark.slow
def test_no_planted_identifier_is_published(tmp_path):
    import datasets

    res = make_results(tmp_path, plant=True)
    pd.DataFrame({"condition": ["text"], "icc_2_k": [0.5]}).to_csv(res / "stats/tables/icc.csv", index=False)
    originals = set(pd.read_csv(res / "ratings/participants.csv", dtype=str)["participant_id"])
    cfg = yaml.safe_load(SHIPPED_CONFIG.read_text())
    cfg["publish"] = {**cfg.get("publish", {}), "salt": SALT}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    (res / "config.yaml").write_text(yaml.safe_dump(cfg))  # a hand-made record holding the salt, too
    out = tmp_path / "dataset"
    assert main(["publish", "--results", str(res), "--out", str(out), "--config", str(tmp_path / "config.yaml")]) == 0
    planted = [PROLIFIC, EMAIL, URL, IP, SESSION, SALT, *originals]
    dd = datasets.load_from_disk(str(out))
    for split, ds in dd.items():
        df = ds.to_pandas()
        for c in df.columns:
            cells = df[c].astype(str)
            for s in planted:
                assert not cells.str.contains(s, regex=False).any(), (split, c, s)
    for f in out.rglob("*"):  # every byte written: card, Arrow, Parquet, JSON
        if f.is_file():
            data = f.read_bytes()
            for s in planted:
                assert s.encode() not in data, (f, s)
    card = (out / "README.md").read_text()
    assert "prolific_pid" in card and "ip_address" in card  # named as dropped
    just = dd["ratings"].to_pandas()["justification"].dropna()
    assert just.str.contains(r"\[email\]").any() and just.str.contains(r"\[url\]").any()
    assert dd["participants"].num_rows == len(originals) and "notes" not in dd["participants"].column_names


def test_missing_results_file_is_a_one_line_error(tmp_path, capsys):
    res = make_results(tmp_path)
    (res / "audio/manifest.csv").unlink()
    assert main(["publish", "--results", str(res), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "audio/manifest.csv" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
    assert main(["publish", "--results", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "no such folder" in capsys.readouterr().err
    (res / "stats/tables/icc.csv").unlink(missing_ok=True)
    with pytest.raises(PublishError, match="missing .*audio/manifest.csv"):
        read_results(res)


def test_missing_run_config_is_an_error_saying_how_to_make_it(tmp_path, capsys):
    """A results folder without the run's config record (results/config.yaml): exit 2, one line naming the file
    and the command that makes it; nothing written."""
    res = make_results(tmp_path)
    (res / "stats/tables/icc.csv").write_text("condition,icc_2_k\ntext,0.5\n")
    (res / "config.yaml").unlink()
    assert main(["publish", "--results", str(res), "--out", str(tmp_path / "o"), "--salt", SALT]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert str(res / "config.yaml") in err and "snakemake --cores 1 results/config.yaml" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_push_offline_writes_locally_and_says_so(published, tmp_path, monkeypatch, capsys):
    res, _ = published
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "dataset"
    rc = main(["publish", "--results", str(res), "--out", str(out), "--salt", SALT, "--push-to-hub", "lab/study"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "offline" in err and "HF_HUB_OFFLINE" in err and str(out) in err
    assert (out / "dataset_dict.json").is_file() and (out / "README.md").is_file()
    assert main(["publish", "--results", str(res), "--out", str(tmp_path / "x"), "--push-to-hub", "not a repo"]) == 2


# ---- the shared default run ----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.integration
def test_default_run_published_and_read_back(default_run, tmp_path):
    """Issue #47's acceptance on the default run: the card shows the config the run used (its record
    results/config.yaml: the run's config file plus the schema's defaults) and records its scale; `modprefs stats`
    on the dataset, without --scale and without --clips, gives the run's icc.csv byte for byte and runs Table 2
    (n_chars from the published response texts) as the run did."""
    given = yaml.safe_load((default_run / "config.yaml").read_text())
    record = yaml.safe_load((default_run / "results/config.yaml").read_text())
    out = tmp_path / "dataset"
    assert main(["publish", "--results", str(default_run / "results"), "--out", str(out), "--salt", SALT]) == 0
    header, shown = card_parts(out)
    assert shown == record and header["rating_scale"] == scale_from_config(record).as_config()
    assert [(k, v) for k, v in config_leaves(given) if k != ("publish", "salt") and leaf(record, k) != v] == []
    assert "salt" not in record.get("publish", {})
    st = record["stats"]
    args = ["--n-boot", str(st["n_boot"]), "--seed", str(record["seed"]), "--ci-level", str(st["ci_level"])]
    args += ["--ci-method", st["icc_ci_method"], "--n-perm", "0", "--n-boot-alpha", "0", "--n-perm-alpha", "0"]
    args += ["--icc-test", "jackknife"]  # Table 4's test (its calibration: a minute a run) is not compared here
    clips = ["--clips", str(default_run / "results/study/stimuli.csv")]
    for given_clips in ([], clips):  # the published stimuli split, and the run's stimuli.csv
        dest = tmp_path / f"stats{len(given_clips)}"
        cmd = ["stats", "--ratings", str(out), *given_clips, "--out", str(dest), *args, "--n-boot-threshold", "0"]
        assert main(cmd) == 0
        assert (dest / "tables/icc.csv").read_bytes() == (default_run / "results/stats/tables/icc.csv").read_bytes()
    table2 = tmp_path / "stats0/tables/table2_lmm.csv"
    assert skip_reason(table2) is None, skip_reason(table2)
    pd.testing.assert_frame_equal(pd.read_csv(table2), pd.read_csv(default_run / "results/stats/tables/table2_lmm.csv"))
    import datasets

    dd = datasets.load_from_disk(str(out))
    judged = (default_run / "results/judges/ratings.csv").is_file()
    assert ("judge" in set(dd["ratings"]["source"])) == judged
    assert len(dd["stimuli"]) == len(pd.read_csv(default_run / "results/sampling/final_prompts.csv"))
    # every Audio cell, decoded by `datasets` with both readers, is its study WAV sample for sample
    expect = audio_cells_expected(default_run / "results", out)
    rc, report = decode_with_datasets(out, expect, tmp_path / "decode")
    assert rc == 0 and report["cells"] == 2 * len(expect) and report["max_abs_diff"] == 0.0, report


def config_leaves(node: dict, path: tuple = ()) -> list[tuple[tuple, object]]:
    """Every (key path, value) of a nested mapping's leaves (lists are leaves)."""
    out = []
    for k, v in node.items():
        out += config_leaves(v, (*path, k)) if isinstance(v, dict) and v else [((*path, k), v)]
    return out


def leaf(node: dict, path: tuple) -> object:
    for k in path:
        node = node[k] if isinstance(node, dict) and k in node else {"<missing>": None}
    return node


def hub_from_published(out: Path, calls: list[tuple[str, str | None]]):
    """A stand-in for ``datasets.load_dataset`` on a hub id (no hub here): config ``name`` (default ``ratings``) of
    the published folder ``out`` read from its local Parquet files, as the card's configs name them; every
    ``(repo, name)`` asked for is appended to ``calls``."""
    import datasets

    real = datasets.load_dataset

    def load(repo, name=None, split=None, **kw):
        calls.append((repo, name))
        config = name or "ratings"
        if not (out / "data" / config).is_dir():
            raise ValueError(f"BuilderConfig {config} not found")
        return real("parquet", data_dir=str(out / "data" / config), split=split)

    return load


@pytest.mark.slow
def test_hub_id_of_a_published_dataset_reads_its_configs(published, tmp_path, monkeypatch):
    """hf://owner/name of a published dataset: the hub path loads the card's configs (ratings by default, then
    participants); the hub is replaced by the local Parquet files, as the card's configs name them."""
    import datasets
    import huggingface_hub

    res, out = published
    calls: list[tuple[str, str | None]] = []
    monkeypatch.setattr(datasets, "load_dataset", hub_from_published(out, calls))
    cards: list[str] = []  # the card (its recorded scale) comes from the hub too

    def card(repo, filename, repo_type=None, **kw):
        cards.append(f"{repo_type}:{repo}/{filename}")
        return str(out / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", card)
    dest = tmp_path / "stats"
    args = ["--clips", str(res / "study/stimuli.csv"), "--out", str(dest), *STATS_ARGS]
    assert main(["stats", "--ratings", "hf://lab/study", *args]) == 0
    assert ("lab/study", "participants") in calls and cards == ["dataset:lab/study/README.md"]
    assert (dest / "tables/icc.csv").read_bytes() == (res / "stats/tables/icc.csv").read_bytes()
    assert main(["stats", "--ratings", "hf://lab/study", *args, "--overwrite", "--scale", "0:10"]) == 2


def test_hub_id_of_a_published_study_is_a_pairs_source(published, tmp_path, monkeypatch):
    """data.source hf://owner/name of a published study: the default config is the ratings, so the pairs source
    loads the stimuli config too and reads the same items and WAV bytes as from the published folder. The hub is
    replaced by the local Parquet files, as the card's configs name them (as in the test above)."""
    import datasets

    from modprefs.data.pairs_interactions import load_pairs

    _, out = published
    calls: list[tuple[str, str | None]] = []
    local = load_pairs({"format": "pairs", "source": str(out)}, "given", audio_dir=tmp_path / "a1")
    monkeypatch.setattr(datasets, "load_dataset", hub_from_published(out, calls))
    hub = load_pairs({"format": "pairs", "source": "hf://lab/study"}, "given", audio_dir=tmp_path / "a2")
    assert calls == [("lab/study", None), ("lab/study", "stimuli")]
    text_columns = ["conversation_id", "prompt", "text_0", "text_1", "model_name_0", "model_name_1"]
    pd.testing.assert_frame_equal(local[text_columns], hub[text_columns])
    for a, b in zip(
        local["audio_0"].tolist() + local["audio_1"].tolist(), hub["audio_0"].tolist() + hub["audio_1"].tolist()
    ):
        assert Path(a).read_bytes() == Path(b).read_bytes()


def test_publish_config_block_is_strict_with_defaults():
    from modprefs.config_checks import ConfigError, validate_config

    root = Path(__file__).resolve().parents[2]
    schema = root / "workflow/schemas/config.schema.yaml"
    cfg = yaml.safe_load((root / "config.yaml").read_text())
    cfg.pop("publish")
    validated = validate_config(cfg, schema) or cfg
    assert validated.get("publish", {}).get("license", "cc-by-4.0") == "cc-by-4.0"
    with pytest.raises(ConfigError, match="publish.licence"):
        validate_config({**cfg, "publish": {"licence": "mit"}}, schema)
    with pytest.raises(ConfigError, match="publish.scrub.emails"):
        validate_config({**cfg, "publish": {"scrub": {"emails": "yes"}}}, schema)
    opts = PublishOptions.from_config({"drop_fields": ["age"], "scrub": {"urls": False}})
    assert opts.drop_fields == ("age",) and opts.scrub_emails and not opts.scrub_urls and opts.license == "cc-by-4.0"


def test_judge_ratings_are_published_and_left_out_when_read_back(tmp_path):
    from modprefs.io_tables import strings_frame
    from modprefs.ratings.sources_published import published_ratings

    res = make_results(tmp_path)
    pd.DataFrame({"condition": ["text"], "icc_2_k": [0.5]}).to_csv(res / "stats/tables/icc.csv", index=False)
    clips = pd.read_csv(res / "audio/manifest.csv")[["clip_id", "prompt_id"]]
    judged = pd.concat(
        [
            clips.assign(judge="smol", model="m", modality="text", kind="response_quality", rating=60),
            clips.assign(judge="dnsmos", model="d", modality="audio", kind="audio_quality", rating=70),
        ]
    ).assign(backend="local", prompt_version="v1", sample=0, status="ok", reason="")
    (res / "judges").mkdir()
    judged.to_csv(res / "judges/ratings.csv", index=False)
    run = read_results(res)
    splits = build_splits(run, PublishOptions(salt=SALT), audio={c: {"bytes": b"", "path": c} for c in clips.clip_id})
    r = splits.frames["ratings"]
    j = r[r["source"] == "judge"]
    assert len(j) == 2 * len(clips) and set(j["participant_id"]) == {"judge:smol", "judge:dnsmos"}
    assert (j.loc[j["condition"] == "audio", "audio_quality"] == 70).all() and j["rating"].isin([60]).sum() == len(
        clips
    )
    back = published_ratings(strings_frame(r))
    assert len(back) == len(run.ratings) and set(back["source"]) == {"simulated"}


@pytest.mark.slow
@pytest.mark.integration
def test_publish_rule_writes_results_dataset(default_run, tmp_path):
    from support.workflow_runner import copy_run, planned_jobs, run_workflow

    run = copy_run(default_run, tmp_path / "run", drop=("results/dataset",))
    assert set(planned_jobs(run_workflow(run, "-n", "publish"))) == {"publish"}  # nothing upstream reruns
    proc = run_workflow(run, "publish", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = run / "results/dataset"
    assert (out / "dataset_dict.json").is_file() and (
        out / "data/preferences_text/train-00000-of-00001.parquet"
    ).is_file()
    assert (run / "results/logs/publish/publish.log").is_file()
    card = (out / "README.md").read_text()
    assert (
        "## Reliability (ICC)" in card
        and "salt" not in card.split("## Configuration used", 1)[1].split("publish:")[1][:200]
    )
    header, shown = card_parts(out)  # the run's config record, which the rule reads
    assert shown == yaml.safe_load((run / "results/config.yaml").read_text())
    assert header["rating_scale"] == scale_from_config(shown).as_config()


@pytest.mark.slow
def test_out_is_checked_first_and_replaced_whole(published, tmp_path, capsys):
    res, _ = published
    out = tmp_path / "dataset"
    out.mkdir()
    (out / "old.txt").write_text("x")
    assert main(["publish", "--results", str(res), "--out", str(out), "--salt", SALT]) == 2
    assert "not empty" in capsys.readouterr().err and (out / "old.txt").is_file()
    assert main(["publish", "--results", str(res), "--out", str(out), "--salt", SALT, "--overwrite"]) == 0
    assert not (out / "old.txt").exists() and (out / "dataset_dict.json").is_file()
    assert main(["publish", "--results", str(res), "--out", str(res.parent), "--overwrite"]) == 2
    assert "holds --results" in capsys.readouterr().err


# ---- issue #49: nothing fed to publish destroys a result or is embedded unchecked ----------------------------------
@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A finished run's folder (work/results) with a stand-in icc.csv: every case below fails before it is read."""
    work = tmp_path_factory.mktemp("finished")
    res = make_results(work)
    (res / "stats/tables/icc.csv").write_text("condition,icc_2_k\ntext,0.5\n")
    return work


def _text_as_wav(res: Path) -> list[str]:
    (res.parent / "results/audio/clips/attn_1.wav").write_text("RIFF? no: a text file named .wav\n")
    return []


def _folder_as_wav(res: Path) -> list[str]:
    wav = res.parent / "results/audio/clips/attn_1.wav"
    wav.unlink()
    wav.mkdir()
    return []


def _config(res: Path, text: str) -> list[str]:
    (res.parent / "publish.yaml").write_text(text)
    return ["--config", str(res.parent / "publish.yaml")]


# case: (setup(results) -> extra args (``--out`` among them, else work/dataset), fragments the message must contain)
PUBLISH_CASES = {
    "out_replaces_a_folder_inside_results": (
        lambda r: ["--out", str(r / "stats"), "--overwrite"],
        ["--out", "lies inside --results", "choose a folder outside it"],
    ),
    "out_new_folder_inside_results": (lambda r: ["--out", str(r / "published")], ["lies inside --results"]),
    "out_is_results": (lambda r: ["--out", str(r), "--overwrite"], ["holds --results", "(or is it)"]),
    "out_holds_results": (lambda r: ["--out", str(r.parent), "--overwrite"], ["holds --results"]),
    "text_file_named_wav": (
        _text_as_wav,
        ["audio/manifest.csv row 3: clip attn_1", "attn_1.wav is not audio", "Format not recognised"],
    ),
    "folder_named_wav": (_folder_as_wav, ["row 3: clip attn_1", "attn_1.wav is a folder, not a file"]),
    "config_unknown_top_level_key": (
        lambda r: _config(r, "licence: mit\n"),
        ["--config", "publish.yaml line 1: licence: unknown key"],
    ),
    "config_unknown_publish_key": (
        lambda r: _config(r, "publish:\n  licence: mit\n"),
        ["publish.yaml line 2: publish.licence: unknown key (allowed: drop_fields, license, salt, scrub)"],
    ),
    "config_bad_value": (
        lambda r: _config(r, "publish:\n  scrub: {emails: 'yes'}\n"),
        ["publish.yaml line 2: publish.scrub.emails: 'yes' is not of type 'boolean'"],
    ),
    "config_not_yaml": (lambda r: _config(r, "publish: [\n"), ["--config", "publish.yaml", "not valid YAML"]),
    "conversations_damaged": (
        lambda r: _then_none((r / "data/conversations.parquet").write_bytes(b"PAR1 not parquet PAR1")),
        ["data/conversations.parquet cannot be read as Parquet"],
    ),
}


def _then_none(*_effects: object) -> list[str]:
    return []


def test_publish_bad_inputs_suite_size():
    assert len(PUBLISH_CASES) >= 10


@pytest.mark.slow  # a subprocess importing datasets: 3-7 s a case on 2 busy cores
@pytest.mark.parametrize("case", sorted(PUBLISH_CASES))
def test_publish_bad_input_fails_cleanly_and_results_keep_every_file(finished, tmp_path, case):
    """Each case runs `modprefs publish` in a subprocess: exit 2, the problem named, no traceback, and not a byte
    under the run's folder (results/ and its WAVs) or beside it changed: `results/` never loses a file to publish."""
    from support.bad_inputs import assert_clean_failure

    work = tmp_path / "work"
    shutil.copytree(finished, work, symlinks=True)
    res = work / "results"
    setup, mention = PUBLISH_CASES[case]
    extra = setup(res)
    if "--out" not in extra:
        extra += ["--out", str(work / "dataset")]
    cmd = [sys.executable, "-m", "modprefs.cli", "publish", "--results", str(res), "--salt", SALT, *extra]
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "HF_DATASETS_OFFLINE": "1"}
    result = assert_clean_failure(cmd, watch=[work], must_mention=mention, env=env, timeout=300)
    assert result.returncode == 2 and result.output.startswith("modprefs publish: error: "), result.output


@pytest.mark.slow
def test_the_hubs_parquet_layout_of_a_published_study_is_read_back(published, tmp_path):
    """A clone of the dataset's hub repository holds README.md and data/<split>/train-*.parquet only (no save_to_disk
    copy): `modprefs stats` reads its ratings, trials and participants splits, its stimuli and the scale its card
    records, and gives the run's icc.csv (it was refused with a message about mismatched columns, #49); the same
    folder is a pairs source (its stimuli split, with their audio)."""
    from modprefs.data.pairs_interactions import load_pairs

    res, out = published
    clone = tmp_path / "clone"
    shutil.copytree(out / "data", clone / "data")
    shutil.copy(out / "README.md", clone / "README.md")
    dest = tmp_path / "stats"
    assert main(["stats", "--ratings", str(clone), "--out", str(dest), *STATS_ARGS]) == 0
    assert (dest / "tables/icc.csv").read_bytes() == (res / "stats/tables/icc.csv").read_bytes()
    conv = load_pairs({"format": "pairs", "source": str(clone)}, "given", audio_dir=tmp_path / "audio")
    stimuli = pd.read_csv(res / "study/stimuli.csv")
    assert sorted(conv["conversation_id"]) == sorted(stimuli["prompt_id"].unique())
    assert all(Path(p).is_file() for p in conv["audio_0"])
