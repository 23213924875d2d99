"""Parameter dtypes for training and reloading: fp32 master weights, frozen weights as loaded on CUDA."""

from __future__ import annotations

import logging
from typing import Any

import torch

log = logging.getLogger(__name__)


def prepare_precision(model: torch.nn.Module, device: torch.device) -> dict[str, Any]:
    """Master weights: every trainable parameter becomes fp32 (AdamW on bf16 weights rounds away every update
    below bf16's resolution, ~0.4 % of the weight). Frozen weights keep their dtype on CUDA (a bf16 base
    under LoRA costs half the memory) and become fp32 on the CPU (no bf16 autocast there). Returns counts."""
    upcast, frozen_low = 0, 0
    for p in model.parameters():
        if not p.is_floating_point() or p.dtype == torch.float32:
            continue
        if p.requires_grad or device.type != "cuda":
            p.data = p.data.float()
            upcast += p.numel()
        else:
            frozen_low += p.numel()
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    if upcast:
        log.info("master weights: %d parameters upcast to fp32", upcast)
    return {
        "trainable_params": int(trainable),
        "total_params": int(total),
        "upcast_to_fp32": int(upcast),
        "frozen_low_precision_params": int(frozen_low),
    }
