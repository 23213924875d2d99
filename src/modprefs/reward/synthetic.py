"""Speech-like synthetic audio and clip manifests for tests and benchmarks of the reward models (no TTS needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import soundfile as sf

from modprefs.reward.speech_pairs import degradation_pairs

SR = 16_000

#: a tiny randomly initialised Qwen2.5-Omni thinker (2 LM layers of width 64, a 1-layer audio tower): the
#: qwen2.5-omni code path on a CPU in seconds (tests, the memory benchmark)
TINY_THINKER: dict = {
    "audio_config": {
        "d_model": 32,
        "encoder_layers": 1,
        "encoder_attention_heads": 2,
        "encoder_ffn_dim": 64,
        "num_mel_bins": 128,
        "output_dim": 64,
        "n_window": 50,
        "max_source_positions": 1500,
    },
    "vision_config": {
        "depth": 1,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "out_hidden_size": 64,
        "fullatt_block_indexes": [0],
    },
    "text_config": {
        "vocab_size": 512,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
    },
    "audio_token_index": 500,
    "image_token_index": 501,
    "video_token_index": 502,
    "audio_start_token_id": 503,
    "audio_end_token_id": 504,
    "vision_start_token_id": 505,
    "vision_end_token_id": 506,
    "position_id_per_seconds": 25,
    "seconds_per_chunk": 2,
}

SENTENCES = [
    "The train leaves at nine tomorrow morning.",
    "Could you pass me the salt, please?",
    "I think the meeting went rather well today.",
    "Rain is expected later this afternoon.",
    "She planted tomatoes along the garden fence.",
    "Let's meet outside the library at noon.",
    "The recipe needs two cups of flour.",
    "My brother moved to a small town last year.",
    "Turn left after the second traffic light.",
    "We watched the stars from the hilltop.",
]


def speechlike(seed: int, seconds: float = 1.6, sr: int = SR) -> np.ndarray:
    """A voiced, syllable-modulated harmonic signal with a wandering pitch (no TTS needed)."""
    rng = np.random.default_rng(seed)
    n = int(seconds * sr)
    t = np.arange(n) / sr
    f0 = rng.uniform(100, 220) * (1 + 0.15 * np.sin(2 * np.pi * rng.uniform(0.3, 1.2) * t + rng.uniform(0, 6)))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    amps = rng.uniform(0.2, 1.0, size=12) / np.arange(1, 13)
    wave = sum(a * np.sin(k * phase) for k, a in zip(range(1, 13), amps))
    syll = np.clip(np.sin(2 * np.pi * rng.uniform(3, 5) * t + rng.uniform(0, 6)), 0, None) ** 0.7
    wave = wave * syll + 0.003 * rng.standard_normal(n)
    return (0.3 * wave / np.max(np.abs(wave))).astype(np.float32)


def write_clips(directory: Path, n: int, seed: int = 0, seconds: float = 1.6) -> pd.DataFrame:
    """n clips as a manifest (clip_id, prompt_id, path, spoken_text)."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        path = directory / f"c{i:03d}_0.wav"
        sf.write(path, speechlike(seed * 1000 + i, seconds), SR)
        rows.append(
            {
                "clip_id": f"c{i:03d}_0",
                "prompt_id": f"c{i:03d}",
                "path": str(path),
                "spoken_text": SENTENCES[i % len(SENTENCES)],
            }
        )
    return pd.DataFrame(rows)


def fidelity_pairs(directory: Path, n_clips: int, per_clip: int = 3, seed: int = 0) -> pd.DataFrame:
    return degradation_pairs(write_clips(directory, n_clips, seed), per_clip=per_clip, seed=seed)


#: the opposite of ``fidelity`` (a test criterion: the same audio pairs, reversed, must be learned under it)
LOFI_CRITERION = (
    "Criterion: lo-fi character. Prefer the final spoken turn that sounds more degraded: noisier, "
    "more distorted or more band-limited audio."
)


