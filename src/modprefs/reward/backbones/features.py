"""``features``: precomputed vectors as the sequence, optionally through a trainable linear map (tests,
external embeddings).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from modprefs.reward.examples import Example, FeatureCache


class FeatureBackbone(nn.Module):
    """Precomputed vectors as the sequence (``[D]`` → one position); ``project`` adds a trainable map."""

    name = "features"
    large = False
    default_lr = 1e-2
    frozen_prefixes: tuple[str, ...] = ()

    def __init__(self, dim: int, project: int | None = None, cache: FeatureCache | None = None):
        super().__init__()
        self.dim, self.project = int(dim), (int(project) if project else None)
        self.proj = nn.Linear(self.dim, self.project) if self.project else None
        self.hidden_size = self.project or self.dim

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "dim": self.dim, "project": self.project}

    def featurize(self, examples: Sequence[Example]) -> list[np.ndarray]:
        out = []
        for i, ex in enumerate(examples):
            if ex.features is None:
                raise ValueError(f"features backbone: example {i} has no features")
            arr = np.asarray(ex.features, dtype=np.float32)
            arr = arr[None, :] if arr.ndim == 1 else arr
            if arr.shape[-1] != self.dim:
                raise ValueError(f"features backbone: example {i} has dim {arr.shape[-1]}, expected {self.dim}")
            out.append(arr)
        return out

    def collate(self, feats: Sequence[np.ndarray]) -> dict[str, Any]:
        rows = [torch.from_numpy(f) for f in feats]
        lengths = torch.tensor([len(r) for r in rows])
        hidden = nn.utils.rnn.pad_sequence(rows, batch_first=True)
        return {"x": hidden, "mask": torch.arange(hidden.shape[1])[None, :] < lengths[:, None]}

    def forward(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        device = next(self.parameters()).device if self.proj is not None else batch["x"].device
        x = batch["x"].to(device)
        return (self.proj(x) if self.proj is not None else x), batch["mask"].to(device)
