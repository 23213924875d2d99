"""Reading the workflow's config files, and saying which file (and line) a config key came from.

The workflow's config is merged from ``config.yaml`` (the Snakefile's ``configfile:``), any
``--configfile`` files (later ones win) and ``--config key=value`` overrides. A problem found in the
merged config is only useful to a user if it names the file and line to edit: :func:`config_sources`
keeps each layer with the line of every key, and :func:`locate` finds the layer that set a key.

:func:`load_config_file` reads one file with YAML errors reported by file, line and column, and an
empty file or a file that is not a mapping reported as such (Snakemake's own messages name neither).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from modprefs.errors import UserInputError

KeyPath = tuple[str, ...]


class ConfigError(UserInputError):
    """A configuration problem; the message names the config file and the offending key."""


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a mapping key given twice (plain YAML keeps the last silently).

    A duplicated key in a config file is almost always an edit that did not take effect (two ``stats:``
    blocks, a key pasted twice); YAML 1.2 calls such a mapping invalid.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                seen = key in first_line
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if not seen:
                first_line[key] = key_node.start_mark.line
            else:
                line = first_line[key]
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first given at line {line + 1}; a key may appear once per mapping)",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a YAML (or JSON) config file.

    Raises:
        ConfigError: the file is missing, not UTF-8, not valid YAML (file, line and column named),
            empty, or not a mapping at its top level.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not UTF-8 text (byte {err.start + 1}); save the config file as UTF-8") from None
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.MarkedYAMLError as err:
        mark, context = err.problem_mark or err.context_mark, err.context_mark
        where = f", line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = str(err.problem or err.context)
        if err.context and context and context is not mark:
            what += f" ({err.context} at line {context.line + 1}, column {context.column + 1})"
        raise ConfigError(f"{path}{where}: not valid YAML: {what}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if data is None:
        raise ConfigError(
            f"{path}: the config file is empty; it needs the keys of the repository's config.yaml "
            "(seed, data, sampling, attention_check, tts, study, ratings, stats)"
        )
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: a config file must map keys to values at its top level (seed: ..., data: ...), "
            f"this one holds a {type(data).__name__}"
        )
    return data


def key_lines(path: str | Path) -> dict[KeyPath, int]:
    """``{key path: 1-based line}`` of every mapping key and list item in a YAML file ({} if unreadable)."""
    try:
        root = yaml.compose(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    lines: dict[KeyPath, int] = {}

    def walk(node: yaml.Node, prefix: KeyPath) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                path = (*prefix, str(key.value))
                lines[path] = key.start_mark.line + 1
                walk(value, path)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                path = (*prefix, str(i))
                lines[path] = item.start_mark.line + 1
                walk(item, path)

    if root is not None:
        walk(root, ())
    return lines


@dataclass
class ConfigSource:
    """One layer of the merged config: a file (with its key lines) or the ``--config`` overrides."""

    label: str
    data: Mapping[str, Any]
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def has(self, path: KeyPath) -> bool:
        node: Any = self.data
        for part in path:
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return False
        return True


def config_sources(files: Sequence[str | Path], overrides: Mapping[str, Any] | None = None) -> list[ConfigSource]:
    """The layers of a merged config, lowest precedence first: ``files`` in order, then ``overrides``."""
    sources = [ConfigSource(str(f), load_config_file(f), key_lines(f)) for f in files]
    if overrides:
        sources.append(ConfigSource("--config", dict(overrides)))
    return sources


def dotted(path: Sequence[str | int]) -> str:
    """``("tts", "engines", 0, "voise")`` -> ``"tts.engines[0].voise"``."""
    out = ""
    for part in path:
        part = str(part)
        out += f"[{part}]" if part.isdigit() else (f".{part}" if out else part)
    return out or "<top level>"


def locate(sources: Sequence[ConfigSource], path: Sequence[str | int]) -> str:
    """Where the value at ``path`` was set: ``"<file> line <n>"`` of the last layer holding it.

    Falls back to the longest prefix of ``path`` that some layer holds (a missing key is reported
    at its parent), and to every file's name when no layer holds any part of it.
    """
    key = tuple(str(p) for p in path)
    for n in range(len(key), 0, -1):
        for source in reversed(sources):
            if source.has(key[:n]):
                line = source.lines.get(key[:n])
                return f"{source.label} line {line}" if line else source.label
    return ", ".join(s.label for s in sources) or "the config"


def format_problems(problems: Sequence[tuple[Sequence[str | int], str]], sources: Sequence[ConfigSource] | None) -> str:
    """One line per problem, each prefixed with the file (and line) that set the key."""
    lines = []
    for path, text in problems:
        lines.append(f"{locate(sources, path)}: {text}" if sources else text)
    return "invalid configuration:\n  " + "\n  ".join(lines)


@contextlib.contextmanager
def exit_on_user_error() -> Iterator[None]:
    """In a Snakefile: print a :class:`UserInputError` as one message and exit 1, without a traceback.

    Snakemake shows an exception raised while parsing the Snakefile with a stack summary; a user who
    mistyped a key needs only the message.
    """
    try:
        yield
    except UserInputError as err:
        print(f"modprefs: error: {err}", file=sys.stderr)
        sys.exit(1)


def dataclass_kwargs(cls: type, mapping: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
    """``mapping`` as keyword arguments for the dataclass ``cls``; an unknown key is an error naming ``where``.

    A typo in a config block must stop the run, not be ignored: ``where`` is the block's dotted key
    (e.g. ``judges.allocation``).
    """
    values = dict(mapping or {})
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(names)}")
    return values