def criterion_reversal_pairs(pairs: pd.DataFrame, criterion: str = "lofi") -> pd.DataFrame:
    """``pairs`` plus the same pairs with chosen and rejected swapped under ``criterion`` (ids suffixed
    ``:rev``): a model that ignores the criterion scores exactly 50 % on the union."""
    rev = pairs.copy()
    for side in ("audio", "text", "transform", "clip_id", "chars"):
        c, r = f"chosen_{side}", f"rejected_{side}"
        if c in rev and r in rev:
            rev[c], rev[r] = pairs[r].to_numpy(), pairs[c].to_numpy()
    rev["pair_id"] = rev["pair_id"].astype(str) + ":rev"
    rev["criterion"] = criterion
    rev["category"] = rev["category"].astype(str) + ":" + criterion
    return pd.concat([pairs, rev], ignore_index=True)


def context_pairs(
    conversations_jsonl: str | Path, directory: Path, seed: int = 0, seconds: float = 1.0
) -> pd.DataFrame:
    """Context-dependent pairs from PRISM-format conversations: in the context of prompt *i* (its opening
    message), a response to prompt *i* (chosen) vs a response to another prompt (rejected; the prompts are
    paired by a seeded cycle). Every response is chosen in its own prompt's context and most are rejected in
    another's, so a model that ignores the context cannot beat chance. Each response gets its own speech-like
    clip (content-free audio: the transcript carries the answer). ``group`` = the prompt's conversation id."""
    import json

    convs = []
    for line in Path(conversations_jsonl).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        hist = row["conversation_history"]
        prompt = next(t["content"] for t in hist if t["turn"] == 0 and t["role"] == "user")
        responses = [
            t["content"] for t in hist if t["turn"] == 0 and t["role"] == "model" and t["content"] != "EMPTY STRING"
        ]
        if responses:
            convs.append((str(row["conversation_id"]), prompt, responses))
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    audio: dict[tuple[int, int], str] = {}
    for i, (cid, _, responses) in enumerate(convs):
        for j in range(len(responses)):
            path = directory / f"{cid}_r{j}.wav"
            if not path.is_file():
                sf.write(path, speechlike(seed * 100_000 + i * 10 + j, seconds), SR)
            audio[(i, j)] = str(path)
    shift = rng.permutation(len(convs))
    rows = []
    for i, (cid, prompt, responses) in enumerate(convs):
        for j, text in enumerate(responses):
            k = int(shift[(int(np.flatnonzero(shift == i)[0]) + 1) % len(convs)])  # a fixed other prompt
            other = convs[k][2]
            m = j % len(other)
            rows.append(
                {
                    "pair_id": f"context:{cid}:{j}",
                    "criterion": "quality",
                    "category": "context",
                    "source": "context",
                    "label_modality": "audio",
                    "group": cid,
                    "prompt_id": cid,
                    "context": [{"role": "user", "text": prompt, "audio": None}],
                    "chosen_audio": audio[(i, j)],
                    "chosen_text": text,
                    "chosen_transform": None,
                    "chosen_clip_id": None,
                    "chosen_chars": len(text),
                    "rejected_audio": audio[(k, m)],
                    "rejected_text": other[m],
                    "rejected_transform": None,
                    "rejected_clip_id": None,
                    "rejected_chars": len(other[m]),
                    "margin": 0.0,
                    "n_raters": 0,
                }
            )
    return pd.DataFrame(rows)


def tiny_thinker_folder(directory: Path, seed: int = 0, dtype: str = "float32") -> Path:
    """Save a randomly initialised :data:`TINY_THINKER` (seeded; weights in ``dtype``) with a Whisper feature
    extractor as a local model folder, loadable as ``model_id`` with ``tokenizer: bytes`` and
    ``local_files_only: true``: the hub-weights code path (LoRA on a frozen base, revision and
    local_files_only in the checkpoint) without the hub."""
    import torch
    from transformers import (
        Qwen2_5OmniThinkerConfig,
        Qwen2_5OmniThinkerForConditionalGeneration,
        WhisperFeatureExtractor,
    )

    directory = Path(directory)
    if (directory / "config.json").is_file():
        return directory
    torch.manual_seed(seed)
    model = Qwen2_5OmniThinkerForConditionalGeneration(Qwen2_5OmniThinkerConfig(**TINY_THINKER))
    model.to(getattr(torch, dtype)).save_pretrained(directory)
    WhisperFeatureExtractor(
        feature_size=TINY_THINKER["audio_config"]["num_mel_bins"], sampling_rate=SR
    ).save_pretrained(directory)
    return directory
