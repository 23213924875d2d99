"""Checks of the workflow configuration, all run when the workflow starts, before any job.

The schema (``workflow/schemas/config.schema.yaml``) catches wrong types, unknown keys (at every
level: ``judges.local.*``, ``judges.allocation.*``, items of ``tts.engines``, ...) and out-of-range
values; :func:`check_config` then checks what a schema cannot: relations between keys, that the
files the config names exist and can be read (the data JSONL, the attention check, the term list),
that each TTS block's voice and language exist for its backend (:mod:`modprefs.speech.preflight`),
and that the data holds enough eligible conversations for ``sampling.n_prompts`` (before text
screening, which runs in the sampling job and can only remove more). Every problem is reported at
once, each prefixed with the config file and line that set the key (:mod:`modprefs.config_files`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from modprefs.config_files import ConfigError, ConfigSource, dataclass_kwargs, dotted, format_problems
from modprefs.study.terms import CONDITIONS

__all__ = [
    "ConfigError",
    "capped_option_notes",
    "check_config",
    "dataclass_kwargs",
    "drop_unused_tts_keys",
    "schema_errors",
    "unset_null_keys",
    "validate_config",
    "validate_overlay",
]

Problem = tuple[tuple[str, ...], str]


def _schema_problems(config: Mapping[str, Any], schema_path: str | Path, overlay: bool = False) -> list[Problem]:
    """Every schema violation of ``config``; ``overlay``: a file read alone, whose required keys come from
    config.yaml (a missing required key is no problem)."""
    schema_path = Path(schema_path).resolve()
    schema = yaml.safe_load(schema_path.read_text())
    registry = _sibling_registry(schema_path.parent)
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, registry=registry)
    problems: list[Problem] = []
    for err in sorted(validator.iter_errors(dict(config)), key=lambda e: list(map(str, e.path))):
        path = tuple(str(p) for p in err.absolute_path)
        if overlay and err.validator == "required":
            continue
        if err.validator == "additionalProperties":
            allowed = ", ".join(sorted(err.schema.get("properties", {})))
            for name in sorted(set(err.instance) - set(err.schema.get("properties", {}))):
                problems.append(((*path, str(name)), f"{dotted((*path, name))}: unknown key (allowed: {allowed})"))
            continue
        problems.append((path, f"{dotted(path)}: {err.message}"))
    return problems


def schema_errors(config: Mapping[str, Any], schema_path: str | Path) -> list[str]:
    """Every schema violation in ``config`` as ``'<dotted.key>: <message>'`` lines.

    Used to turn jsonschema's first-error report into a list a user can act on at once.
    The schema may ``$ref`` sibling files by relative name.
    """
    return [text for _, text in _schema_problems(config, schema_path)]


def _sibling_registry(folder: Path):
    from referencing import Registry, Resource

    resources = []
    for path in folder.glob("*.yaml"):
        text = path.read_text()
        if not text.strip():
            continue
        contents = yaml.safe_load(text)
        resources.append((path.name, Resource.from_contents(contents, default_specification=_draft())))
    return Registry().with_resources(resources)


def _draft():
    from referencing.jsonschema import DRAFT202012

    return DRAFT202012


def _data_problems(config: Mapping[str, Any], source: Path) -> list[Problem]:
    """The JSONL's rows are valid and hold enough eligible conversations for the configured draw."""
    from modprefs.data.prism import PrismFormatError, build_interactions, load_prism_rows
    from modprefs.sampling.draw import sample_size_problems
    from modprefs.sampling.screening import is_empty_response

    data, sampling = config["data"], config["sampling"]
    ctype = data.get("conversation_type", "unguided")
    try:
        table, _ = build_interactions(load_prism_rows(str(source)), seed=int(config["seed"]), conversation_type=ctype)
    except PrismFormatError as err:
        return [(("data", "source"), f"data.source: {err}")]
    if table.empty:
        return [
            (
                ("data", "source"),
                f"data.source: {source} holds no eligible {ctype!r} conversation "
                "(data.conversation_type; a conversation needs a turn with two responses)",
            )
        ]
    # the text screen's `empty` rule is cheap: a response with nothing to speak can never be drawn
    unspeakable = table["text_0"].map(is_empty_response) | table["text_1"].map(is_empty_response)
    if unspeakable.all():
        return [
            (
                ("data", "source"),
                f"data.source: every one of the {len(table)} eligible conversations has a response with nothing to "
                "speak (empty, or only emoji or punctuation), which the text screening removes; the study needs "
                "responses with words",
            )
        ]
    found = sample_size_problems(
        table[~unspeakable.to_numpy()],
        int(sampling["n_prompts"]),
        float(sampling["long_fraction"]),
        float(sampling["long_percentile"]),
    )
    note = (
        f" ({int(unspeakable.sum())} of the {len(table)} eligible conversations have a response with nothing to "
        "speak and are not counted)"
        if unspeakable.any()
        else ""
    )
    return [(("sampling", "n_prompts"), text + note) for text in found]


