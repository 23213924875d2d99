"""The study's texts: consent, instructions and debrief as Markdown, the lab's own or the packaged ones.

``app load --consent FILE --instructions FILE --debrief FILE`` reads the lab's files (each optional: the
packaged one in ``modprefs/app/texts/`` otherwise), fills their placeholders and renders them to HTML
(markdown-it-py, CommonMark, raw HTML not allowed: it is shown escaped), which is stored with the study
(app_meta ``text_<name>``). Placeholders are ``{name}`` (``{{`` and ``}}`` write a brace):

* ``{minutes}``: the estimated duration, computed from the design: the tasks per participant (the attention
  check and the practice task included) x ``--minutes-per-trial`` + ``--overhead-minutes``, rounded up to 5;
* ``{trials}``: the rated tasks per participant (the attention check included, the practice task not);
* ``{title}``: the study title; ``{payment}``, ``{contact}``, ``{ethics}``: ``--payment``, ``--contact``,
  ``--ethics`` of ``app load``.

An unknown placeholder, one whose option was not given, an unclosed one (``{contact`` without its ``}``) or
a lone brace, an empty file (nothing but white space or invisible characters such as a byte-order mark or
zero-width spaces) or one that cannot be read is refused (:class:`StudyTextError`, naming the file and the
placeholder) before anything is written; so is a timing prior outside its bounds (:func:`check_timing`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from modprefs.errors import UserInputError
from modprefs.visible_text import invisible_characters, visible_text

HERE = Path(__file__).resolve().parent / "texts"
NAMES = ("consent", "instructions", "debrief")
PLACEHOLDERS = ("minutes", "trials", "title", "payment", "contact", "ethics")
MINUTES_PER_TRIAL = 1.5  # the timing prior of one task (reading or listening, rating, preference)
OVERHEAD_MINUTES = 6.0  # consent, questionnaire, calibration and headphone check, instructions, closing question
#: the most ``--minutes-per-trial`` may be: a task of over an hour is a wrong unit (seconds?), not a study's design
MAX_MINUTES_PER_TRIAL = 60.0
#: the most ``--overhead-minutes`` may be (10 hours): beyond it the duration a consent text states means nothing
MAX_OVERHEAD_MINUTES = 600.0
META_PREFIX = "text_"
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


class StudyTextError(UserInputError):
    """A study text that cannot be used; the message names the file and the placeholder."""


def check_timing(per_trial: float, overhead: float) -> None:
    """Refuse a timing prior outside (0, :data:`MAX_MINUTES_PER_TRIAL`] minutes a task or an overhead outside
    [0, :data:`MAX_OVERHEAD_MINUTES`] (``1e308`` made the duration infinite: an OverflowError, not a message).

    Raises:
        StudyTextError: naming the ``app load`` option and its bounds.
    """
    for option, value, low, high, strict in (
        ("--minutes-per-trial", per_trial, 0.0, MAX_MINUTES_PER_TRIAL, True),
        ("--overhead-minutes", overhead, 0.0, MAX_OVERHEAD_MINUTES, False),
    ):
        number = float(value)
        if not math.isfinite(number) or number < low or (strict and number == low) or number > high:
            raise StudyTextError(
                f"app load {option} {value!r}: must be a finite number of minutes {'>' if strict else '>='} "
                f"{low:g} and <= {high:g} (it sets the duration {{minutes}} the study texts state)"
            )


def estimate_minutes(tasks: int, per_trial: float = MINUTES_PER_TRIAL, overhead: float = OVERHEAD_MINUTES) -> int:
    """The study's duration in minutes: ``tasks`` x ``per_trial`` + ``overhead``, rounded up to 5.

    Raises:
        StudyTextError: ``per_trial`` or ``overhead`` outside their bounds (:func:`check_timing`).
    """
    check_timing(per_trial, overhead)
    return max(5, int(math.ceil((tasks * per_trial + overhead) / 5.0)) * 5)


def fill(text: str, values: Mapping[str, str], where: str) -> str:
    """``text`` with its ``{placeholders}`` replaced; an unknown or unset one raises StudyTextError."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        name = m.group(1).strip()
        if name not in PLACEHOLDERS:
            raise StudyTextError(
                f"{where}: unknown placeholder {{{name}}} (known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}; "
                "write {{ and }} for a brace)"
            )
        if not values.get(name):
            raise StudyTextError(f"{where}: placeholder {{{name}}} has no value (give app load --{name})")
        return str(values[name])

    out, pos = [], 0
    for m in _TOKEN.finditer(text):
        _no_stray_brace(text, pos, m.start(), where)
        out += [text[pos : m.start()], one(m)]
        pos = m.end()
    _no_stray_brace(text, pos, len(text), where)
    return "".join(out + [text[pos:]])


def _no_stray_brace(text: str, start: int, end: int, where: str) -> None:
    """A ``{`` or ``}`` outside a placeholder (an unclosed ``{contact``, a lone ``}``) raises StudyTextError."""
    m = re.search(r"[{}]", text[start:end])
    if m is None:
        return
    at = start + m.start()
    line = text.count("\n", 0, at) + 1
    snippet = text[at : at + 20].split("\n", 1)[0]
    if m.group(0) == "{":
        raise StudyTextError(
            f"{where}: unclosed placeholder {snippet!r} on line {line} "
            "(a placeholder is {name}; write {{ for a brace)"
        )
    raise StudyTextError(f"{where}: a lone }} on line {line} ({snippet!r}; write }}}} for a brace)")


def render_markdown(text: str) -> str:
    """CommonMark to HTML; raw HTML in the text is escaped, not passed on."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(text)


@dataclass
class StudyTexts:
    """The lab's text files (None: the packaged one) and the values of the placeholders given at load."""

    files: dict[str, Path | None] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    minutes_per_trial: float = MINUTES_PER_TRIAL
    overhead_minutes: float = OVERHEAD_MINUTES

    def render(self, trials: int, practice: bool = True, title: str = "") -> dict[str, str]:
        """The app_meta entries: ``text_<name>`` (HTML) for each text, and ``text_minutes``.

        ``trials``: the assigned tasks per participant (attention check included); ``practice``: a practice
        task comes first (counted in the duration)."""
        minutes = estimate_minutes(trials + int(practice), self.minutes_per_trial, self.overhead_minutes)
        values = {"minutes": str(minutes), "trials": str(trials), "title": title, **self.values}
        out = {f"{META_PREFIX}minutes": str(minutes)}
        for name in NAMES:
            path = self.files.get(name)
            source = path if path is not None else HERE / f"{name}.md"
            where = f"--{name} {path}" if path is not None else f"the packaged {name} text ({source.name})"
            try:
                raw = source.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise StudyTextError(f"{where}: cannot read the file: {exc}") from None
            if not visible_text(raw).strip():
                hidden = invisible_characters(raw)
                shown = f" (only invisible characters: {', '.join(hidden)})" if hidden else ""
                raise StudyTextError(f"{where}: the file is empty{shown} (give the text, or leave the option out)")
            out[META_PREFIX + name] = render_markdown(fill(raw, values, where))
        return out


def stored_html(extra: Mapping[str, str], name: str) -> str:
    """A stored text's HTML (app_meta ``text_<name>``); the packaged text, unfilled placeholders shown as
    written, for a database loaded without texts."""
    html = extra.get(META_PREFIX + name)
    if html:
        return html
    return render_markdown((HERE / f"{name}.md").read_text(encoding="utf-8").replace("{minutes}", "20-40"))
