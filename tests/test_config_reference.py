"""The config reference generated from the schema: every key described, every key on the page."""

from __future__ import annotations

import copy
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

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((ROOT / "workflow/schemas/config.schema.yaml").read_text(encoding="utf-8"))
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text(encoding="utf-8"))


def _expand(node: Any, root: Mapping[str, Any]) -> Any:
    """The schema with every local ``$ref`` replaced by a copy of its target and ``$defs`` dropped."""
    if isinstance(node, list):
        return [_expand(v, root) for v in node]
    if not isinstance(node, Mapping):
        return node
    if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
        target: Any = root
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _expand(copy.deepcopy(merged), root)
    return {k: _expand(v, root) for k, v in node.items() if k != "$defs"}


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
    assert undescribed_properties(SCHEMA) == []


def test_the_walk_lists_every_property_the_schema_holds_once():
    keys = [r.key for r in iter_properties(SCHEMA, CONFIG)]
    assert len(keys) == len(set(keys))
    assert len(keys) == _count_definitions(_expand(SCHEMA, SCHEMA))
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
    ]:
        assert key in keys


def test_descriptions_are_plain_text():
    for record in iter_properties(SCHEMA, CONFIG):
        for markup in (":func:", ":mod:", ":class:", ":data:", "``"):
            assert markup not in record.description, (record.key, markup)


def _flat_keys(config: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in config.items():
        yield (*prefix, key)
        if isinstance(value, Mapping):
            yield from _flat_keys(value, (*prefix, key))


def test_every_key_of_the_embedded_config_is_in_the_reference():
    records = {r.key: r for r in iter_properties(SCHEMA, CONFIG)}
    leaves = {k for k in records if not any(other.startswith(k + ".") for other in records)}
    for path in _flat_keys(CONFIG):
        # a key of a free-form mapping is <name>; below a key without sub-keys (plan, ratings.simulation) anything
        candidates = [".".join(path), ".".join((*path[:-1], "<name>"))]
        for i in range(2, len(path)):
            candidates.append(".".join((*path[: i - 1], "<name>", *path[i:])))
        under_leaf = any(".".join(path[:i]) in leaves for i in range(1, len(path)))
        listed = any(k == c or k.startswith(c + ".") for c in candidates for k in records)
        assert under_leaf or listed, ".".join(path)


def test_the_page_names_every_key_and_section():
    page = render_config_reference(SCHEMA, CONFIG)
    for record in iter_properties(SCHEMA, CONFIG):
        assert f"| `{record.key}` |" in page, record.key
    for top in SCHEMA["properties"]:
        assert f"\n## `{top}`\n" in page, top
    for markup in (":func:", ":mod:", ":class:"):
        assert markup not in page
    # every table row has its four cells (an unescaped | in a description would add one)
    for line in page.splitlines():
        if line.startswith("| `"):
            assert line.replace("\\|", "").count("|") == 5, line


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


def test_main_writes_the_page(tmp_path):
    out = tmp_path / "docs" / "config_reference.md"
    assert main([str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render_config_reference(SCHEMA, CONFIG)
    assert [p.name for p in out.parent.iterdir()] == ["config_reference.md"]  # no temporary file left


@pytest.mark.parametrize("argv", [[], ["a.md", "b.md"]])
def test_main_needs_one_output_path(argv, capsys):
    assert main(argv) == 2
    assert "usage" in capsys.readouterr().err
