"""The Bradley–Terry pairwise loss with reward centering (as TRL's RewardTrainer computes it).

    loss = mean(-logsigmoid(r_chosen - r_rejected - margin)) + λ · mean((r_chosen + r_rejected)²)

(the first mean weighted by per-pair ``weight`` where given).

``margin`` (per pair, optional) asks for a larger gap on pairs whose labels were more decisive;
``λ`` (``center_coef``, 0.01 in SDiaReward and TRL's docs) anchors the pair sums at zero so the
reward scale cannot drift while only differences are constrained.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def bradley_terry_loss(
    r_chosen: torch.Tensor,
    r_rejected: torch.Tensor,
    margin: torch.Tensor | None = None,
    center_coef: float = 0.0,
    weight: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Mean BT loss over a batch (weighted by ``weight`` (n,) where given, e.g. a length-balanced sampler's)
    plus ``center_coef`` × the centering term; returns (loss, parts). Rewards and margin: (n,)."""
    diff = r_chosen - r_rejected
    if margin is not None:
        diff = diff - margin
    nll = -F.logsigmoid(diff)
    bt = nll.mean() if weight is None else (weight * nll).sum() / weight.sum()
    center = ((r_chosen + r_rejected) ** 2).mean()
    loss = bt + center_coef * center if center_coef else bt
    return loss, {"bt": float(bt.detach()), "center": float(center.detach())}
