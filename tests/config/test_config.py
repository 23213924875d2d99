"""Bad configurations stop the run before any job, with a message naming the key."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from modprefs.config_checks import ConfigError, check_config, validate_config
from support.workflow_runner import THREE_SYNTHESISERS_TTS, deep_update

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"


def _shipped() -> dict:
    return yaml.safe_load((ROOT / "config.yaml").read_text())


def _default() -> dict:
    """The shipped config with one engine of each offline synthesiser, whose settings the checks below test."""
    return deep_update(_shipped(), {"tts": THREE_SYNTHESISERS_TTS})


def _set(cfg: dict, dotted: str, value) -> dict:
    cfg = copy.deepcopy(cfg)
    *path, last = dotted.split(".")
    node = cfg
    for p in path:
        node = node[p]
    if value is _DELETE:
        del node[last]
    else:
        node[last] = value
    return cfg


class _Delete:
    """Marks a key to delete (a stable repr, so that test ids are the same in every xdist worker)."""

    def __repr__(self) -> str:
        return "<deleted>"


_DELETE = _Delete()

SCHEMA_CASES = [
    ("sampling.n_prompts", "twelve", "sampling.n_prompts"),
    ("sampling.n_prompts", 1, "sampling.n_prompts"),
    ("sampling.long_fraction", 1.5, "sampling.long_fraction"),
    ("sampling.long_percentile", 100, "sampling.long_percentile"),
    ("sampling.n_promts", 12, "sampling.n_promts: unknown key"),
    ("seed", -1, "seed"),
    ("seed", 1.5, "seed"),
    ("tts.backend", "festival", "tts.backend"),
    ("tts.speed", 0, "tts.speed"),
    ("tts.speed", 3.0, "tts.speed"),
    ("study.raters_per_condition", 1, "study.raters_per_condition"),
    ("stats.n_boot", -5, "stats.n_boot"),
    ("stats.ci_level", 95, "stats.ci_level"),
    ("ratings.source", "", "ratings.source"),
    ("data.conversation_type", "guided", "data.conversation_type"),
    ("sampling.screening.language", "english", "sampling.screening.language"),
    ("tts.voice", _DELETE, "'voice' is a required property"),
    ("colour", "blue", "colour: unknown key"),
    ("ratings.simulation.b_frist", -2.6, "ratings.simulation.b_frist: unknown key"),
    ("ratings.simulation.var_clip_audio", -1, "ratings.simulation.var_clip_audio"),
]


@pytest.mark.parametrize("key,value,expected", SCHEMA_CASES, ids=[c[0] + "=" + repr(c[1]) for c in SCHEMA_CASES])
def test_schema_errors_name_the_key(key, value, expected):
    with pytest.raises(ConfigError) as info:
        validate_config(_set(_default(), key, value), SCHEMA)
    assert expected in str(info.value)


def test_a_merged_config_shares_no_object_with_the_shared_tts_block():
    """The cases below edit their config in place; the tts block other modules build on (test_bad_inputs' workdir)
    must stay as written whatever order xdist runs them in (CI failed once on exactly this)."""
    before = copy.deepcopy(THREE_SYNTHESISERS_TTS)
    cfg = _default()
    cfg["tts"]["engines"][0].update(voice="zz_nobody")
    cfg["tts"]["engines"].append({"backend": "piper"})
    assert THREE_SYNTHESISERS_TTS == before


def test_default_config_is_valid():
    for cfg in (_shipped(), _default()):
        validate_config(cfg, SCHEMA)
        check_config(cfg, ROOT)


def test_all_problems_reported_at_once():
    cfg = _set(_set(_default(), "seed", "x"), "stats.n_boot", -1)
    with pytest.raises(ConfigError) as info:
        validate_config(cfg, SCHEMA)
    assert "seed" in str(info.value) and "stats.n_boot" in str(info.value)


@pytest.mark.parametrize(
    "key,value,expected",
    [
        ("study.trials_per_participant", 13, "study.trials_per_participant: 13 exceeds sampling.n_prompts"),
        ("data.source", "missing.jsonl", "data.source: file not found"),
        ("attention_check", "nope.json", "attention_check: file not found"),
        ("ratings.source", "no/such/dir", "ratings.source: not found: 'no/such/dir'"),
        ("ratings.source", "results/ratings", "ratings.source: 'results/ratings' is inside results/"),
        ("ratings.columns", {"ratng": "score"}, "ratings.columns: unknown column 'ratng'"),
    ],
)
def test_cross_key_checks(key, value, expected):
    with pytest.raises(ConfigError, match=expected):
        check_config(_set(_default(), key, value), ROOT)


@pytest.mark.integration
def test_snakemake_stops_before_any_job(tmp_path):
    cfg = _set(_default(), "sampling.long_fraction", "a lot")
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"{path} line " in out and "sampling.long_fraction" in out
    assert "Job stats" not in out
    assert "Traceback" not in out and 'File "' not in out  # one message, no stack


# --- the schema covers every nested key --------------------------------------------------------------------


def _schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


def test_schema_lists_every_key_the_dataclasses_read():
    """judges.local / judges.allocation / tts.engines[] keys in the schema = what the code reads (no drift)."""
    import dataclasses

    from modprefs.judges.local import LocalJudgeConfig
    from modprefs.speech.preflight import BACKEND_KEYS
    from modprefs.stats.tables.rater_allocation import AllocationConfig

    judges = _schema()["properties"]["judges"]["properties"]
    assert set(judges["local"]["properties"]) == {f.name for f in dataclasses.fields(LocalJudgeConfig)} - {"judge"}
    assert set(judges["allocation"]["properties"]) == {f.name for f in dataclasses.fields(AllocationConfig)}
    tts = _schema()["properties"]["tts"]["properties"]
    engine_keys = set(tts["engines"]["items"]["properties"])
    # `given` (the lab's audio) is no engine: its keys (sample_rate, attention_tts) are the study block's only
    synthesisers = [keys for backend, keys in BACKEND_KEYS.items() if backend != "given"]
    assert engine_keys == {"backend", "voice", "lang", "speed"} | set().union(*synthesisers)
    assert engine_keys <= set(tts)
    for block in (judges["local"], judges["allocation"], tts["engines"]["items"]):
        assert block["additionalProperties"] is False


NESTED_CASES = [
    ("tts.engines.0.voise", "x", "tts.engines[0].voise: unknown key"),
    ("judges.allocation.targt", 0.5, "judges.allocation.targt: unknown key"),
    ("judges.allocation.icc_model", "guess", "judges.allocation.icc_model"),
    ("judges.local.modle_file", "x.gguf", "judges.local.modle_file: unknown key"),
    ("judges.local.min_answer_mass", 1.5, "judges.local.min_answer_mass"),
    ("judges.prompts", {"text/response_qualty": "x"}, "judges.prompts"),
    ("judges.response_format", {"txt": True}, "judges.response_format.txt: unknown key"),
    ("judges.prices", {"gpt-4o": {"inptu": 1}}, "judges.prices.gpt-4o.inptu: unknown key"),
]


def _set_path(cfg: dict, dotted: str, value) -> dict:
    cfg = copy.deepcopy(cfg)
    *path, last = dotted.split(".")
    node = cfg
    for p in path:
        node = node[int(p)] if isinstance(node, list) else node.setdefault(p, {})
    node[last] = value
    return cfg


@pytest.mark.parametrize("key,value,expected", NESTED_CASES, ids=[c[0] for c in NESTED_CASES])
def test_nested_schema_errors(key, value, expected):
    with pytest.raises(ConfigError) as info:
        validate_config(_set_path(_default(), key, value), SCHEMA)
    assert expected in str(info.value)


# --- cross-key, file, voice/language and data checks --------------------------------------------------------


def _bad_file(tmp_path: Path, name: str, content: bytes | str) -> str:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(path)


CROSS_CASES = [
    (lambda c, d: c["tts"].update(voice="zz_nobody"), "tts.voice: 'zz_nobody' is not a kokoro-onnx voice"),
    (lambda c, d: c["tts"].update(lang="klingon"), "tts.lang: 'klingon' is not a language"),
    (lambda c, d: c["sampling"]["screening"].update(language="xx"), "sampling.screening.language: 'xx' is not"),
    (lambda c, d: c["tts"]["engines"][0].update(voice="zz_nobody"), "tts.engines[0].voice: 'zz_nobody'"),
    (lambda c, d: c["tts"]["engines"].append({"backend": "piper"}), "tts.engines: backend 'piper' appears more"),
    (lambda c, d: c["judges"]["allocation"].update(min_raters=40), "judges.allocation: need 1 <= min_raters"),
    (lambda c, d: c["audio_qc"].update(thresholds={"max_wr": 0.2}), "audio_qc.thresholds: QC threshold 'max_wr'"),
    (
        lambda c, d: c["sampling"].update(n_prompts=100),
        # 4 of the sample's 64 have PRISM's "EMPTY STRING" response, which the text screening removes
        "sampling.n_prompts: 100 prompts requested but only 60 eligible conversations",
    ),
    (lambda c, d: c["sampling"].update(n_prompts=40, long_fraction=0.9), "stratum 'long_diff' needs 36"),
    (
        lambda c, d: c.update(attention_check=_bad_file(d, "a.json", '{"prompt": "x",\n "responses": [}')),
        "a.json, line 2, column 16: not valid JSON",
    ),
    (
        lambda c, d: c.update(attention_check=_bad_file(d, "a.json", '{"prompt": "x", "responses": [{"text": "ok"}]}')),
        "'responses' must be a list of two",
    ),
    (
        lambda c, d: c.update(
            attention_check=_bad_file(
                d, "a.json", '{"prompt": "x", "responses": [{"text": "Fine."}, {"text": "\\ud83d\\ude00"}]}'
            )
        ),
        "clip attn_1: nothing speakable left",
    ),
    (
        lambda c, d: c["sampling"]["screening"].update(harmful_terms=_bad_file(d, "t.txt", "# only a comment\n")),
        "t.txt lists no term",
    ),
    (
        lambda c, d: c["sampling"]["screening"].update(harmful_terms=_bad_file(d, "t.txt", b"ok\nbad \xff\n")),
        "t.txt line 2, column 5: not UTF-8",
    ),
    (
        lambda c, d: c["data"].update(source=_bad_file(d, "c.jsonl", '{"conversation_id": 1,\n')),
        "c.jsonl line 1, column 23: not valid JSON",
    ),
    (lambda c, d: c["data"].update(source=_bad_file(d, "c.jsonl", "")), "holds no eligible 'unguided' conversation"),
]


@pytest.mark.parametrize("edit,expected", CROSS_CASES, ids=[c[1][:40] for c in CROSS_CASES])
def test_cross_key_file_voice_and_data_checks(edit, expected, tmp_path):
    cfg = _default()
    edit(cfg, tmp_path)
    with pytest.raises(ConfigError) as info:
        check_config(cfg, ROOT)
    assert expected in str(info.value)


def test_problems_name_the_file_and_line_that_set_the_key(tmp_path):
    from modprefs.config_files import config_sources

    override = tmp_path / "override.yaml"
    override.write_text("tts:\n  voice: zz_nobody\njudges:\n  allocation:\n    targt: 1\n")
    sources = config_sources([ROOT / "config.yaml", override], {"seed": -3})
    cfg = _default()
    cfg["tts"]["voice"] = "zz_nobody"
    cfg["judges"]["allocation"]["targt"] = 1
    cfg["seed"] = -3
    with pytest.raises(ConfigError) as info:
        validate_config(cfg, SCHEMA, sources)
    text = str(info.value)
    assert f"{override} line 5: judges.allocation.targt: unknown key" in text
    assert "--config: seed: -3 is less than the minimum of 0" in text
    del cfg["judges"]["allocation"]["targt"]
    cfg["seed"] = 1
    with pytest.raises(ConfigError) as info:
        check_config(cfg, ROOT, sources)
    assert f"{override} line 2: tts.voice: 'zz_nobody'" in str(info.value)
    cfg["tts"]["voice"] = "jf_alpha"
    cfg["sampling"]["n_prompts"] = 100
    with pytest.raises(ConfigError) as info:
        check_config(cfg, ROOT, sources)
    line = next(i for i, text in enumerate((ROOT / "config.yaml").read_text().splitlines(), 1) if "n_prompts:" in text)
    assert f"{ROOT / 'config.yaml'} line {line}: sampling.n_prompts" in str(info.value)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("seed: 1\ndata:\n  source: [x\n", "line 4, column 1: not valid YAML: expected ',' or ']'"),
        ("seed: 1\n\tdata: 2\n", "line 2, column 1: not valid YAML"),
        ("", "the config file is empty"),
        ("# nothing but a comment\n", "the config file is empty"),
        ("- seed\n- data\n", "must map keys to values at its top level"),
        (b"seed: \xff\n", "not UTF-8 text"),
        (
            "seed: 1\nstats:\n  n_boot: 10\nstats:\n  n_boot: 20\n",
            "line 4, column 1: not valid YAML: duplicate key 'stats'",
        ),
        ("seed: 1\nstats: {n_boot: 1, n_boot: 2}\n", "line 2, column 20: not valid YAML: duplicate key 'n_boot'"),
    ],
)
def test_config_file_errors_name_file_line_and_column(tmp_path, text, expected):
    from modprefs.config_files import load_config_file

    path = tmp_path / "config.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as info:
        load_config_file(path)
    assert str(info.value).startswith(str(path)) and expected in str(info.value)


def test_paper_config_is_valid():
    """config/paper.yaml over config.yaml (as `--configfile config/paper.yaml` merges them) passes every check."""
    cfg = deep_update(_shipped(), yaml.safe_load((ROOT / "config/paper.yaml").read_text()))
    validate_config(cfg, SCHEMA)
    check_config(cfg, ROOT)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"ratings": {"source": "simulate", "columns": {"rating": "score"}}}, ["ratings.columns is unused"]),
        ({"ratings": {"source": "my_ratings", "columns": {"rating": "score"}}}, []),
        ({"data": {"format": "prism", "columns": {"item_id": "id"}}}, ["data.columns is unused"]),
        ({"data": {"format": "pairs", "columns": {"item_id": "id"}}}, []),
    ],
)
def test_unused_options_are_noted(edit, expected):
    from modprefs.config_checks import unused_option_notes

    notes = unused_option_notes(edit)
    assert len(notes) == len(expected) and all(e in n and n.startswith("note: ") for e, n in zip(expected, notes))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused_at_any_depth(value):
    from modprefs.config_checks import non_finite_problems

    cfg = {"stats": {"ci_level": 0.95}, "tts": {"engines": [{"speed": 1.0}, {"speed": value}]}}
    assert non_finite_problems(cfg) == [
        (("tts", "engines", "1", "speed"), f"tts.engines[1].speed: must be a finite number (got {value!r})")
    ]
    assert non_finite_problems(_default()) == []


def test_a_key_set_to_null_is_unset_unless_null_is_its_value():
    from modprefs.config_checks import unset_null_keys

    schema = yaml.safe_load(SCHEMA.read_text())
    cfg = _set(_set(_default(), "tts.voice", None), "tts.seed", None)
    cfg["audio"] = {"target_lufs": None}
    removed = unset_null_keys(cfg, schema)
    assert ("tts", "voice") in removed and "voice" not in cfg["tts"]
    assert cfg["tts"]["seed"] is None  # null is tts.seed's own value (unseeded)
    assert cfg["audio"]["target_lufs"] is None  # null: leave the level as given
    assert ("tts", "seed") not in removed and ("audio", "target_lufs") not in removed


def test_keys_the_backend_does_not_read_are_dropped_with_a_note():
    from modprefs.config_checks import drop_unused_tts_keys

    cfg = _default()
    cfg["tts"] |= {"backend": "given", "sample_rate": 24000}
    cfg["tts"]["engines"][0]["voices_path"] = "x.bin"
    notes = drop_unused_tts_keys(cfg)
    assert "voice" not in cfg["tts"] and "voices_path" not in cfg["tts"]["engines"][0]
    assert [path for path, _ in notes] == [("tts", "voice"), ("tts", "engines", "0", "voices_path")]
    assert notes[0][1] == "tts.voice ('jf_alpha') is ignored: backend 'given' does not use it"
    # a synthesiser keeps its voice; nothing to note
    assert drop_unused_tts_keys(_default()) == []


def test_the_readme_lab_overlay_merged_over_the_shipped_config_passes_the_checks():
    """docs/own-study.md's lab.yaml over config.yaml, merged as Snakemake merges --configfile layers, then the
    workflow's start-up steps: nothing the lab cannot fix from its own file."""
    from snakemake.utils import update_config

    from modprefs.config_checks import drop_unused_tts_keys, unset_null_keys
    from support.doc_blocks import DOCS, fenced_blocks, section

    (block,) = fenced_blocks(section(DOCS / "own-study.md", "Your own study"), "yaml")
    cfg = _default()
    update_config(cfg, yaml.safe_load(block))
    unset_null_keys(cfg, yaml.safe_load(SCHEMA.read_text()))
    validate_config(cfg, SCHEMA)
    assert [path for path, _ in drop_unused_tts_keys(cfg)] == [("tts", "voice")]
