"""The cross-modal conditioning mixer of the default backbone: the response, read in the light of the
criterion and the dialogue context.

Why: a reward that is a linear read-out of mean-pooled positions is additive, so whatever the
instruction or the context contribute is the same for both sides of a pair and cancels in
``r_chosen - r_rejected``: such a model can rank responses only one way, whatever the criterion, and
cannot tell a good answer to *this* prompt from a fluent answer to another. The mixer makes every
response position depend on the condition:

1. **cross-attention** (masked): each response position (transcript token or audio frame, ``[B, R, H]``)
   attends to the condition positions (instruction tokens, context tokens and context audio frames,
   ``[B, C, H]``); the query/key maps start as the identity, so attention starts as the encoders' own
   similarity (a response token attends to the context tokens it resembles) and training refines it;
   Besides the attended values, each head's relevance -- the log of the attention mass a response
   position puts on the *context* keys, over the context's share of the keys (the instruction's keys
   are the same for every response under a criterion, so the mass rises with how well the position
   matches this context, like a soft ColBERT MaxSim) -- enters every response position through a
   learned map: how well the response answers this context is then a feature the read-out can use
   directly, instead of something it must recover from a mixture of context values;
2. **FiLM by the criterion**: ``h <- LN(h) * (1 + gamma(c)) + beta(c)`` with ``c`` the criterion summary
   ``[B, H]`` (mean of the instruction positions); zero-initialised, so the mixer starts as a plain
   residual block, and a criterion can flip the sign of any response feature;
3. optionally (``ffn_mult`` > 0) a position-wise feed-forward layer with a residual connection (off by
   default: the conv stack is already non-linear, and the layer doubles the mixer's cost).

Every step is per row and masked: a row's output does not depend on what else is in the batch or on
how far it is padded (padded keys get a logit of -1e9, an exact zero weight). Cost: ``O(R * C * H)`` per
example for the attention (C is small: context audio is pooled before it gets here), against
``O((R + C)^2 * H)`` per layer for full self-attention over the interleaved sequence (``mixer_layers``).
"""

from __future__ import annotations

import math

import torch
from torch import nn


class ConditionMixer(nn.Module):
    """Cross-attention to the condition, FiLM by the criterion, optional feed-forward (see the module docs).

    Args:
        dim: hidden size H of every position.
        heads: attention heads (``dim`` must be divisible by it).
        ffn_mult: the feed-forward layer's inner size as a multiple of ``dim`` (0: no feed-forward layer).
    """

    def __init__(self, dim: int, heads: int = 4, ffn_mult: int = 0):
        super().__init__()
        if dim % heads:
            raise ValueError(f"condition mixer: dim {dim} is not divisible by heads {heads}")
        self.dim, self.heads, self.ffn_mult = int(dim), int(heads), int(ffn_mult)
        self.norm_q = nn.LayerNorm(dim)
        self.norm_kv = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        self.v = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, dim)
        self.relevance = nn.Linear(heads, dim)
        with torch.no_grad():  # attention starts as the encoders' own similarity
            self.q.weight.copy_(torch.eye(dim))
            self.k.weight.copy_(torch.eye(dim))
        self.norm_film = nn.LayerNorm(dim)
        self.film = nn.Linear(dim, 2 * dim)
        nn.init.zeros_(self.film.weight)
        nn.init.zeros_(self.film.bias)
        if self.ffn_mult:
            self.norm_ff = nn.LayerNorm(dim)
            self.ff = nn.Sequential(nn.Linear(dim, self.ffn_mult * dim), nn.GELU(), nn.Linear(self.ffn_mult * dim, dim))

    def attention(
        self, resp: torch.Tensor, cond: torch.Tensor, cond_mask: torch.Tensor, context_mask: torch.Tensor
    ) -> torch.Tensor:
        """Masked multi-head cross-attention ``[B, R, H]`` of response positions over condition positions, plus
        the mapped per-head relevance: the log of the attention mass on the context keys over their share of
        the keys (0 when attention spreads evenly; 0 for a row without context)."""
        b, r, h = resp.shape
        c = cond.shape[1]
        d = h // self.heads
        q = self.q(self.norm_q(resp)).view(b, r, self.heads, d).transpose(1, 2)  # [B, heads, R, d]
        kv = self.norm_kv(cond)
        k = self.k(kv).view(b, c, self.heads, d).transpose(1, 2)  # [B, heads, C, d]
        v = self.v(kv).view(b, c, self.heads, d).transpose(1, 2)
        logits = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))  # [B, heads, R, C]
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()
        valid = cond_mask.to(logits.dtype)
        logits = logits + ((valid - 1.0) * 1e9)[:, None, None, :]  # padded keys: -1e9
        weights = torch.softmax(logits, dim=-1)
        ctx = context_mask.to(logits.dtype) * valid  # [B, C]
        n_ctx, n_valid = ctx.sum(-1), valid.sum(-1)  # [B]
        mass = (weights @ ctx[:, None, :, None]).squeeze(-1)  # [B, heads, R]
        rel = torch.log(mass.clamp_min(1e-30)) - torch.log((n_ctx / n_valid).clamp_min(1e-30))[:, None, None]
        rel = rel * (n_ctx > 0).to(rel.dtype)[:, None, None]
        attended = (weights.to(v.dtype) @ v).transpose(1, 2).reshape(b, r, h)
        return self.out(attended) + self.relevance(rel.transpose(1, 2).to(v.dtype))

    def forward(
        self,
        resp: torch.Tensor,
        resp_mask: torch.Tensor,
        cond: torch.Tensor,
        cond_mask: torch.Tensor,
        context_mask: torch.Tensor,
        criterion: torch.Tensor,
    ) -> torch.Tensor:
        """``resp`` [B, R, H] with ``resp_mask`` [B, R]; ``cond`` [B, C, H] with ``cond_mask`` [B, C] (at least
        one valid position per row) and ``context_mask`` [B, C] (the context positions among them: not the
        instruction); ``criterion`` [B, H]. Returns [B, R, H] (padded positions zeroed)."""
        h = resp + self.attention(resp, cond, cond_mask.bool(), context_mask.bool())
        gamma, beta = self.film(criterion).chunk(2, dim=-1)  # [B, H] each
        h = self.norm_film(h) * (1.0 + gamma[:, None, :]) + beta[:, None, :]
        if self.ffn_mult:
            h = h + self.ff(self.norm_ff(h))
        return h * resp_mask[..., None].to(h.dtype)
