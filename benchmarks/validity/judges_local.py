"""The offline judges (modprefs.judges.local): how well the text judge separates good from bad
answers, and what each rating costs on this machine.

Discrimination: 14 questions, each with a coherent answer; the "bad" answer is, in turn, (a) a
nonsensical one (surreal sentences), (b) the coherent answer to another question (off-topic), and
(c) the coherent answer with its words shuffled (seeded). The first question is the attention
check; the four of tests/judges/test_judges_local.py's SANITY are among the rest, and 5 were used while
the prompt was designed ("dev"); none is a few-shot example of the prompt. Reported per kind of bad
answer: wins (coherent rated higher), and mean expected ratings.

Cost: the model load, seconds per text rating (one forward pass after the cached few-shot prefix),
and, on the attention check's two responses rendered with kokoro-onnx, seconds per cascade rating
(Whisper tiny.en + the text judge) and per DNSMOS rating, with the clips' length.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/validity/judges_local.py [--threads 1]

Writes benchmarks/out/judges_local.json and prints it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import soundfile as sf  # noqa: E402

from modprefs.io import write_json  # noqa: E402
from modprefs.judges import JudgeItem, run_local_judges  # noqa: E402
from support.judges_local import ATTENTION, SANITY  # noqa: E402

EXTRA = [  # (question, coherent, nonsensical); the first five were the "dev" set of the prompt design
    (
        "How can I improve my sleep?",
        "Keep a regular schedule, going to bed and getting up at the same time every day. Avoid caffeine in the "
        "afternoon, keep your bedroom dark and cool, and put screens away an hour before bed.",
        "Bananas of the moon disagree with the calendar's elbow. A green whisper folded the river into seventeen "
        "envelopes, and the carpet applauded.",
    ),
    (
        "Can you explain what photosynthesis is?",
        "Photosynthesis is the process plants use to turn light into chemical energy. Using sunlight, they combine "
        "carbon dioxide from the air and water from the soil to make glucose, and release oxygen as a by-product.",
        "Photosynthesis is when the refrigerator sings to the mountains on Thursdays. The chair eats its own shadow, "
        "so the square root of orange is a bicycle.",
    ),
    (
        "What should I pack for a weekend hiking trip?",
        "Bring sturdy boots, layered clothing and a rain jacket, plenty of water, snacks, a map or GPS, a first-aid "
        "kit, sunscreen and a headlamp. If you are camping, add a tent, a sleeping bag and a small stove.",
        "Hiking is a type of sandwich that the ocean borrows from elephants. Pack seven doorknobs and the sound of "
        "blue, then ask the staircase to vote.",
    ),
    (
        "How do I make a cup of tea?",
        "Boil fresh water, pour it over a tea bag or loose leaves in a cup, and let it steep for three to five "
        "minutes. Remove the tea, then add milk, sugar or lemon if you like.",
        "Tea is made by teaching a lamp to swim backwards through Wednesday. The kettle is a philosopher, and its "
        "opinion on triangles is mostly purple.",
    ),
    (
        "Why is the sky blue?",
        "Sunlight is made of many colours. When it passes through the atmosphere, the short blue wavelengths are "
        "scattered by air molecules much more than red ones, so blue light reaches our eyes from every direction.",
        "The sky is blue because the spoons went on strike last Friday. Clouds are basically folded trumpets, and "
        "gravity prefers jazz to soup.",
    ),
    (
        "Is it healthy to drink coffee every day?",
        "For most adults, up to three or four cups a day is considered safe and may even have some benefits. Too "
        "much can cause poor sleep, anxiety or a racing heart, and pregnant people are usually advised to limit "
        "caffeine.",
        "Coffee is the shoe of the galaxy, and every elephant knows that the refrigerator dreams in purple. "
        "Therefore the staircase must apologise to the soup.",
    ),
    (
        "What is the difference between weather and climate?",
        "Weather is the short-term state of the atmosphere, such as today's rain or tomorrow's temperature. Climate "
        "is the average pattern of weather in a place over many years, usually thirty or more.",
        "Weather is a violin that forgot its socks, while climate is the sound a Tuesday makes when it eats marble. "
        "Both are mostly made of spoons.",
    ),
    (
        "How do I write a good CV?",
        "Keep it to one or two pages, start with a short summary, and list your experience in reverse chronological "
        "order. Use concrete achievements with numbers where possible, tailor it to each job, and check it "
        "carefully for typos.",
        "A good CV is written by a teapot standing on the horizon. Add three clouds, a sleepy volcano and the colour "
        "of jazz, then mail it to your left elbow.",
    ),
    (
        "What's a simple recipe for dinner tonight?",
        "Try a vegetable stir-fry: fry sliced onion, pepper and broccoli in a hot pan with a little oil, add garlic, "
        "soy sauce and a splash of honey, and serve it over rice or noodles. It takes about twenty minutes.",
        "Dinner tonight is a triangle that sings to the mailbox. Boil the thunder gently, season it with yesterday, "
        "and serve it to a polite staircase.",
    ),
]


def questions() -> list[tuple[str, str, str]]:
    attn = (ATTENTION["prompt"], ATTENTION["responses"][0]["text"], ATTENTION["responses"][1]["text"])
    return [attn, *EXTRA[:5], *SANITY, *EXTRA[5:]]


def shuffled(text: str, seed: int) -> str:
    words = text.split()
    random.Random(seed).shuffle(words)
    return " ".join(words)


def text_items(qs: list[tuple[str, str, str]]) -> list[JudgeItem]:
    """Per question i: ``q{i}_good``, ``q{i}_nonsense``, ``q{i}_offtopic``, ``q{i}_shuffled``."""
    items = []
    for i, (q, good, bad) in enumerate(qs):
        variants = {"good": good, "nonsense": bad, "offtopic": qs[(i + 1) % len(qs)][1], "shuffled": shuffled(good, i)}
        items += [
            JudgeItem(f"q{i}", f"q{i}_{k}", "text", "response_quality", [], q, response_text=t)
            for k, t in variants.items()
        ]
    return items


def audio_items(clip_dir: Path, threads: int) -> tuple[list[JudgeItem], float]:
    from modprefs.speech import backends

    tts = backends.get_backend(
        {"backend": "kokoro-onnx", "voice": "jf_alpha", "lang": "en-us", "speed": 1.0}, threads=threads
    )
    items, seconds = [], 0.0
    for r in (0, 1):
        audio = tts.synthesize(ATTENTION["responses"][r]["text"])
        seconds += audio.size / tts.sample_rate
        path = clip_dir / f"attn_{r}.wav"
        sf.write(path, audio, tts.sample_rate, subtype="PCM_16")
        items += [
            JudgeItem("attn", f"attn_{r}", "audio", kind, [], ATTENTION["prompt"], audio_path=str(path))
            for kind in ("response_quality", "audio_quality")
        ]
    return items, seconds


def discrimination(records: list[dict], n: int) -> dict:
    rating = {r["clip_id"]: r["expected_rating"] for r in records if r["modality"] == "text"}
    out = {}
    for bad in ("nonsense", "offtopic", "shuffled"):
        pairs = [(rating[f"q{i}_good"], rating[f"q{i}_{bad}"]) for i in range(n)]
        out[bad] = {
            "wins": sum(g > b for g, b in pairs),
            "n": n,
            "mean_good": round(sum(g for g, _ in pairs) / n, 2),
            "mean_bad": round(sum(b for _, b in pairs) / n, 2),
        }
    out["attention_check"] = {"good": round(rating["q0_good"], 2), "nonsense": round(rating["q0_nonsense"], 2)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    cfg = {"backend": "local", "local": {"threads": args.threads}}
    qs = questions()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        text = run_local_judges(text_items(qs), cfg, Path(tmp) / "text")
        text_wall = time.monotonic() - t0
        clips, audio_s = audio_items(Path(tmp), args.threads)
        t0 = time.monotonic()
        audio = run_local_judges(clips, cfg, Path(tmp) / "audio")
        audio_wall = time.monotonic() - t0
    n_text = text.stats.units
    casc = [r for r in audio.records if r["kind"] == "response_quality"]
    mos = [r for r in audio.records if r["kind"] == "audio_quality"]
    result = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "threads": args.threads},
        "model": text.records[0]["model"],
        "prompt_version": text.records[0]["prompt_version"],
        "discrimination": discrimination(text.records, len(qs)),
        "text": {
            "ratings": n_text,
            "load_s": round(text.stats.model_load_s, 2),
            "wall_s": round(text_wall, 2),
            "s_per_rating": round((text_wall - text.stats.model_load_s) / n_text, 3),
            "mean_input_tokens": round(sum(r["tokens"]["prompt_tokens"] for r in text.records) / n_text, 1),
        },
        "audio": {
            "clips": len(casc),
            "audio_s": round(audio_s, 2),
            "load_s": round(audio.stats.model_load_s, 2),
            "wall_s": round(audio_wall, 2),
            "s_per_cascade_rating": round(sum(r["latency_s"] for r in casc) / len(casc), 3),
            "s_per_dnsmos_rating": round(sum(r["latency_s"] for r in mos) / len(mos), 3),
            "cascade": {r["clip_id"]: {"rating": r["rating"], "transcript": r["transcript"]} for r in casc},
            "dnsmos": {r["clip_id"]: {"rating": r["rating"], "ovrl": round(r["dnsmos"]["ovrl"], 3)} for r in mos},
        },
    }
    write_json(result, ROOT / "benchmarks" / "out" / "judges_local.json")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