def _pairs_problems(config: Mapping[str, Any], base: Path) -> list[Problem]:
    """A pairs table (data.format pairs): readable, every row valid for the tts backend, enough items per stratum.

    A pool no larger than ``sampling.n_prompts`` is used whole (the workflow lowers n_prompts to it), so the size
    check applies only to a larger pool, which is drawn.
    """
    from modprefs.data.pairs import HUB_PREFIX, PairsFormatError, read_pairs_table
    from modprefs.data.pairs_checks import PairsChecks, pairs_problems
    from modprefs.file_access import file_problem
    from modprefs.sampling.draw import sample_size_problems

    data, sampling = config["data"], config["sampling"]
    source = str(data["source"])
    problem = None if source.startswith(HUB_PREFIX) or (base / source).is_dir() else file_problem(base / source)
    if problem == "file not found":
        return [(("data", "source"), f"data.source: file or folder not found: {source!r}")]
    if problem:
        return [(("data", "source"), f"data.source: {source!r} {problem}")]
    try:
        table = read_pairs_table(source, data.get("columns"), str(data.get("hf_split", "train")), base)
    except PairsFormatError as err:
        return [(("data", "source"), f"data.source: {err}")]
    problems = pairs_problems(table, PairsChecks.from_config(config))
    strata = table.frame["stratum"].str.strip().ne("")
    if strata.any() and not strata.all():
        problems.append(
            f"{table.where(int((~strata).to_numpy().argmax()), 'stratum')}: empty; give every item a stratum or none"
        )
    if problems:
        return [(("data", "source"), f"data.source: {text}") for text in problems]
    n_prompts = int(sampling["n_prompts"])
    if len(table.frame) <= n_prompts:
        return []
    import pandas as pd

    sizes = pd.DataFrame(
        {
            "abs_char_diff": (table.frame["response_0"].str.len() - table.frame["response_1"].str.len()).abs(),
            "stratum_given": table.frame["stratum"].where(strata, None),
        }
    )
    return [
        (("sampling", "n_prompts"), text)
        for text in sample_size_problems(
            sizes, n_prompts, float(sampling["long_fraction"]), float(sampling["long_percentile"])
        )
    ]


def _tts_problems(tts: Mapping[str, Any], base: Path) -> list[Problem]:
    from modprefs.speech.preflight import tts_problems

    blocks: list[tuple[tuple[str, ...], str, Any]] = [
        (("tts",), "tts", {k: v for k, v in tts.items() if k != "engines"})
    ]
    engines = tts.get("engines") or []
    blocks += [(("tts", "engines", str(i)), f"tts.engines[{i}]", e) for i, e in enumerate(engines)]
    problems: list[Problem] = []
    for path, where, block in blocks:
        for text in tts_problems(block, where, base):
            key = text.split(":", 1)[0].replace(where, "", 1).lstrip(".")
            problems.append(((*path, *(k for k in [key] if k)), text))
    names = [e.get("backend") for e in engines]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(
            (
                ("tts", "engines"),
                f"tts.engines: backend {name!r} appears more than once "
                "(each engine renders to results/audio/engines/<backend>/)",
            )
        )
    return problems


def _strip(err: Exception, prefix: str) -> str:
    return str(err).removeprefix(prefix)


def _judges_problems(judges: Mapping[str, Any]) -> list[Problem]:
    """Relations the judge settings' own validators check (min_raters <= max_raters, ranges, ...)."""
    from modprefs.judges.local import LocalJudgeConfig
    from modprefs.judges.types import JudgeSetupError
    from modprefs.stats.tables.rater_allocation import AllocationConfig

    problems: list[Problem] = []
    try:
        AllocationConfig.from_mapping(judges.get("allocation"))
    except ValueError as err:
        problems.append(
            (("judges", "allocation"), f"judges.allocation: {_strip(err, 'invalid judges.allocation config: ')}")
        )
    if judges.get("backend", "local") == "local":
        try:
            LocalJudgeConfig.from_judges(judges)
        except JudgeSetupError as err:
            problems.append((("judges", "local"), f"judges.local: {_strip(err, 'invalid judges.local config: ')}"))
    return problems


