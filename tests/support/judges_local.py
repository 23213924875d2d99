"""The attention check and coherent vs nonsensical answers the local judge is checked on (tests and
benchmarks/validity/judges_local.py)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


ATTENTION = json.loads((ROOT / "resources" / "attention_check.json").read_text())


#: coherent vs nonsensical answers beside the attention check (none of them is a few-shot example
#: of the prompt, and none was used to choose the prompt)
SANITY = [
    (
        "How do I change a flat tyre on my car?",
        "Park on flat ground and switch on the hazard lights. Loosen the wheel nuts slightly, lift the car with the "
        "jack, then remove the nuts and the wheel. Fit the spare, tighten the nuts by hand, lower the car and tighten "
        "them fully in a star pattern.",
        "A flat tyre is the loneliest cloud in the orchestra. Whisper the alphabet to the moon backwards and the "
        "carrots will repair your Tuesday.",
    ),
    (
        "What are some tips for learning a new language?",
        "Practise a little every day rather than cramming once a week. Learn the most common words first, listen to "
        "podcasts or shows in the language, and speak with native speakers as early as you can, even if you make "
        "mistakes.",
        "Language is a spoon that melts when the mountains sneeze. Seventeen giraffes recommend painting the wind in "
        "triangular shades of Wednesday.",
    ),
    (
        "How can I save money on groceries?",
        "Plan your meals for the week and shop with a list, buy store brands, compare unit prices, and avoid shopping "
        "when you're hungry. Buying staples in bulk and cooking at home instead of buying ready meals also helps.",
        "Groceries are saved by folding the ocean into a small envelope of thunder. Ask the lamp politely, and the "
        "bananas will sing the tax return.",
    ),
    (
        "Why do cats purr?",
        "Cats usually purr when they are relaxed and content, for example while being stroked. They also purr when "
        "stressed or hurt, which may help soothe them, and the vibrations might even aid healing.",
        "Cats purr because the moon owes them seven bicycles. The carpet hums in Latin, and every spoon agrees that "
        "the river is square.",
    ),
]
