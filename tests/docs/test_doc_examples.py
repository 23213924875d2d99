"""Every code block of README.md and docs/*.md, collected by Sybil and checked by what its language allows.

Sybil parses the Markdown; the evaluators here decide what "works as written" means for each language:

* ``python``: executed (Sybil's own Python evaluator), each document in one namespace, in a scratch folder;
* ``yaml``: a config fragment, merged over the shipped config.yaml as Snakemake merges ``--configfile`` layers,
  then validated against workflow/schemas/config.schema.yaml with the workflow's own start-up steps;
* ``bash``: each command (continuations joined, trailing comments dropped) parsed by the program it calls --
  ``modprefs`` by the CLI's own argparse tree, ``snakemake`` by Snakemake's, ``make`` against the Makefile's
  targets, ``pip install -e '.[x]'`` against pyproject's extras, ``bash``/``pytest`` paths against the checkout;
  system commands of the deployment recipe (apt-get, systemctl, ...) are only checked to be those commands;
* ``ini``, ``nginx``, ``cron``: parsed (systemd units and env files by configparser, nginx by its braces and
  semicolons, cron by its five time fields). The deployment recipe itself runs in tests/app/test_app_proxy.py.

The commands that matter most also run end to end on tiny inputs elsewhere, copied from the docs by
tests/support/doc_blocks.py (the own study, the cluster resume, the weights, the app's live section); this module makes
sure no block anywhere is left unchecked.
"""

from __future__ import annotations

import argparse
import configparser
import contextlib
import io
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

#: commands of the deployment recipe and the install steps that this module can only name, not run
SYSTEM_COMMANDS = {"apt-get", "systemctl", "journalctl", "curl", "useradd", "createuser", "createdb", "export"}


def _commands(block: str) -> list[list[str]]:
    """A shell block's commands as argv lists: continuations joined, comments dropped, ``&&`` chains split."""
    joined = re.sub(r"\\\n\s*", " ", block)
    out: list[list[str]] = []
    for line in joined.splitlines():
        argv = shlex.split(line, comments=True)
        while argv:
            cut = argv.index("&&") if "&&" in argv else len(argv)
            out.append(argv[:cut])
            argv = argv[cut + 1 :]
    return [a for a in out if a]


def _without_sudo(argv: list[str]) -> list[str]:
    if argv[0] != "sudo":
        return argv
    rest = argv[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] == "-u" else rest[1:]
    return rest


def _parse_with(parser: argparse.ArgumentParser, args: list[str], where: str) -> argparse.Namespace:
    """argparse's verdict on ``args`` as an assertion (argparse exits on an error; its message is kept)."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(args)
    except SystemExit as exc:
        raise AssertionError(f"{where}: {shlex.join(args)!r} does not parse: {err.getvalue().strip()}") from exc


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), flags=re.M))


def _extras() -> set[str]:
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def check_command(argv: list[str], where: str) -> str:
    """Check one command as its program would read it; returns the program's name (for the counts)."""
    argv = _without_sudo(argv)
    program = Path(argv[0]).name
    if program == "modprefs":
        from modprefs.cli import build_parser

        _parse_with(build_parser(), argv[1:], where)
    elif program == "snakemake":
        from snakemake.cli import get_argument_parser

        _parse_with(get_argument_parser(), argv[1:], where)
    elif program == "make":
        unknown = [t for t in argv[1:] if "=" not in t and t not in _makefile_targets()]
        assert not unknown, f"{where}: make targets {unknown} are not in the Makefile"
    elif program == "pip":
        assert argv[1] == "install", f"{where}: {argv}"
        for spec in argv[2:]:
            m = re.fullmatch(r"\.\[([\w,-]+)\]", spec)
            if m:
                assert set(m.group(1).split(",")) <= _extras(), f"{where}: no extra {m.group(1)} in pyproject.toml"
    elif program in {"bash", "pytest"}:
        paths = [a for a in argv[1:] if not a.startswith("-")]
        assert paths and all(list(ROOT.glob(p)) for p in paths), f"{where}: {paths} name no file of the checkout"
    else:
        assert program in SYSTEM_COMMANDS, f"{where}: no check for {program!r} (add one here)"
    return program


def check_config_fragment(block: str, where: str) -> None:
    """A YAML config block over config.yaml passes the schema and the workflow's start-up steps."""
    from snakemake.utils import update_config

    from modprefs.config_checks import unset_null_keys, validate_config

    fragment = yaml.safe_load(block)
    assert isinstance(fragment, dict), f"{where}: a config block must be a mapping"
    schema = yaml.safe_load(SCHEMA.read_text())
    unknown = sorted(set(fragment) - set(schema["properties"]))
    assert not unknown, f"{where}: {unknown} are not config keys"
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    update_config(config, fragment)
    unset_null_keys(config, schema)
    validate_config(config, SCHEMA)


