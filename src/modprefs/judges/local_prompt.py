"""The offline text judge's prompt and rating maps (:mod:`modprefs.judges.local`): a local prompt file's sections
(``### system``, ``### template``, ``### example: Yes|No``) parsed into a :class:`YesNoPrompt`, the conversation's
earlier turns as the prompt shows them, and the maps from the model's P(Yes) and from DNSMOS OVRL onto 1..100.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from modprefs.judges.prompts import ROLE_NAMES, Prompt, load_prompt


@dataclass(frozen=True)
class YesNoPrompt:
    """A parsed local prompt file. ``template`` has the placeholders ``{{history}}``, ``{{question}}``
    and ``{{response}}``; ``shots`` are the few-shot user turns (rendered with the template, no
    history) and their answers."""

    prompt: Prompt
    system: str
    template: str
    shots: tuple[tuple[str, str], ...]

    @property
    def version(self) -> str:
        return self.prompt.version

    def render(self, question: str, response: str, history: str = "") -> str:
        """The item's user turn. One pass over the template: text inserted for a placeholder is not
        scanned again (a response may itself contain ``{{...}}``)."""
        fields = {"history": history, "question": question, "response": response}

        def fill(m: re.Match) -> str:
            if m.group(1) not in fields:
                raise ValueError(f"local prompt {self.prompt.name}: unknown placeholder {m.group(0)}")
            return fields[m.group(1)]

        return _PLACEHOLDER.sub(fill, self.template)


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_SECTION = re.compile(r"^### (system|template|example: (Yes|No))\s*$", re.MULTILINE)


def load_yes_no_prompt(name: str, prompts_dir: str | Path | None = None) -> YesNoPrompt:
    """Parse a local prompt file (see ``resources/judges/prompts/local_text_response_quality_v1.txt``)."""
    prompt = load_prompt(name, prompts_dir)
    marks = list(_SECTION.finditer(prompt.text))
    if not marks or prompt.text[: marks[0].start()].strip():
        raise ValueError(
            f"local prompt {prompt.name}: must consist of '### system', '### template' and "
            "'### example: Yes|No' sections"
        )
    system, template, shots = "", None, []
    for m, nxt in zip(marks, marks[1:] + [None]):
        body = prompt.text[m.end() : nxt.start() if nxt else None].strip("\n")
        if m.group(1) == "system":
            system = body.strip()
        elif m.group(1) == "template":
            template = body.strip()
        else:
            fields = dict(re.findall(r"^(question|response): (.*)$", body, flags=re.MULTILINE))
            if set(fields) != {"question", "response"}:
                raise ValueError(f"local prompt {prompt.name}: an example needs 'question:' and 'response:' lines")
            shots.append((fields["question"], fields["response"], m.group(2)))
    if template is None or "{{response}}" not in template or "{{question}}" not in template:
        raise ValueError(
            f"local prompt {prompt.name}: a '### template' with {{{{question}}}} and {{{{response}}}} is needed"
        )
    p = YesNoPrompt(prompt, system, template, ())
    rendered = tuple((p.render(q, r).strip(), answer) for q, r, answer in shots)
    return dataclasses.replace(p, shots=rendered)


def format_history(history: list[dict]) -> str:
    """Earlier turns as ``Earlier conversation:`` + ``User: ...`` / ``Assistant: ...`` lines and a
    blank line; "" when there are none."""
    if not history:
        return ""
    lines = ["Earlier conversation:"]
    for turn in history:
        role = ROLE_NAMES.get(str(turn.get("role")), str(turn.get("role")).upper()).capitalize()
        lines.append(f"{role}: {turn.get('content', '')}")
    return "\n".join(lines) + "\n\n"


def expected_rating(p_yes: float) -> float:
    """1..100 expectation of a Yes(=100)/No(=1) answer: ``1 + 99 * p_yes``."""
    return 1.0 + 99.0 * float(p_yes)


def dnsmos_rating(ovrl: float) -> tuple[float, int, bool]:
    """(unclipped linear value, integer rating in 1..100, whether clipping applied) for DNSMOS OVRL 1-5."""
    value = 1.0 + 99.0 * (float(ovrl) - 1.0) / 4.0
    rating = int(min(100, max(1, round(value))))
    return value, rating, not 1.0 <= value <= 100.0


# ---------------------------------------------------------------------------------------------
# units (one per item) and their request hashes
# ---------------------------------------------------------------------------------------------