def _check_screening(
    screening: Mapping[str, Any], base: Path, problems: list[Problem], readable: Callable[[str, str], bool]
) -> None:
    """Append the screening's problems: a language it cannot detect, an unreadable harmful-terms list."""
    language = screening.get("language")
    if language:
        from modprefs.sampling.screening import detectable_languages

        if language not in detectable_languages():
            problems.append(
                (
                    ("sampling", "screening", "language"),
                    f"sampling.screening.language: {language!r} is not a language the screening can detect "
                    f"(ISO 639-1: {', '.join(detectable_languages())})",
                )
            )
    if "harmful_terms" in screening and readable("sampling.screening.harmful_terms", screening["harmful_terms"]):
        from modprefs.sampling.screening import ScreeningError, WordListModerator

        try:
            WordListModerator.from_file(base / screening["harmful_terms"])
        except ScreeningError as err:
            problems.append((("sampling", "screening", "harmful_terms"), f"sampling.screening.harmful_terms: {err}"))


def _audio_qc_problems(config: Mapping[str, Any]) -> list[Problem]:
    """The audio QC thresholds' problem, if any (unknown metric, bad bound)."""
    thresholds = (config.get("audio_qc") or {}).get("thresholds") or {}
    if not thresholds:
        return []
    import math

    from modprefs.speech.qc import QC_COLUMNS, check_thresholds

    try:
        check_thresholds(dict.fromkeys(QC_COLUMNS, math.nan), thresholds)
    except ValueError as err:
        return [(("audio_qc", "thresholds"), f"audio_qc.thresholds: {err}")]
    return []


def _ratings_problems(config: Mapping[str, Any], base: Path) -> list[Problem]:
    """The ``ratings`` section's problems, each under its dotted key (or ``ratings``)."""
    from modprefs.ratings.sources import ratings_config_problems  # noqa: PLC0415

    problems: list[Problem] = []
    for message in ratings_config_problems(config["ratings"], base):
        key = message.split(":", 1)[0]
        problems.append(
            (tuple(key.split(".")) if key.startswith("ratings.") and " " not in key else ("ratings",), message)
        )
    return problems


def _scale_problems(config: Mapping[str, Any]) -> list[Problem]:
    """``study.scale``'s problem, if any: max not above min, a step that does not divide the range or is too fine
    (:class:`modprefs.scale.RatingScale`), named by its key, so that no rule meets an invalid scale."""
    from modprefs.scale import scale_from_config

    try:
        scale_from_config(config)
    except ValueError as err:
        text = str(err)
        key = "max" if "greater than min" in text else "labels" if "labels" in text else "step"
        return [(("study", "scale", key), text)]
    return []


#: design rows (participants x trials) per condition above which a study cannot be built or simulated in memory
MAX_DESIGN_ROWS = 1_000_000


def _feasibility_problems(config: Mapping[str, Any]) -> list[Problem]:
    """A study size no machine can build, and simulated rates that leave nothing to analyse."""
    problems: list[Problem] = []
    study = config["study"]
    raters, trials = int(study["raters_per_condition"]), int(study["trials_per_participant"])
    if raters * trials > MAX_DESIGN_ROWS:
        problems.append(
            (
                ("study", "raters_per_condition"),
                f"study.raters_per_condition: {raters} participants x {trials} trials is {raters * trials:,} design "
                f"rows per condition, above the {MAX_DESIGN_ROWS:,} a study can hold (the paper: 53 x 20)",
            )
        )
    sim = (config.get("ratings") or {}).get("simulation") or {}
    if config["ratings"].get("source") == "simulate":
        failing = [c for c in CONDITIONS if float(sim.get(f"p_fail_attention_{c}", 0)) >= 1]
        if len(failing) == 2:
            problems.append(
                (
                    ("ratings", "simulation", "p_fail_attention_audio"),
                    "ratings.simulation.p_fail_attention_audio and p_fail_attention_text are both 1: every simulated "
                    "participant fails the attention check, so no rating is left to analyse",
                )
            )
    return problems


