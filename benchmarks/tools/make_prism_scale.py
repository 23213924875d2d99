"""A synthetic PRISM-scale input: 3,113 unguided conversations in PRISM's ``conversations`` schema.

PRISM has 3,113 unguided conversations (of 8,011); this file has as many, with the same fields as
``resources/sample/conversations.jsonl`` (conversation_id, user_id, generated_datetime,
timing_duration_s, conversation_type, opening_prompt, conversation_turns, conversation_history with
turn / role / content / within_turn_id / model_name / model_provider / score / if_chosen, and the
survey fields). The text is generated English (templates over a small vocabulary, no screened
terms); only the sizes matter: it feeds ``benchmarks/performance/dag_scale.py``.

Length design (the sampling quota): every conversation has one turn with exactly two responses.
``N_LONG`` = 312 of them (10.02 %) are "long-gap" pairs (one response 700-1,400 characters, the
other 60-200, a difference of at least 500), the rest differ by less than 300 characters. With
``sampling.long_percentile: 90`` numpy's 90th percentile of the 3,113 differences falls between
the 2,801st and 2,802nd smallest, so the long stratum holds exactly the 312 long-gap pairs and
drawing every conversation needs ``long_fraction = 312 / 3113`` (the stratum's share): the
paper's 0.25 asks for round(0.25 x 3113) = 778 long-gap prompts from a stratum of 312 and stops
with a SamplingError.

    python benchmarks/tools/make_prism_scale.py [OUT.jsonl]     # default benchmarks/out/prism_scale.jsonl
"""

from __future__ import annotations

import json
import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

N_CONVERSATIONS = 3113
N_LONG = 312
SEED = 3113
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "out" / "prism_scale.jsonl"

MODELS = [
    ("gpt-4-1106-preview", "openai"),
    ("gpt-3.5-turbo", "openai"),
    ("claude-2.1", "anthropic"),
    ("claude-instant-1", "anthropic"),
    ("llama-2-70b-chat", "meta"),
    ("llama-2-7b-chat", "meta"),
    ("mistral-7b-instruct", "mistralai"),
    ("zephyr-7b-beta", "huggingface"),
    ("command", "cohere"),
    ("command-light", "cohere"),
    ("gemini-pro", "google"),
    ("palm-2", "google"),
]
TOPICS = [
    "saving money on groceries",
    "learning a new language",
    "training for a first marathon",
    "planning a week of healthy meals",
    "keeping houseplants alive",
    "writing a cover letter",
    "sleeping better at night",
    "starting to play the guitar",
    "organising a small kitchen",
    "choosing a used bicycle",
    "preparing for a job interview",
    "teaching a child to read",
    "reducing screen time",
    "making friends in a new city",
    "growing tomatoes on a balcony",
    "studying for an exam",
    "budgeting for a holiday",
    "fixing a slow laptop",
    "writing a short story",
    "getting started with photography",
]
ASKS = [
    "What is the best way to get started with {t}?",
    "Can you give me some advice on {t}?",
    "I need help with {t}. Where should I begin?",
    "What mistakes do people make when {t}?",
    "How much time does {t} usually take?",
    "Could you explain the basics of {t}?",
]
OPENERS = [
    "A good place to start is to keep things simple.",
    "Most people find it easier with a clear plan.",
    "It helps to think about what you want to achieve first.",
    "There is no single right answer, but a few habits help.",
    "Start small and build up as you go.",
]
SENTENCES = [
    "Set aside a little time each day and write down what worked.",
    "Ask a friend to join you, because it is easier to keep going together.",
    "Look for a short guide from a library or a trusted website before spending money.",
    "Keep a simple list of the steps and tick them off as you finish each one.",
    "Expect some weeks to go better than others and do not give up after a setback.",
    "Try one change at a time so that you can see what really makes a difference.",
    "Compare a few options before you decide, and read what other people say about them.",
    "Think about the cost over a whole year rather than only the price today.",
    "Take short breaks, drink water and get enough sleep, since rest matters more than it seems.",
    "When you feel stuck, go back to the basics and repeat the first steps slowly.",
    "Write down your questions and bring them to someone with more experience.",
    "Celebrate small wins, because they keep you motivated for the harder parts.",
    "Check your progress every month and adjust the plan if something is not working.",
    "Use a calendar reminder so that the new routine becomes a habit.",
    "Be patient with yourself, as most people need a few weeks to notice a change.",
]


