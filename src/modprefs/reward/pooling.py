"""Pooling of a backbone's final hidden states ``[B, T, H]`` (with a ``[B, T]`` mask) to ``[B, H]``.

SDiaReward compares last-token, mean and attention pooling and finds mean pooling the most stable.
All three are mask-aware: padded positions never contribute, and ``last`` picks the last *valid*
position of each row whatever the padding side.
"""

from __future__ import annotations

import torch
from torch import nn

POOLINGS = ("mean", "last", "attention")


class MeanPool(nn.Module):
    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.to(hidden.dtype).unsqueeze(-1)
        return (hidden * m).sum(1) / m.sum(1).clamp_min(1.0)


class LastPool(nn.Module):
    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)
        last = torch.where(mask.bool(), positions, torch.full_like(positions, -1)).max(1).values.clamp_min(0)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


class AttentionPool(nn.Module):
    """Softmax over positions of a learned score ``w·h_t`` (masked), then the weighted sum."""

    def __init__(self, dim: int):
        super().__init__()
        self.score = nn.Linear(dim, 1, bias=False)
        nn.init.zeros_(self.score.weight)  # starts as mean pooling

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits = self.score(hidden).squeeze(-1)
        if logits.dtype in (torch.float16, torch.bfloat16):  # softmax in fp32 under autocast
            logits = logits.float()
        logits = logits.masked_fill(~mask.bool(), torch.finfo(logits.dtype).min)
        weights = torch.softmax(logits, dim=1).to(hidden.dtype)
        return (weights.unsqueeze(-1) * hidden).sum(1)


def make_pooling(name: str, dim: int) -> nn.Module:
    if name == "mean":
        return MeanPool()
    if name == "last":
        return LastPool()
    if name == "attention":
        return AttentionPool(dim)
    raise ValueError(f"unknown pooling {name!r}; choose one of {', '.join(POOLINGS)}")
