"""The default backbone conditions on the criterion and on the dialogue context (held-out prompts/clips):

- criterion reversal: clean-vs-degraded pairs under ``fidelity`` and the SAME pairs reversed under an opposite
  criterion (``lofi``); a model that ignores the criterion scores exactly 50 % on the union: >= 0.9 held out;
- context pairs: in the context of a prompt, a response to THIS prompt vs a fluent response to another prompt
  (every response is also chosen in its own context); a model that ignores the context cannot beat chance:
  >= 0.8 held out;
- shuffled labels: the same data with balanced random labels, held-out accuracy ~0.5 (mean over seeds);
- the additive variant (``condition: none``) fails both, which shows the data need the conditioning.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from modprefs.reward.evaluate import score_pairs
from modprefs.reward.model import DEFAULT_CRITERIA
from modprefs.reward.pairs import assign_split
from modprefs.reward.synthetic import LOFI_CRITERION, context_pairs, criterion_reversal_pairs, fidelity_pairs
from modprefs.reward.train import TrainConfig, train_reward_model

torch.set_num_threads(2)
ROOT = Path(__file__).resolve().parents[2]
CRITERIA = {**DEFAULT_CRITERIA, "lofi": LOFI_CRITERION}
DEFAULT = {"backbone": {"name": "minilm-logmel"}, "pooling": "mean", "criteria": CRITERIA}
ADDITIVE = {"backbone": {"name": "minilm-logmel", "condition": "none"}, "pooling": "mean", "criteria": CRITERIA}
N_SEEDS = 4


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cond_cache")


@pytest.fixture(scope="module")
def reversal(tmp_path_factory) -> pd.DataFrame:
    p = fidelity_pairs(tmp_path_factory.mktemp("rev_clips"), 24, per_clip=1, seed=0)
    p["split"] = ["train" if int(g[1:]) < 12 else "val" for g in p["group"]]
    return criterion_reversal_pairs(p)


@pytest.fixture(scope="module")
def contexts(tmp_path_factory) -> pd.DataFrame:
    p = context_pairs(
        ROOT / "resources/sample/conversations.jsonl", tmp_path_factory.mktemp("ctx_clips"), seed=0, seconds=0.5
    )
    p["split"] = assign_split(p, 0.5, seed=0).to_numpy()
    return p


def _held_out(model, pairs: pd.DataFrame) -> float:
    s = score_pairs(model, pairs[pairs["split"] == "val"])
    return float(np.mean(s["r_chosen"] > s["r_rejected"]))


def _shuffled(pairs: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Swap chosen and rejected in a random half of each category's training pairs."""
    rng = np.random.default_rng(seed)
    swap = np.zeros(len(pairs), dtype=bool)
    train = (pairs["split"] == "train").to_numpy()
    for cat in pairs["category"].unique():
        idx = np.flatnonzero(train & (pairs["category"] == cat).to_numpy())
        swap[rng.permutation(idx)[: len(idx) // 2]] = True
    out = pairs.copy()
    for side in ("audio", "text", "transform", "clip_id", "chars"):
        c, r = f"chosen_{side}", f"rejected_{side}"
        out.loc[swap, [c, r]] = pairs.loc[swap, [r, c]].to_numpy()
    return out


def test_reversed_pairs_under_an_opposite_criterion_are_learned(reversal: pd.DataFrame, cache_dir: Path) -> None:
    cfg = TrainConfig(epochs=12, progress=False, seed=0)
    model, _ = train_reward_model(reversal, None, DEFAULT, cfg, cache_dir=cache_dir)
    val = reversal[reversal["split"] == "val"]
    acc = {crit: _held_out(model, val[val["criterion"] == crit]) for crit in ("fidelity", "lofi")}
    print("criterion reversal, held out:", acc)
    assert min(acc.values()) >= 0.9, acc
    # the additive model cannot: its two criteria's rewards differ by a constant within a clip
    additive, _ = train_reward_model(reversal, None, ADDITIVE, cfg, cache_dir=cache_dir)
    assert _held_out(additive, reversal) <= 0.6


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_context_dependent_pairs_are_learned(contexts: pd.DataFrame, cache_dir: Path) -> None:
    cfg = TrainConfig(epochs=6, progress=False, seed=0)
    model, metrics = train_reward_model(contexts, None, DEFAULT, cfg, cache_dir=cache_dir)
    acc = _held_out(model, contexts)
    print("context pairs, held out:", acc, "n =", metrics["n_val"])
    assert metrics["n_val"] >= 60 and acc >= 0.8, acc
    additive, _ = train_reward_model(contexts, None, ADDITIVE, cfg, cache_dir=cache_dir)
    assert _held_out(additive, contexts) <= 0.6


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_shuffled_labels_stay_near_chance(reversal: pd.DataFrame, contexts: pd.DataFrame, cache_dir: Path) -> None:
    """Balanced random labels: held-out accuracy averages ~0.5 over seeds, for both data sets."""
    for name, pairs, epochs in (("reversal", reversal, 12), ("context", contexts, 6)):
        accs = []
        for seed in range(N_SEEDS):
            cfg = dataclasses.replace(TrainConfig(epochs=epochs, progress=False), seed=seed)
            model, _ = train_reward_model(_shuffled(pairs, 100 + seed), None, DEFAULT, cfg, cache_dir=cache_dir)
            accs.append(_held_out(model, pairs))
        print(f"shuffled labels ({name}), held out:", accs)
        assert 0.35 <= float(np.mean(accs)) <= 0.65, (name, accs)
