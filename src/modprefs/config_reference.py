"""The config reference: every key of ``workflow/schemas/config.schema.yaml`` with its type, default and description.

The schema is the one place a config key is defined (Snakemake validates every run's config against it), so
the reference page is generated from it rather than written by hand: :func:`iter_properties` walks the
schema and yields one :class:`PropertyRecord` per property at every depth, :func:`render_config_reference`
renders them as a Markdown page, and :func:`undescribed_properties` lists the keys whose description is
missing (the test suite asks for none).

Dotted keys: ``a.b.c`` for nested objects, ``a[].b`` for the properties of an array's items and ``a.<name>.b``
for the properties of the objects in a free-form mapping (``additionalProperties`` or ``patternProperties``).
Local references (``$ref: "#/..."``) are followed, so a definition used in two places is listed under both;
so is a reference to another file (``ratings.simulation`` -> ``simulation.schema.yaml``, read from the referring
schema's folder) when the walk is given that folder (``base``), and its keys are listed under the referring key
(``ratings.simulation.intercept``). Without ``base`` such a key is listed as one row naming the file.

Generate the page (the docs build does)::

    python -m modprefs.config_reference docs/config_reference.md
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: bounds shown in the reference, in this order
BOUND_KEYWORDS = (
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "uniqueItems",
    "pattern",
)

#: the placeholder for a free-form mapping's own key in a dotted key (``judges.prices.<name>.input``)
NAME_PLACEHOLDER = "<name>"

#: the longest rendered default shown in a table cell; longer ones point to where the value is
MAX_DEFAULT_CHARS = 80


@dataclass(frozen=True)
class PropertyRecord:
    """One config key as the schema defines it.

    Attributes:
        key: the dotted key (``a.b``, ``a[].b``, ``a.<name>.b``).
        types: the JSON types the value may have (``("integer", "null")``); empty when the schema does not say.
        description: the schema's description ("" when it has none).
        required: whether the enclosing object requires the key.
        has_default: whether a default is known (``default`` may be None: a ``null`` default).
        default: the schema's ``default``, else the value at this key in the embedded config.yaml.
        default_source: ``"schema"``, ``"config.yaml"`` or None (no default known).
        allowed: the values an ``enum``/``const`` allows (also from ``anyOf``/``oneOf`` branches); empty if any.
        item_allowed: for an array, the values its items' ``enum`` allows.
        bounds: the numeric, length and pattern constraints (``{"minimum": 0, "maximum": 1}``).
        ref: a reference to another schema file that was not followed (no ``base`` given), else None.
    """

    key: str
    types: tuple[str, ...]
    description: str
    required: bool = False
    has_default: bool = False
    default: Any = None
    default_source: str | None = None
    allowed: tuple[Any, ...] = ()
    item_allowed: tuple[Any, ...] = ()
    bounds: Mapping[str, Any] = field(default_factory=dict)
    ref: str | None = None

    @property
    def top_level(self) -> str:
        """The top-level key this key belongs to (``judges`` for ``judges.allocation.target``)."""
        return self.key.split(".", 1)[0].split("[", 1)[0]


# ----------------------------------------------------------------------------------------------- walking


def _pointer(root: Mapping[str, Any], ref: str) -> Mapping[str, Any]:
    """The subschema a local JSON pointer (``#/properties/reward/$defs/model``) names."""
    node: Any = root
    for part in ref.removeprefix("#").strip("/").split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(f"$ref {ref!r} does not resolve in the schema")
        node = node[part]
    if not isinstance(node, Mapping):
        raise KeyError(f"$ref {ref!r} does not name a schema")
    return node


def resolve(node: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """``node`` with its local ``$ref`` (``#/...``) replaced by the target's keywords; the node's own win.

    A reference to another file is kept as it is.
    """
    out = dict(node)
    seen: set[str] = set()
    while isinstance(out.get("$ref"), str) and out["$ref"].startswith("#"):
        ref = out.pop("$ref")
        if ref in seen:
            raise ValueError(f"$ref cycle through {ref!r}")
        seen.add(ref)
        out = {**_pointer(root, ref), **out}
    return out


@dataclass(frozen=True)
class _Scope:
    """Where a subschema's references resolve: its file's root schema and folder.

    Attributes:
        root: the schema a local reference (``#/...``) points into.
        folder: the folder a reference to another file is read from; None: such references are not followed.
        files: the files followed to get here (a file referring back to one of them is a cycle).
    """

    root: Mapping[str, Any]
    folder: Path | None = None
    files: tuple[Path, ...] = ()


def _is_file_ref(ref: Any) -> bool:
    return isinstance(ref, str) and not ref.startswith("#")


def _follow(node: Mapping[str, Any], scope: _Scope) -> tuple[dict[str, Any], _Scope]:
    """``node`` with its local and (where ``scope.folder`` is set) file references replaced by their targets.

    A file reference (``simulation.schema.yaml``, optionally with a ``#/...`` pointer into it) is read relative to
    the folder of the schema that holds it; the node's own keywords win over the target's (its description, say).
    Returns the resolved node and the scope its own references resolve in (the referenced file's, after a jump).
    """
    out = resolve(node, scope.root)
    while _is_file_ref(out.get("$ref")) and scope.folder is not None:
        ref = out.pop("$ref")
        name, _, pointer = ref.partition("#")
        path = (scope.folder / name).resolve()
        if path in scope.files:
            raise ValueError(f"$ref cycle through the file {ref!r}")
        root = load_yaml(path)
        target = _pointer(root, pointer) if pointer else root
        scope = _Scope(root, path.parent, (*scope.files, path))
        out = resolve({**target, **out}, root)
    return out, scope


def _json_type(value: Any) -> str:
    """The JSON type name of a YAML value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Sequence):
        return "array"
    return "object"


def _unique(values: Sequence[Any]) -> tuple[Any, ...]:
    """``values`` without repeats, first occurrence kept (values may be unhashable)."""
    out: list[Any] = []
    for v in values:
        if not any(v == w and type(v) is type(w) for w in out):
            out.append(v)
    return tuple(out)


def _branches(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The subschemas of ``anyOf``/``oneOf``/``allOf``."""
    return [b for kw in ("anyOf", "oneOf", "allOf") for b in node.get(kw) or [] if isinstance(b, Mapping)]


def _allowed(node: Mapping[str, Any], root: Mapping[str, Any]) -> list[Any]:
    values: list[Any] = list(node.get("enum") or [])
    if "const" in node:
        values.append(node["const"])
    for branch in _branches(node):
        values += _allowed(resolve(branch, root), root)
    return values


def _types(node: Mapping[str, Any], root: Mapping[str, Any]) -> tuple[str, ...]:
    """The JSON types a value of ``node`` may have: its ``type``, else its enum's, else its branches'."""
    declared = node.get("type")
    if isinstance(declared, str):
        return (declared,)
    if isinstance(declared, list):
        return tuple(str(t) for t in declared)
    values = list(node.get("enum") or []) + ([node["const"]] if "const" in node else [])
    types = [_json_type(v) for v in values]
    for branch in _branches(node):
        types += _types(resolve(branch, root), root)
    return _unique(types)


def _bounds(node: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    out = {kw: node[kw] for kw in BOUND_KEYWORDS if kw in node}
    for branch in _branches(node):
        for kw, value in _bounds(resolve(branch, root), root).items():
            out.setdefault(kw, value)
    return out


def _lookup(defaults: Mapping[str, Any] | None, path: Sequence[str]) -> tuple[bool, Any]:
    """(found, value) at ``path`` in the config mapping ``defaults``."""
    node: Any = defaults
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _children(node: Mapping[str, Any], scope: _Scope) -> Iterator[tuple[str, Mapping[str, Any], bool, _Scope]]:
    """(key suffix, subschema, required, its scope) of every property ``node`` defines, in schema order.

    Suffixes: ``.b`` (properties), ``[].b`` (array items' properties), ``.<name>.b`` (free-form mapping values'
    properties). ``anyOf``/``oneOf``/``allOf`` branches add theirs; conditionals (``if``/``then``) define none.
    """
    required = set(node.get("required") or [])
    for name, sub in (node.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield f".{name}", sub, name in required, scope
    containers: list[tuple[str, Any]] = [
        ("[]", node.get("items")),
        (f".{NAME_PLACEHOLDER}", node.get("additionalProperties")),
    ]
    containers += [(f".{NAME_PLACEHOLDER}", sub) for sub in (node.get("patternProperties") or {}).values()]
    for prefix, sub in containers:
        if isinstance(sub, Mapping):
            for suffix, child, req, child_scope in _children(*_follow(sub, scope)):
                yield prefix + suffix, child, req, child_scope
    for branch in _branches(node):
        yield from _children(*_follow(branch, scope))


def iter_properties(
    schema: Mapping[str, Any], defaults: Mapping[str, Any] | None = None, *, base: str | Path | None = None
) -> Iterator[PropertyRecord]:
    """One :class:`PropertyRecord` per property of ``schema``, depth first in schema order.

    Args:
        schema: the config schema (a JSON Schema as loaded from YAML).
        defaults: the embedded config (config.yaml): a key's value there is its default where the schema
            gives none. Keys under ``[]`` or ``<name>`` have no single value there and get none.
        base: the folder ``schema`` was read from. A reference to another file is read relative to it (and a
            reference inside that file relative to that file's folder), and the file's properties are listed
            under the referring key. None: such a key is listed as one record with ``ref`` set.
    """
    seen: set[str] = set()

    def walk(node: Mapping[str, Any], prefix: str, scope: _Scope) -> Iterator[PropertyRecord]:
        for suffix, raw, required, raw_scope in _children(node, scope):
            key = (prefix + suffix).lstrip(".")
            if key in seen:  # the same key from two branches: the first definition is listed
                continue
            seen.add(key)
            sub, sub_scope = _follow(raw, raw_scope)
            root = sub_scope.root
            source: str | None
            if "default" in sub:
                has_default, default, source = True, sub["default"], "schema"
            elif "[" not in key and NAME_PLACEHOLDER not in key:
                has_default, default = _lookup(defaults, key.split("."))
                source = "config.yaml" if has_default else None
            else:
                has_default, default, source = False, None, None
            items = sub.get("items")
            item_allowed = _allowed(resolve(items, root), root) if isinstance(items, Mapping) else []
            ref = sub.get("$ref")
            yield PropertyRecord(
                key=key,
                types=_types(sub, root),
                description=str(sub.get("description") or "").strip(),
                required=required,
                has_default=has_default,
                default=default,
                default_source=source,
                allowed=_unique(_allowed(sub, root)),
                item_allowed=_unique(item_allowed),
                bounds=_bounds(sub, root),
                ref=ref if _is_file_ref(ref) else None,
            )
            yield from walk(sub, key, sub_scope)

    yield from walk(schema, "", _Scope(schema, None if base is None else Path(base).resolve()))


def undescribed_properties(schema: Mapping[str, Any], *, base: str | Path | None = None) -> list[str]:
    """The dotted keys of every property in ``schema`` without a (non-blank) description, in schema order.

    ``base``: as for :func:`iter_properties`; give it so the properties of referenced files are checked too.
    """
    return [r.key for r in iter_properties(schema, base=base) if not r.description]


# ---------------------------------------------------------------------------------------------- rendering


def escape_cell(text: str) -> str:
    """``text`` safe in a Markdown table cell: ``|`` escaped, line breaks as spaces."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(value: Any) -> str:
    """``value`` as inline code: JSON for non-strings and quoted strings (so ``"off"`` and ``null`` read right)."""
    text = json.dumps(value, ensure_ascii=False)
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _number(value: Any) -> str:
    return json.dumps(value)


def render_bounds(bounds: Mapping[str, Any]) -> str:
    """The constraints as plain words (``>= 0, < 1``)."""
    words = {
        "minimum": ">= {}",
        "exclusiveMinimum": "> {}",
        "maximum": "<= {}",
        "exclusiveMaximum": "< {}",
        "minLength": "at least {} characters",
        "maxLength": "at most {} characters",
        "minItems": "at least {} items",
        "maxItems": "at most {} items",
        "minProperties": "at least {} entries",
    }
    singular = {"minLength": "non-empty", "minItems": "at least 1 item", "minProperties": "at least 1 entry"}
    parts = []
    for kw in BOUND_KEYWORDS:
        if kw in words and kw in bounds:
            one = bounds[kw] == 1 and kw in singular
            parts.append(singular[kw] if one else words[kw].format(_number(bounds[kw])))
    if bounds.get("uniqueItems"):
        parts.append("items unique")
    if "pattern" in bounds:
        pattern = str(bounds["pattern"])
        fence = "``" if "`" in pattern else "`"
        parts.append(f"matches {fence}{pattern}{fence}")
    return ", ".join(parts)


def render_default(record: PropertyRecord) -> str:
    """The default cell: the value as code, ``(config.yaml)`` when it comes from there, "" when none is known."""
    if not record.has_default:
        return ""
    text = _code(record.default)
    if len(text) > MAX_DEFAULT_CHARS:
        text = "see config.yaml" if record.default_source == "config.yaml" else "see the schema"
    elif record.default_source == "config.yaml":
        text += " (config.yaml)"
    return text


def render_type(record: PropertyRecord) -> str:
    """The type cell (``integer or null``, ``; required`` added for a required key); a reference to another
    schema file that was not followed names that file."""
    text = f"see {record.ref}" if record.ref is not None else " or ".join(record.types) if record.types else "any"
    return f"{text}; required" if record.required else text


def render_description(record: PropertyRecord) -> str:
    """The description followed by what the schema allows: allowed values, item values, bounds."""
    parts = [record.description.rstrip()]
    if parts[0] and not parts[0].endswith((".", "!", "?")):
        parts[0] += "."
    allowed = ", ".join(_code(v) for v in record.allowed)
    bounds = render_bounds(record.bounds)
    if record.item_allowed:
        parts.append("Items: " + ", ".join(_code(v) for v in record.item_allowed) + ".")
    if allowed and bounds:  # a constrained value or a named one (anyOf: a number > 0 or "auto")
        parts.append(f"Constraints: {bounds}; or one of {allowed}.")
    elif allowed:
        parts.append(f"Allowed: {allowed}.")
    elif bounds:
        parts.append(f"Constraints: {bounds}.")
    return " ".join(p for p in parts if p)


INTRO = """\
# Config reference

Every key of the workflow's config, generated from `workflow/schemas/config.schema.yaml` (the schema Snakemake
validates each run's config against) and the schema files it refers to (`ratings.simulation`:
`workflow/schemas/simulation.schema.yaml`) by `python -m modprefs.config_reference`; do not edit by hand. The
embedded `config.yaml` shows a working value for most keys, with comments.

Keys are dotted: `a.b` is key `b` inside section `a`, `a[].b` is key `b` of each item of the list `a`, and
`a.<name>.b` is key `b` of each entry of the mapping `a`, whatever its name. **Default** is the schema's
default, which applies when the key is left out; where the schema has none, the value in the embedded
`config.yaml` is shown, marked (config.yaml). A key set to a value the schema does not allow, or a key the
schema does not know, stops the run before any job with the key's dotted name.
"""


def render_config_reference(
    schema: Mapping[str, Any], defaults: Mapping[str, Any], *, base: str | Path | None = None
) -> str:
    """The Markdown reference page: a short intro, then one section per top-level key with a table of its keys.

    Args:
        schema: the config schema (``workflow/schemas/config.schema.yaml`` as loaded).
        defaults: the embedded config (``config.yaml`` as loaded), for defaults the schema does not give.
        base: the schema's folder, where the files it refers to are read (see :func:`iter_properties`).
    """
    sections: dict[str, list[PropertyRecord]] = {}
    for record in iter_properties(schema, defaults, base=base):
        sections.setdefault(record.top_level, []).append(record)
    lines = [INTRO.rstrip("\n"), ""]
    lines += ["Sections: " + ", ".join(f"[`{name}`](#{_anchor(name)})" for name in sections) + ".", ""]
    for name, records in sections.items():
        head = records[0]
        lines += [f"## `{name}`", ""]
        if head.key == name and head.description:
            lines += [head.description, ""]
        lines += ["| key | type | default | description |", "|---|---|---|---|"]
        for r in records:
            cells = [f"`{r.key}`", render_type(r), render_default(r), render_description(r)]
            lines.append("| " + " | ".join(escape_cell(c) for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _anchor(name: str) -> str:
    """The heading anchor GitHub and MkDocs give ``## `name` ``: lower case, ``_`` kept."""
    return name.lower()


# ------------------------------------------------------------------------------------------- entry point


def _repo() -> Path:
    from modprefs.cli import REPO

    return REPO


def schema_path() -> Path:
    """``workflow/schemas/config.schema.yaml`` of this checkout."""
    return _repo() / "workflow" / "schemas" / "config.schema.yaml"


def config_path() -> Path:
    """The embedded ``config.yaml`` of this checkout."""
    return _repo() / "config.yaml"


def load_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping from ``path`` (anchors and merge keys expanded, as Snakemake reads it)."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a YAML mapping")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m modprefs.config_reference OUT.md``: write the reference page to OUT.md (atomically)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -m modprefs.config_reference OUT.md", file=sys.stderr)
        return 0 if args and args[0] in ("-h", "--help") else 2
    from modprefs.io import write_text

    schema = schema_path()
    page = render_config_reference(load_yaml(schema), load_yaml(config_path()), base=schema.parent)
    write_text(page, args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
