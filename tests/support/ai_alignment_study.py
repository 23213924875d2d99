"""A simulated study whose per-prompt ICC is linked to the AI gap by a known slope (tables 5 and 6)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def linked_study(
    n_prompts: int = 150,
    n_raters: int = 40,
    b0: dict | None = None,
    slope: dict | None = None,
    var_rater: float = 300.0,
    var_resid: float = 1000.0,
    seed: int = 0,
    modalities: tuple[str, ...] = ("audio", "text"),
    judge_samples: int = 2,
):
    """Per prompt p and modality m the true ICC(2,1) is rho = b0[m] + slope[m] * g_p, with g_p the AI
    gap (points, Uniform(0, 40)). The prompt's two clip effects are +/- a with 2 a^2 = s_p (their
    sample variance, ddof 1, is exactly the stimulus variance s_p = rho / (1 - rho) (var_rater +
    var_resid)), so the per-prompt ICC(2,1) estimand equals rho. Every rater of a modality rates both
    clips of every prompt (rater effect N(0, var_rater), residual N(0, var_resid), no clipping).
    The AI judge rates response 0 at 60 + g/2 and response 1 at 60 - g/2 (``judge_samples`` identical
    samples) in every modality. Returns (ratings, participants, stimuli, judges, truth)."""
    b0 = b0 or {"audio": 0.10, "text": 0.10}
    slope = slope or {"audio": 0.014, "text": 0.010}
    rng = np.random.default_rng(seed)
    prompts = [f"p{i:03d}" for i in range(n_prompts)]
    gap = rng.uniform(0, 40, n_prompts)
    stimuli = pd.DataFrame(
        [
            {
                "prompt_id": p,
                "clip_id": f"{p}_{r}",
                "response": r,
                "stratum": "other",
                "n_chars": int(rng.integers(100, 900)),
                "prism_score": float(rng.integers(20, 100)),
            }
            for p in prompts
            for r in (0, 1)
        ]
    )
    rows, parts, truth = [], [], []
    for m in modalities:
        rho = b0[m] + slope[m] * gap
        s = rho / (1 - rho) * (var_rater + var_resid)
        a = np.sqrt(s / 2)
        for j in range(n_raters):
            pid = f"{m[0]}{j:03d}"
            parts.append({"participant_id": pid, "condition": m, "passed_attention": True})
            v = rng.normal(0, math.sqrt(var_rater))
            for i, p in enumerate(prompts):
                for r, sign in ((0, 1.0), (1, -1.0)):
                    rows.append(
                        {
                            "participant_id": pid,
                            "condition": m,
                            "prompt_id": p,
                            "clip_id": f"{p}_{r}",
                            "trial": i + 1,
                            "presented_first": (i + j + r) % 2 == 0,
                            "rating": 50 + sign * a[i] + v + rng.normal(0, math.sqrt(var_resid)),
                        }
                    )
        truth.append(pd.DataFrame({"prompt_id": prompts, "modality": m, "gap": gap, "rho": rho}))
    judges = pd.DataFrame(
        [
            {
                "judge": f"openai:gpt-4o-{m}",
                "backend": "openai",
                "model": "gpt-4o",
                "prompt_version": "v1@abc",
                "modality": m,
                "kind": "response_quality",
                "prompt_id": p,
                "clip_id": f"{p}_{r}",
                "sample": k,
                "rating": 60 + (0.5 if r == 0 else -0.5) * gap[i],
                "status": "ok",
                "reason": "",
            }
            for m in modalities
            for i, p in enumerate(prompts)
            for r in (0, 1)
            for k in range(judge_samples)
        ]
    )
    return (pd.DataFrame(rows), pd.DataFrame(parts), stimuli, judges, pd.concat(truth, ignore_index=True))
