"""The config reference generated from the schema: every key described, every key on the page."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from modprefs.config_reference import (
    iter_properties,
    main,
    render_config_reference,
    undescribed_properties,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow/schemas"
SCHEMA = yaml.safe_load((SCHEMAS / "config.schema.yaml").read_text(encoding="utf-8"))
SIMULATION = yaml.safe_load((SCHEMAS / "simulation.schema.yaml").read_text(encoding="utf-8"))
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))


def _expand(node: Any, root: Mapping[str, Any], folder: Path | None = SCHEMAS) -> Any:
    """The schema with every ``$ref`` replaced by a copy of its target and ``$defs`` dropped.

    A local reference (``#/...``) points into ``root``; a reference to another file is read from ``folder``
    (kept as it is where ``folder`` is None).
    """
    if isinstance(node, list):
        return [_expand(v, root, folder) for v in node]
    if not isinstance(node, Mapping):
        return node
    ref = node.get("$ref")
    own = {k: v for k, v in node.items() if k != "$ref"}
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return _expand(copy.deepcopy({**target, **own}), root, folder)
    if (
        isinstance(ref, str) and folder is not None
    ):  # another file, whole (the config schema's references name no pointer)
        path = folder / ref
        other = yaml.safe_load(path.read_text(encoding="utf-8"))
        return _expand(copy.deepcopy({**other, **own}), other, path.parent)
    return {k: _expand(v, root, folder) for k, v in node.items() if k != "$defs"}


def _count_definitions(node: Any) -> int:
    """Mappings that are the value of a ``properties`` entry, anywhere but inside conditionals."""
    if isinstance(node, list):
        return sum(_count_definitions(v) for v in node)
    if not isinstance(node, Mapping):
        return 0
    total = 0
    for key, value in node.items():
        if key in ("if", "then", "else", "not"):
            continue
        if key == "properties" and isinstance(value, Mapping):
            total += sum(isinstance(v, Mapping) for v in value.values())
        total += _count_definitions(value)
    return total


def test_every_property_has_a_description():
    assert undescribed_properties(SCHEMA, base=SCHEMAS) == []
    assert undescribed_properties(SIMULATION) == []  # the simulation schema on its own
    # the walk reaches the simulation schema's keys: without them described, they are named
    bare = copy.deepcopy(SIMULATION)
    del bare["properties"]["intercept"]["description"]
    assert undescribed_properties(bare) == ["intercept"]


def test_the_walk_lists_every_property_the_schema_holds_once():
    keys = [r.key for r in iter_properties(SCHEMA, CONFIG, base=SCHEMAS)]
    assert len(keys) == len(set(keys))
    expected = _count_definitions(_expand(SCHEMA, SCHEMA))
    assert len(keys) == expected
    # the simulation schema's properties are in that count (and in the walk), one level below ratings.simulation
    n_simulation = len(SIMULATION["properties"])
    assert n_simulation >= 80
    assert expected == _count_definitions(_expand(SCHEMA, SCHEMA, folder=None)) + n_simulation
    assert [k for k in keys if k.startswith("ratings.simulation.")] == [
        f"ratings.simulation.{name}" for name in SIMULATION["properties"]
    ]
    # without the schema's folder the reference is one key, as before
    unfollowed = [r.key for r in iter_properties(SCHEMA, CONFIG)]
    assert len(unfollowed) == len(keys) - n_simulation
    assert not any(k.startswith("ratings.simulation.") for k in unfollowed)
    # every top-level key, and keys at each kind of depth
    assert [k for k in keys if "." not in k and "[" not in k] == list(SCHEMA["properties"])
    for key in [
        "judges.allocation.fit_max_p",
        "tts.engines[].backend",
        "judges.prices.<name>.audio_input",
        "reward.model.backbone.lora.r",
        "reward.runs.<name>.model.backbone.name",
        "reward.runs.<name>.tie_tol",
        "reward.pairs.corpus.voices[].gender",
        "ratings.simulation.intercept",
        "ratings.simulation.difficulty_probs_text",
    ]:
        assert key in keys


def test_descriptions_are_plain_text():
    records = list(iter_properties(SCHEMA, CONFIG, base=SCHEMAS))
    assert any(r.key.startswith("ratings.simulation.") for r in records)
    for record in records:
        for markup in (":func:", ":mod:", ":class:", ":data:", "``"):
            assert markup not in record.description, (record.key, markup)


def _flat_keys(config: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in config.items():
        yield (*prefix, key)
        if isinstance(value, Mapping):
            yield from _flat_keys(value, (*prefix, key))


def test_every_key_of_the_embedded_config_is_in_the_reference():
    records = {r.key: r for r in iter_properties(SCHEMA, CONFIG, base=SCHEMAS)}
    assert not records["ratings.simulation"].ref  # followed: its keys are checked below, not skipped as a leaf's
    leaves = {k for k in records if not any(other.startswith(k + ".") for other in records)}
    for path in _flat_keys(CONFIG):
        # a key of a free-form mapping is <name>; below a key without sub-keys (plan) anything
        candidates = [".".join(path), ".".join((*path[:-1], "<name>"))]
        for i in range(2, len(path)):
            candidates.append(".".join((*path[: i - 1], "<name>", *path[i:])))
        under_leaf = any(".".join(path[:i]) in leaves for i in range(1, len(path)))
        listed = any(k == c or k.startswith(c + ".") for c in candidates for k in records)
        assert under_leaf or listed, ".".join(path)


def test_the_page_names_every_key_and_section():
    page = render_config_reference(SCHEMA, CONFIG, base=SCHEMAS)
    for record in iter_properties(SCHEMA, CONFIG, base=SCHEMAS):
        assert f"| `{record.key}` |" in page, record.key
    for top in SCHEMA["properties"]:
        assert f"\n## `{top}`\n" in page, top
    for markup in (":func:", ":mod:", ":class:"):
        assert markup not in page
    # every table row has its four cells (an unescaped | in a description would add one)
    for line in page.splitlines():
        if line.startswith("| `"):
            assert line.replace("\\|", "").count("|") == 5, line


def test_the_page_lists_the_simulation_keys_with_their_descriptions_and_defaults():
    page = render_config_reference(SCHEMA, CONFIG, base=SCHEMAS)
    rows = {line.split(" | ", 1)[0]: line for line in page.splitlines() if line.startswith("| `")}
    simulation = CONFIG["ratings"]["simulation"]
    for name, prop in SIMULATION["properties"].items():
        row = rows[f"| `ratings.simulation.{name}`"]
        assert " ".join(prop["description"].split())[:40] in row, name
        assert f"| `{json.dumps(simulation[name])}` (config.yaml) |" in row, name
    assert rows["| `ratings.simulation.intercept`"].startswith(
        "| `ratings.simulation.intercept` | number | `85.4` (config.yaml) | Latent mean rating"
    )
    assert '| `ratings.simulation.tie_mode` | string | `"snap"` (config.yaml) |' in page
    assert 'Allowed: `"snap"`, `"threshold"`.' in rows["| `ratings.simulation.tie_mode`"]
    # the referring key keeps its own description and is an object, not "see simulation.schema.yaml"
    assert rows["| `ratings.simulation`"].startswith(
        "| `ratings.simulation` | object | see config.yaml | source simulate"
    )


TINY: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "who | what"},
        "mode": {"enum": ["fast", "slow"], "default": "fast", "description": "how fast"},
        "outer": {
            "type": "object",
            "description": "a section",
            "properties": {"inner": {"type": ["integer", "null"], "minimum": 0, "description": "a count"}},
        },
        "jobs": {
            "type": "array",
            "description": "a list",
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string", "description": "the job's id"}},
            },
        },
        "prices": {
            "type": "object",
            "description": "per model",
            "additionalProperties": {"type": "object", "properties": {"usd": {"type": "number"}}},
        },
    },
}


def test_a_small_schema_renders_the_expected_rows():
    defaults = {"name": "alice", "outer": {"inner": 3}}
    assert [r.key for r in iter_properties(TINY, defaults)] == [
        "name",
        "mode",
        "outer",
        "outer.inner",
        "jobs",
        "jobs[].id",
        "prices",
        "prices.<name>.usd",
    ]
    assert undescribed_properties(TINY) == ["prices.<name>.usd"]
    page = render_config_reference(TINY, defaults)
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    assert rows == [
        '| `name` | string; required | `"alice"` (config.yaml) | who \\| what. Constraints: non-empty. |',
        '| `mode` | string | `"fast"` | how fast. Allowed: `"fast"`, `"slow"`. |',
        '| `outer` | object | `{"inner": 3}` (config.yaml) | a section. |',
        "| `outer.inner` | integer or null | `3` (config.yaml) | a count. Constraints: >= 0. |",
        "| `jobs` | array |  | a list. |",
        "| `jobs[].id` | string; required |  | the job's id. |",
        "| `prices` | object |  | per model. |",
        "| `prices.<name>.usd` | number |  |  |",
    ]
    assert [line for line in page.splitlines() if line.startswith("## ")] == [
        "## `name`",
        "## `mode`",
        "## `outer`",
        "## `jobs`",
        "## `prices`",
    ]


def test_a_reference_is_followed_and_its_description_used():
    schema = {
        "type": "object",
        "$defs": {"unit": {"type": "object", "description": "a unit", "properties": {"n": {"type": "integer"}}}},
        "properties": {
            "a": {"$ref": "#/$defs/unit"},
            "b": {"$ref": "#/$defs/unit", "description": "another unit"},
            "c": {"$ref": "other.schema.yaml", "description": "elsewhere"},
        },
    }
    records = {r.key: r for r in iter_properties(schema)}
    assert list(records) == ["a", "a.n", "b", "b.n", "c"]
    assert records["a"].description == "a unit"
    assert records["b"].description == "another unit"
    assert records["c"].ref == "other.schema.yaml"
    assert undescribed_properties(schema) == ["a.n", "b.n"]


def _write_yaml(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_a_reference_to_another_file_is_followed_from_the_schemas_folder(tmp_path):
    schema = {
        "type": "object",
        "properties": {
            "sim": {"$ref": "sub/sim.schema.yaml", "description": "the panel"},
            "unit": {"$ref": "sub/sim.schema.yaml#/$defs/unit"},
        },
    }
    # sub/sim.schema.yaml: a local reference (into itself) and a file reference (relative to sub/)
    _write_yaml(
        tmp_path / "sub/sim.schema.yaml",
        {
            "description": "the file's own description",
            "type": "object",
            "$defs": {"unit": {"type": "object", "description": "a unit", "properties": {"n": {"type": "integer"}}}},
            "properties": {
                "mean": {"type": "number", "minimum": 0, "description": "a mean"},
                "unit": {"$ref": "#/$defs/unit"},
                "deep": {"$ref": "deep.schema.yaml"},
            },
        },
    )
    _write_yaml(
        tmp_path / "sub/deep.schema.yaml",
        {"type": "object", "description": "deeper", "properties": {"k": {"enum": ["x", "y"], "description": "k"}}},
    )
    defaults = {"sim": {"mean": 2.5, "deep": {"k": "y"}}}
    records = {r.key: r for r in iter_properties(schema, defaults, base=tmp_path)}
    assert list(records) == ["sim", "sim.mean", "sim.unit", "sim.unit.n", "sim.deep", "sim.deep.k", "unit", "unit.n"]
    assert records["sim"].description == "the panel"  # the referring key's own description wins
    assert records["sim"].types == ("object",) and records["sim"].ref is None
    assert records["sim.mean"].bounds == {"minimum": 0}
    assert (records["sim.mean"].default, records["sim.mean"].default_source) == (2.5, "config.yaml")
    assert records["sim.unit"].description == "a unit"
    assert records["sim.deep"].description == "deeper"
    assert records["sim.deep.k"].allowed == ("x", "y") and records["sim.deep.k"].default == "y"
    assert records["unit"].description == "a unit"
    assert undescribed_properties(schema, base=tmp_path) == ["sim.unit.n", "unit.n"]
    assert undescribed_properties(schema) == ["unit"]  # not followed: two keys, "unit" has no description here
    page = render_config_reference(schema, defaults, base=tmp_path)
    assert "| `sim.mean` | number | `2.5` (config.yaml) | a mean. Constraints: >= 0. |" in page
    assert '| `sim.deep.k` | string | `"y"` (config.yaml) | k. Allowed: `"x"`, `"y"`. |' in page


def test_a_file_reference_cycle_is_an_error(tmp_path):
    _write_yaml(tmp_path / "a.schema.yaml", {"type": "object", "properties": {"b": {"$ref": "b.schema.yaml"}}})
    _write_yaml(tmp_path / "b.schema.yaml", {"type": "object", "properties": {"a": {"$ref": "a.schema.yaml"}}})
    schema = {"type": "object", "properties": {"a": {"$ref": "a.schema.yaml", "description": "a"}}}
    with pytest.raises(ValueError, match="cycle"):
        list(iter_properties(schema, base=tmp_path))


def test_main_writes_the_page(tmp_path):
    out = tmp_path / "docs" / "config_reference.md"
    assert main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render_config_reference(SCHEMA, CONFIG, base=SCHEMAS)
    assert "| `ratings.simulation.intercept` |" in out.read_text(encoding="utf-8")
    assert [p.name for p in out.parent.iterdir()] == ["config_reference.md"]  # no temporary file left


@pytest.mark.parametrize("argv", [[], ["a.md", "b.md"]])
def test_main_needs_one_output_path(argv, capsys):
    assert main(argv) == 2
    assert "usage" in capsys.readouterr().err