def check_config(
    config: Mapping[str, Any], base_dir: str | Path = ".", sources: Sequence[ConfigSource] | None = None
) -> None:
    """Raise :class:`ConfigError` listing every cross-key, file, TTS or data problem in ``config``.

    ``base_dir`` is the folder relative paths are resolved against (the working directory
    Snakemake runs in); ``sources`` (from :func:`modprefs.config_files.config_sources`) lets each
    problem name the file and line that set its key.
    """
    base = Path(base_dir)
    problems: list[Problem] = []

    def readable(key: str, value: str, kind: str = "file") -> bool:
        path = base / value
        ok = path.is_file() if kind == "file" else path.is_dir()
        if not ok:
            problems.append((tuple(key.split(".")), f"{key}: {kind} not found: {value!r}"))
        return ok

    source = config["data"]["source"]
    pairs = config["data"].get("format", "prism") == "pairs"
    if pairs:
        problems += _pairs_problems(config, base)
    elif source != "prism" and readable("data.source", source):
        problems += _data_problems(config, base / source)
    if config["tts"]["backend"] == "given" and not pairs:
        problems.append(
            (("tts", "backend"), "tts.backend: given takes the audio of a pairs table (data.format: pairs)")
        )
    if readable("attention_check", config["attention_check"]):
        from modprefs.speech.clips import AttentionCheckError, read_attention_check

        try:
            read_attention_check(base / config["attention_check"])
        except AttentionCheckError as err:
            problems.append((("attention_check",), f"attention_check: {err}"))
    _check_screening(config["sampling"].get("screening", {}), base, problems, readable)

    if "modality_terms" in config["stats"]:
        readable("stats.modality_terms", config["stats"]["modality_terms"])

    n_prompts = config["sampling"]["n_prompts"]
    if pairs:  # a smaller pool is used whole
        from modprefs.data.pairs import pool_size

        n_prompts = min(n_prompts, pool_size(config["data"], base) or n_prompts)
    trials = config["study"]["trials_per_participant"]
    if trials > n_prompts:
        problems.append(
            (
                ("study", "trials_per_participant"),
                f"study.trials_per_participant: {trials} exceeds sampling.n_prompts ({n_prompts}"
                f"{', the items of the pairs table' if pairs else ''}); "
                "a participant cannot rate the same prompt twice",
            )
        )

    problems += _tts_problems(config["tts"], base)
    problems += _audio_qc_problems(config)
    problems += _judges_problems(config.get("judges") or {})

    problems += _ratings_problems(config, base)
    problems += _feasibility_problems(config)
    scale = _scale_problems(config)
    problems += scale
    if config.get("plan") and not scale:  # the plan's options are read on the study's scale
        from modprefs.plan.options import config_block_problems

        problems += [(("plan",), text) for text in config_block_problems(config["plan"], config["study"].get("scale"))]

    if problems:
        raise ConfigError(format_problems(problems, sources))


def non_finite_problems(node: Any, path: tuple[str, ...] = ()) -> list[Problem]:
    """Every ``.nan``, ``.inf`` or ``-.inf`` in a config, with its key path.

    JSON Schema cannot refuse them: every comparison with NaN is false, so ``.nan`` passes ``minimum``
    and ``maximum`` alike, and no config key has a meaning for an infinite value.
    """
    if isinstance(node, float) and not math.isfinite(node):
        return [(path, f"{dotted(path)}: must be a finite number (got {node!r})")]
    if isinstance(node, Mapping):
        return [p for key, value in node.items() for p in non_finite_problems(value, (*path, str(key)))]
    if isinstance(node, list):
        return [p for i, value in enumerate(node) for p in non_finite_problems(value, (*path, str(i)))]
    return []


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    kinds = schema.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return "null" in kinds or any(_accepts_null(alt) for alt in schema.get("anyOf", []) + schema.get("oneOf", []))