def _text(rng: random.Random, lo: int, hi: int) -> str:
    """English text of lo..hi characters (whole sentences; trimmed at a sentence boundary)."""
    target = rng.randint(lo, hi)
    parts = [rng.choice(OPENERS)]
    while len(" ".join(parts)) < target:
        parts.append(rng.choice(SENTENCES))
    while len(" ".join(parts)) > hi and len(parts) > 1:
        parts.pop()
    return " ".join(parts)


def _pair(rng: random.Random, long_gap: bool) -> tuple[str, str]:
    if long_gap:  # difference >= 500 characters
        long_, short = _text(rng, 700, 1400), _text(rng, 60, 200)
        while len(long_) - len(short) < 500:
            long_ = _text(rng, 900, 1400)
        return (long_, short) if rng.random() < 0.5 else (short, long_)
    while True:  # difference < 300 characters
        a = _text(rng, 80, 600)
        b = _text(rng, max(60, len(a) - 280), min(650, len(a) + 280))
        if abs(len(a) - len(b)) < 300:
            return a, b


def make_rows(n: int = N_CONVERSATIONS, n_long: int = N_LONG, seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    long_ids = set(rng.sample(range(n), n_long))
    start = datetime(2023, 11, 22, 8, 0, 0)
    rows = []
    for i in range(n):
        prompt = rng.choice(ASKS).format(t=rng.choice(TOPICS))
        texts = _pair(rng, i in long_ids)
        (m0, p0), (m1, p1) = rng.sample(MODELS, 2)
        scores = [rng.randint(1, 100), rng.randint(1, 100)]
        best = 0 if scores[0] >= scores[1] else 1
        history = [
            {
                "turn": 0,
                "role": "user",
                "content": prompt,
                "within_turn_id": 0,
                "model_name": None,
                "model_provider": None,
                "score": None,
                "if_chosen": None,
            }
        ]
        for w, (text, (model, provider)) in enumerate(zip(texts, [(m0, p0), (m1, p1)])):
            history.append(
                {
                    "turn": 0,
                    "role": "model",
                    "content": text,
                    "within_turn_id": w,
                    "model_name": model,
                    "model_provider": provider,
                    "score": scores[w],
                    "if_chosen": w == best,
                }
            )
        rows.append(
            {
                "conversation_id": f"s{i + 1:05d}",
                "user_id": f"user{rng.randint(0, 1499):04d}",
                "generated_datetime": (start + timedelta(minutes=7 * i)).strftime("%Y-%m-%d %H:%M:%S"),
                "timing_duration_s": round(rng.uniform(60, 600), 3),
                "conversation_type": "unguided",
                "opening_prompt": prompt,
                "conversation_turns": 1,
                "conversation_history": history,
                "performance_attributes": {
                    "values": rng.randint(1, 100),
                    "fluency": rng.randint(1, 100),
                    "factuality": rng.randint(1, 100),
                    "safety": rng.randint(1, 100),
                    "diversity": rng.randint(1, 100),
                    "creativity": rng.randint(1, 100),
                    "helpfulness": rng.randint(1, 100),
                },
                "choice_attributes": {
                    "values": rng.randint(1, 100),
                    "fluency": rng.randint(1, 100),
                    "factuality": rng.randint(1, 100),
                    "safety": rng.randint(1, 100),
                    "diversity": rng.randint(1, 100),
                    "creativity": rng.randint(1, 100),
                    "helpfulness": rng.randint(1, 100),
                },
                "open_feedback": "Synthetic conversation for the scale benchmark.",
                "included_in_balanced_subset": False,
            }
        )
    return rows


def long_fraction_for(n: int = N_CONVERSATIONS, n_long: int = N_LONG) -> float:
    """The long stratum's share: draws every conversation with `long_percentile: 90`."""
    return n_long / n


def write(path: Path = DEFAULT_OUT) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in make_rows()), encoding="utf-8")
    return path


if __name__ == "__main__":
    out = write(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
    print(f"wrote {N_CONVERSATIONS} unguided conversations ({N_LONG} long-gap) to {out}")