def check_ini(block: str, where: str) -> None:
    """A systemd unit (sections) or an environment file (KEY=value lines) as configparser reads it."""
    text = block if block.lstrip().startswith("[") else "[env]\n" + block
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text, source=where)
    assert parser.sections(), f"{where}: no section or key"


def check_nginx(block: str, where: str) -> None:
    """Balanced braces; every directive ends in ``;`` or opens a block."""
    body = "\n".join(re.sub(r"#.*$", "", line) for line in block.splitlines())
    assert body.count("{") == body.count("}"), f"{where}: unbalanced braces"
    for line in (s.strip() for s in body.splitlines()):
        assert not line or line.endswith((";", "{", "}")), f"{where}: {line!r} is not a complete directive"


def check_cron(block: str, where: str) -> None:
    """Variable assignments or five time fields and a command."""
    for line in (s.strip() for s in block.splitlines()):
        if not line or line.startswith("#") or re.match(r"^\w+=", line):
            continue
        fields = line.split(None, 5)
        assert len(fields) == 6, f"{where}: {line!r} has no command after five time fields"
        assert all(re.fullmatch(r"[\d*/,-]+", f) for f in fields[:5]), f"{where}: bad time fields in {line!r}"


CHECKS = {"bash": None, "yaml": check_config_fragment, "ini": check_ini, "nginx": check_nginx, "cron": check_cron}


def _evaluator(lang: str):
    def evaluate(example: Example) -> None:
        where = f"{Path(example.path).relative_to(ROOT)}:{example.line} ({lang} block)"
        if lang == "bash":
            for argv in _commands(example.parsed):
                check_command(argv, where)
        else:
            CHECKS[lang](example.parsed, where)  # type: ignore[misc]

    return evaluate


SYBIL = Sybil(
    parsers=[PythonCodeBlockParser(), *(CodeBlockParser(language=lang, evaluator=_evaluator(lang)) for lang in CHECKS)]
)


def _examples() -> list[Any]:
    cases = []
    for path in DOCUMENTS:
        document = SYBIL.parse(path)
        for example in document.examples():
            cases.append(pytest.param(document, example, id=f"{path.relative_to(ROOT)}:{example.line}"))
    return cases


EXAMPLES = _examples()


@pytest.mark.parametrize(("document", "example"), EXAMPLES)
def test_doc_example(document: Any, example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    example.evaluate()


def test_every_fenced_block_is_collected() -> None:
    """No block hides under a language nobody checks: every fence names one, and only ``text`` (diagrams, a URL
    template) and the site's toctree/include directives are not code."""
    fences = []
    for path in DOCUMENTS:
        fences += re.findall(r"^```(\S*)", path.read_text(encoding="utf-8"), flags=re.M)[::2]
    checked = [f for f in fences if f != "text" and not f.startswith("{")]
    assert set(checked) <= {"python", *CHECKS}, set(checked) - {"python", *CHECKS}
    assert len(EXAMPLES) == len(checked) >= 30


def test_the_checks_find_what_is_wrong() -> None:
    """Each evaluator fails on a broken block of its kind."""
    with pytest.raises(AssertionError, match="does not parse"):
        check_command(["modprefs", "stats", "--no-such-option"], "doc")
    with pytest.raises(AssertionError, match="does not parse"):
        check_command(["snakemake", "--cores"], "doc")
    with pytest.raises(AssertionError, match="not in the Makefile"):
        check_command(["make", "deploy"], "doc")
    with pytest.raises(AssertionError, match="no extra"):
        check_command(["pip", "install", "-e", ".[gpu]"], "doc")
    with pytest.raises(AssertionError, match="no check for"):
        check_command(["rm", "-rf", "results"], "doc")
    with pytest.raises(AssertionError, match="not config keys"):
        check_config_fragment("sutdy: {allocation: judges}\n", "doc")
    with pytest.raises(Exception, match="allocation"):
        check_config_fragment("study: {allocation: by_judges}\n", "doc")
    with pytest.raises(AssertionError, match="unbalanced"):
        check_nginx("location / {\n  proxy_pass http://x;\n", "doc")
    with pytest.raises(AssertionError, match="time fields"):
        check_cron("0 3 * * backup.sh\n", "doc")
    assert _commands("a \\\n  --b c  # note\nx && y z\n") == [["a", "--b", "c"], ["x"], ["y", "z"]]