def unset_null_keys(config: dict[str, Any], schema: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Remove every key set to ``null`` where the schema does not accept null; returns their paths.

    A key set to ``null`` in a ``--configfile`` overlay means *unset*: the key falls back to the schema's default,
    or is absent, as if no file had set it. Merged configs can only add or replace keys, so without this a lab's
    overlay could not remove a key the shipped ``config.yaml`` sets. Where null is a value of its own (``tts.seed:
    null``, unseeded) it is kept. Mutates ``config``.
    """
    removed: list[tuple[str, ...]] = []

    def walk(node: dict[str, Any], node_schema: Mapping[str, Any], path: tuple[str, ...]) -> None:
        properties = node_schema.get("properties") or {}
        for key in list(node):
            sub = properties.get(key)
            if sub is None:
                continue  # an unknown key: the schema reports it
            if node[key] is None and not _accepts_null(sub):
                del node[key]
                removed.append((*path, key))
            elif isinstance(node[key], dict):
                walk(node[key], sub, (*path, key))

    walk(config, schema, ())
    return removed


def drop_unused_tts_keys(config: dict[str, Any]) -> list[Problem]:
    """Drop the keys each tts block sets that its backend does not read; one note per key dropped.

    A lab's overlay that switches ``tts.backend`` (e.g. to ``given``) inherits the shipped config's ``voice``;
    a key that means nothing to the chosen backend is ignored, never an error the lab must fix in a file it did
    not write. Blocks: ``tts``, ``tts.attention_tts`` and each ``tts.engines[i]``. Mutates ``config``.
    """
    from modprefs.speech.preflight import unused_tts_keys

    tts = config.get("tts") or {}
    blocks: list[tuple[tuple[str, ...], dict[str, Any]]] = [(("tts",), tts)]
    if isinstance(tts.get("attention_tts"), dict):
        blocks.append((("tts", "attention_tts"), tts["attention_tts"]))
    blocks += [(("tts", "engines", str(i)), e) for i, e in enumerate(tts.get("engines") or []) if isinstance(e, dict)]
    notes: list[Problem] = []
    for path, block in blocks:
        backend = block.get("backend")
        for key in unused_tts_keys(block):
            value = block.pop(key)
            notes.append(
                ((*path, key), f"{dotted((*path, key))} ({value!r}) is ignored: backend {backend!r} does not use it")
            )
    return notes


def unused_option_notes(
    config: Mapping[str, Any], sources: Sequence[ConfigSource] | None = None, dropped: Sequence[Problem] = ()
) -> list[str]:
    """Options a config sets that the rest of it makes unused, each as a note naming where it was set.

    Not errors (a lab may keep one config and switch sources), but a silently ignored key reads as if it
    took effect. ``dropped``: the notes of keys already removed (:func:`drop_unused_tts_keys`).
    """
    from modprefs.config_files import locate

    found: list[tuple[tuple[str, ...], str]] = list(dropped)
    ratings, data = config.get("ratings") or {}, config.get("data") or {}
    if ratings.get("source") == "simulate" and ratings.get("columns"):
        found.append((("ratings", "columns"), "ratings.columns is unused: ratings.source is 'simulate'"))
    if data.get("format", "prism") == "prism":
        if data.get("columns"):
            found.append((("data", "columns"), "data.columns is unused: it applies to data.format 'pairs' only"))
    where = (lambda path: f"{locate(sources, path)}: ") if sources else (lambda path: "")
    return [f"note: {where(path)}{text}" for path, text in found]


def capped_option_notes(config: Mapping[str, Any], sources: Sequence[ConfigSource] | None = None) -> list[str]:
    """Notes for worker counts above the cores this machine gives the workflow (``plan.jobs``), each naming where it
    was set: the job runs at most that many, as ``modprefs plan --jobs`` does (:mod:`modprefs.cores`)."""
    from modprefs.config_files import locate
    from modprefs.cores import capped_at_cores

    jobs = (config.get("plan") or {}).get("jobs")
    if not isinstance(jobs, int) or isinstance(jobs, bool):
        return []
    _, note = capped_at_cores(jobs, "plan.jobs")
    if note is None:
        return []
    where = f"{locate(sources, ('plan', 'jobs'))}: " if sources else ""
    return [note.replace("note: ", f"note: {where}", 1) + " (and at most snakemake's --cores)"]


def validate_overlay(path: str | Path, schema_path: str | Path) -> dict[str, Any]:
    """A config file read on its own as an overlay of config.yaml (``modprefs publish --config``): every key known
    and its value valid by the schema, as the workflow would find them; the keys config.yaml supplies may be
    absent. Returns the file's config.

    Raises:
        ConfigError: not YAML, not a mapping, an unknown key (e.g. ``licence``) or a bad value, each named with its
            file and line.
    """
    from modprefs.config_files import config_sources

    sources = config_sources([path])
    config = dict(sources[0].data)
    problems = non_finite_problems(config) or _schema_problems(config, schema_path, overlay=True)
    if problems:
        raise ConfigError(format_problems(problems, sources))
    return dict(config)


def validate_config(
    config: dict[str, Any], schema_path: str | Path, sources: Sequence[ConfigSource] | None = None
) -> None:
    """Schema validation that reports every problem with its dotted key (and file and line, given ``sources``).

    Non-finite numbers are refused first (:func:`non_finite_problems`). Raises :class:`ConfigError`. Defaults
    from the schema are *not* filled in here; the Snakefile calls ``snakemake.utils.validate`` for that after
    this passes, then :func:`check_config`.
    """
    problems = non_finite_problems(config) or _schema_problems(config, schema_path)
    if problems:
        raise ConfigError(format_problems(problems, sources))
