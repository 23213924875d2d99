"""Simulated free-text justifications (§4.3), calibrated to the paper's term statistics.

A justification is an opener (which response won, or a tie) followed by one to three reasons::

    "I preferred the second one because it had more detail, and the tone was warm."

Each reason comes from an *aspect*: a paper term aspect (``user``, ``help``, ``response``,
``detail``, ``give``: phrases that use that word and none of the other four), a channel aspect
(``listening`` / ``reading``: only words that ``resources/analysis/modality_terms.txt`` excludes,
plus stop words and "easier"/"better"), or a *neutral* aspect whose phrases are templates filled
with content words (adjectives, nouns, verbs) drawn with Zipf-like weights from fixed lists.

Aspect probabilities in condition c are ``base x exp(strength x tilt x s_c)`` (s = +1 audio,
-1 text), normalised; ``strength`` is ``SimulationParams.justification_modality_strength``
(0 = identical word distributions in both conditions, a null). The tilts are tuned so that, at
strength 1 and the paper's document counts (347 audio / 311 text), the §4.3 chi-square tests
(Yates, presence/absence, :mod:`modprefs.stats.tables.justifications`) average the paper's values: user
12.8 and help 9.8 (more in audio), response 14.5, detail 14.5 and give 17.0 (more in text); the
word lists and Zipf exponent are tuned so that the TF-IDF vocabulary (stems in >= 5 documents) is
about the paper's 223 terms. No phrase negates a paper term (the analysis counts "does not give" as
``not_give``, not ``give``; issue 27). benchmarks/validity/ratings_calibration.py reports both, paper vs simulated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from modprefs.study.terms import CONDITIONS


@dataclass(frozen=True)
class Aspect:
    """One kind of reason: base weight, modality tilt (+ audio, - text) and its phrases."""

    base: float
    tilt: float
    phrases: tuple[str, ...]


#: Content words for the neutral templates (none is a stop word, a modality-specific term or one of
#: the five paper terms; order = Zipf rank).
ADJECTIVES = (
    "clear",
    "accurate",
    "concise",
    "relevant",
    "thorough",
    "specific",
    "useful",
    "correct",
    "simple",
    "direct",
    "complete",
    "practical",
    "friendly",
    "polite",
    "logical",
    "honest",
    "balanced",
    "informative",
    "precise",
    "short",
    "long",
    "brief",
    "focused",
    "organized",
    "coherent",
    "thoughtful",
    "confident",
    "careful",
    "warm",
    "neutral",
    "objective",
    "reasonable",
    "sensible",
    "realistic",
    "reliable",
    "factual",
    "appropriate",
    "casual",
    "formal",
    "professional",
    "technical",
    "engaging",
    "interesting",
    "creative",
    "original",
    "nuanced",
    "vague",
    "generic",
    "confusing",
    "repetitive",
    "wordy",
    "rambling",
    "lengthy",
    "compact",
    "structured",
    "consistent",
    "comprehensive",
    "elaborate",
    "extensive",
    "minimal",
    "shallow",
    "superficial",
    "deep",
    "broad",
    "narrow",
    "outdated",
    "fresh",
    "bland",
    "lively",
    "kind",
    "gentle",
    "blunt",
    "harsh",
    "awkward",
    "crisp",
    "dense",
    "efficient",
    "effective",
    "meaningful",
    "valuable",
    "solid",
    "strong",
    "weak",
    "poor",
    "excellent",
    "great",
    "decent",
    "fair",
    "unbiased",
    "biased",
    "opinionated",
    "preachy",
    "condescending",
    "humble",
    "modest",
    "optimistic",
    "positive",
    "negative",
    "encouraging",
    "reassuring",
    "funny",
    "witty",
    "playful",
    "empathetic",
    "supportive",
    "respectful",
    "cautious",
    "persuasive",
    "convincing",
    "insightful",
    "actionable",
    "safe",
    "trustworthy",
    "approachable",
    "digestible",
    "substantive",
    "sloppy",
    "polished",
    "robust",
    "tidy",
)
NOUNS = (
    "example",
    "explanation",
    "reasoning",
    "tone",
    "structure",
    "point",
    "information",
    "advice",
    "question",
    "answer",
    "content",
    "context",
    "facts",
    "summary",
    "steps",
    "suggestion",
    "options",
    "solution",
    "problem",
    "topic",
    "logic",
    "style",
    "wording",
    "length",
    "depth",
    "accuracy",
    "clarity",
    "focus",
    "perspective",
    "opinion",
    "balance",
    "evidence",
    "sources",
    "argument",
    "conclusion",
    "introduction",
    "instructions",
    "recommendation",
    "issue",
    "substance",
    "nuance",
    "empathy",
    "warmth",
    "personality",
    "humor",
    "honesty",
    "safety",
    "caution",
    "risk",
    "knowledge",
    "expertise",
    "research",
    "data",
    "list",
    "order",
    "ending",
    "opening",
    "overview",
    "background",
    "definition",
    "comparison",
    "pros",
    "benefits",
    "drawbacks",
    "alternatives",
    "caveats",
    "disclaimer",
    "warning",
    "tips",
    "resources",
    "names",
    "dates",
    "ideas",
    "terms",
    "jargon",
    "grammar",
    "experience",
    "feelings",
    "situation",
    "request",
    "goal",
    "plan",
    "approach",
    "method",
    "process",
    "idea",
    "theme",
    "framing",
    "attitude",
    "manner",
    "confidence",
    "precision",
    "relevance",
    "coverage",
    "scope",
    "brevity",
    "simplicity",
    "originality",
    "creativity",
    "consistency",
)
VERBS = (
    "explain",
    "cover",
    "mention",
    "include",
    "suggest",
    "recommend",
    "clarify",
    "summarize",
    "justify",
    "support",
    "acknowledge",
    "consider",
    "define",
    "compare",
    "outline",
    "emphasize",
    "highlight",
    "avoid",
    "ignore",
    "miss",
    "repeat",
    "handle",
    "tackle",
    "solve",
    "simplify",
    "introduce",
    "conclude",
    "address",
    "answer",
    "frame",
    "balance",
    "organize",
    "prioritize",
    "question",
    "challenge",
    "correct",
    "improve",
    "cite",
    "reference",
    "list",
    "rank",
    "weigh",
    "explore",
    "discuss",
    "qualify",
    "connect",
    "flag",
)
NEUTRAL_TEMPLATES = (
    "it was more {adj} and {adj}",
    "it was {adj}, {adj} and {adj}",
    "the {noun} was {adj} and {adj}",
    "it would {verb} the {noun} and the {noun}",
    "I liked the {adj} {noun}",
    "the other one was {adj} and {adj}",
    "it had a more {adj} {noun}",
    "it managed to {verb} the {noun} in a {adj} way",
    "the {noun} and {noun} were {adj}",
    "the other one failed to {verb} the {noun}",
)

ASPECTS: dict[str, Aspect] = {
    "neutral": Aspect(1.0, 0.0, NEUTRAL_TEMPLATES),
    "user": Aspect(
        0.075,
        0.47,
        (
            "it was aimed at the user",
            "it thought about what the user wanted",
            "it addressed the user directly",
            "it considered the user's situation",
            "it understood the user",
            "it was tailored to the user",
            "it respected the user",
            "it kept the user in mind",
        ),
    ),
    "help": Aspect(
        0.075,
        0.41,
        (
            "it was more helpful",
            "it would actually help",
            "it offered real help",
            "it helps with the actual problem",
            "it was the more helpful of the two",
            "it tried harder to help",
            "it was genuinely helpful",
        ),
    ),
    "response": Aspect(
        0.11,
        -0.49,
        (
            "the response was stronger",
            "the response covered the question",
            "its response was more sensible",
            "it was a more complete response",
            "the response stayed on point",
            "the other response wandered",
            "the response was better put together",
        ),
    ),
    "detail": Aspect(
        0.085,
        -0.55,
        (
            "it had more detail",
            "it was more detailed",
            "it went into detail",
            "the details were specific",
            "it included useful details",
            "the other one lacked detail",
            "it added the right details",
        ),
    ),
    "give": Aspect(
        0.085,
        -0.61,
        (
            "it gives concrete steps",
            "it gives a clear recommendation",
            "it gives more options",
            "giving examples was smart",
            "it gives reasons",
            "it gives a straight answer",
            "the other one gives less",
        ),
    ),
    "listening": Aspect(0.04, 2.0, ("it was easier to listen to", "it sounded better", "it was easier to hear")),
    "reading": Aspect(0.04, -2.0, ("it was easier to read", "it read better", "it was easier to skim")),
}
OPENERS_PREF = (
    "I preferred the {which} one because",
    "The {which} one was better because",
    "I chose the {which} since",
    "The {which} answer won:",
    "I went with the {which} one;",
)
OPENERS_TIE = (
    "Both were about the same, though",
    "Hard to choose; both were fine but",
    "They were equally good, maybe",
    "No real winner, but",
)
#: Zipf exponent of the content-word draws, and P(1, 2, 3 reasons)
ZIPF_EXPONENT = 0.36
N_REASONS_PROBS = (0.35, 0.45, 0.20)


def aspect_weights(condition: str, strength: float) -> dict[str, float]:
    """Probability of each aspect for one reason in ``condition`` at modality ``strength``."""
    sign = 1.0 if condition == "audio" else -1.0
    w = {k: a.base * math.exp(strength * a.tilt * sign) for k, a in ASPECTS.items()}
    total = sum(w.values())
    return {k: v / total for k, v in w.items()}


def _zipf(n: int) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** ZIPF_EXPONENT
    return w / w.sum()


_ZIPF = {"adj": _zipf(len(ADJECTIVES)), "noun": _zipf(len(NOUNS)), "verb": _zipf(len(VERBS))}
_WORDS = {"adj": ADJECTIVES, "noun": NOUNS, "verb": VERBS}


def _fill(template: str, rng: np.random.Generator) -> str:
    out = template
    for slot in ("adj", "noun", "verb"):
        while "{" + slot + "}" in out:
            word = _WORDS[slot][rng.choice(len(_WORDS[slot]), p=_ZIPF[slot])]
            out = out.replace("{" + slot + "}", word, 1)
    return out


def justification_texts(
    conditions: np.ndarray, prefs: np.ndarray, first_clips: np.ndarray, strength: float, rng: np.random.Generator
) -> list[str]:
    """One justification per row: ``conditions`` (audio/text), ``prefs`` ('0', '1', 'tie'),
    ``first_clips`` (response index shown first; "first"/"second" in the opener follow it)."""
    names = list(ASPECTS)
    weights = {c: np.array(list(aspect_weights(c, strength).values())) for c in CONDITIONS}
    out = []
    for cond, pref, first in zip(conditions, prefs, first_clips):
        k = 1 + int(rng.choice(len(N_REASONS_PROBS), p=N_REASONS_PROBS))
        reasons = []
        for _ in range(k):
            aspect = ASPECTS[names[rng.choice(len(names), p=weights[cond])]]
            reasons.append(_fill(aspect.phrases[rng.integers(len(aspect.phrases))], rng))
        if pref == "tie":
            opener = OPENERS_TIE[rng.integers(len(OPENERS_TIE))]
        else:
            which = "first" if int(pref) == int(first) else "second"
            opener = OPENERS_PREF[rng.integers(len(OPENERS_PREF))].format(which=which)
        out.append(f"{opener} {', and '.join(reasons)}.")
    return out
