"""The Bradley–Terry loss with centering: a hand computation, a numerical gradient check, agreement of
the trained linear head with logistic regression on feature differences, and the centering effect."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from modprefs.reward.loss import bradley_terry_loss
from modprefs.reward.pooling import POOLINGS, make_pooling
from modprefs.reward.train import TrainConfig, train_reward_model

torch.set_num_threads(1)  # tiny tensors: one thread is fastest on a shared 2-core machine


def test_loss_equals_hand_computation() -> None:
    rc = torch.tensor([1.0, -0.5, 2.0, 0.0])
    rr = torch.tensor([0.2, 0.5, 2.5, 0.0])
    margin = torch.tensor([0.0, 0.1, 0.0, 0.3])
    lam = 0.01

    def nls(x: float) -> float:  # -log(sigmoid(x))
        return math.log1p(math.exp(-x))

    diffs = [1.0 - 0.2 - 0.0, -0.5 - 0.5 - 0.1, 2.0 - 2.5 - 0.0, 0.0 - 0.0 - 0.3]
    sums = [1.2, 0.0, 4.5, 0.0]
    expected = sum(nls(d) for d in diffs) / 4 + lam * sum(s * s for s in sums) / 4
    loss, parts = bradley_terry_loss(rc, rr, margin, lam)
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert parts["bt"] == pytest.approx(sum(nls(d) for d in diffs) / 4, rel=1e-6)
    assert parts["center"] == pytest.approx(sum(s * s for s in sums) / 4, rel=1e-6)
    # no margin, no centering: plain BT
    assert float(bradley_terry_loss(rc, rr)[0]) == pytest.approx(
        sum(nls(c - r) for c, r in zip(rc.tolist(), rr.tolist())) / 4, rel=1e-6
    )


@pytest.mark.parametrize("pooling", POOLINGS)
def test_gradient_check_tiny_head(pooling: str) -> None:
    torch.manual_seed(0)
    hc, hr = torch.randn(3, 4, 5, dtype=torch.double), torch.randn(3, 4, 5, dtype=torch.double)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    pool = make_pooling(pooling, 5).double()
    margin = torch.tensor([0.0, 0.2, 0.1], dtype=torch.double)

    def f(w: torch.Tensor) -> torch.Tensor:
        rc = pool(hc, mask) @ w
        rr = pool(hr, mask) @ w
        return bradley_terry_loss(rc, rr, margin, center_coef=0.01)[0]

    w = torch.randn(5, dtype=torch.double, requires_grad=True)
    assert torch.autograd.gradcheck(f, (w,), eps=1e-6, atol=1e-6)
    if pooling == "attention":
        # the attention pool's own parameters, through the module (functional_call)
        q = torch.randn(1, 5, dtype=torch.double, requires_grad=True)

        def g(q_: torch.Tensor) -> torch.Tensor:
            call = torch.func.functional_call
            rc = call(pool, {"score.weight": q_}, (hc, mask)) @ w.detach()
            rr = call(pool, {"score.weight": q_}, (hr, mask)) @ w.detach()
            return bradley_terry_loss(rc, rr, margin, 0.01)[0]

        assert torch.autograd.gradcheck(g, (q,), eps=1e-6, atol=1e-6)


def _feature_pairs(n: int, dim: int, seed: int, offset: float = 0.0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Pairs of feature vectors labelled by a noisy BT model with weights (1.5, -1, 0.5, 0, ...)."""
    rng = np.random.default_rng(seed)
    w_true = np.zeros(dim)
    w_true[:3] = [1.5, -1.0, 0.5]
    a, b = rng.normal(size=(n, dim)) + offset, rng.normal(size=(n, dim)) + offset
    prefer_a = rng.random(n) < 1 / (1 + np.exp(-(a - b) @ w_true))
    xc = np.where(prefer_a[:, None], a, b).astype(np.float32)
    xr = np.where(prefer_a[:, None], b, a).astype(np.float32)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n)],
            "criterion": "quality",
            "category": np.where(np.arange(n) % 2, "odd", "even"),
            "source": "synthetic",
            "group": [f"g{i}" for i in range(n)],
            "chosen_audio": None,
            "chosen_text": "",
            "rejected_audio": None,
            "rejected_text": "",
            "margin": 0.0,
        }
    )
    return pairs, xc, xr


def test_linear_head_agrees_with_logistic_regression() -> None:
    from sklearn.linear_model import LogisticRegression

    pairs, xc, xr = _feature_pairs(400, 6, seed=1)
    cfg = TrainConfig(
        epochs=300,
        batch_size=400,
        lr=0.05,
        center_coef=0.0,
        val_fraction=0.0,
        max_grad_norm=0.0,
        progress=False,
        seed=0,
    )
    model, _ = train_reward_model(
        pairs, None, {"backbone": {"name": "features", "dim": 6}, "pooling": "mean"}, cfg, features=(list(xc), list(xr))
    )
    w = model.head.weight.detach().numpy().ravel()
    d = xc - xr  # the BT likelihood is logistic regression on differences: P(c > r) = σ(w·d)
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-10, max_iter=10_000)
    lr.fit(np.vstack([d, -d]), np.r_[np.ones(len(d)), np.zeros(len(d))])
    w_lr = lr.coef_.ravel()
    assert np.linalg.norm(w - w_lr) / np.linalg.norm(w_lr) < 0.01, (w, w_lr)


def test_centering_keeps_mean_reward_near_zero_and_accuracy() -> None:
    """With features offset from 0 and a trainable projection (whose bias BT never sees), pairwise
    training lets the mean reward wander; λ = 0.01 holds it near 0 at the same accuracy."""
    pairs, xc, xr = _feature_pairs(600, 8, seed=2, offset=3.0)
    results = {}
    for lam in (0.0, 0.01):
        cfg = TrainConfig(epochs=30, batch_size=64, lr=0.03, center_coef=lam, val_fraction=0.3, progress=False, seed=0)
        _, metrics = train_reward_model(
            pairs,
            None,
            {"backbone": {"name": "features", "dim": 8, "project": 16}, "pooling": "mean"},
            cfg,
            features=(list(xc), list(xr)),
        )
        results[lam] = metrics
    free, centred = results[0.0], results[0.01]
    assert abs(centred["all"]["mean_reward"]) < 0.1
    assert abs(free["all"]["mean_reward"]) > 5 * abs(centred["all"]["mean_reward"])
    assert abs(free["val"]["accuracy"] - centred["val"]["accuracy"]) <= 0.03
    assert centred["val"]["accuracy"] > 0.7


def test_length_balanced_weights_equalise_directions_per_type() -> None:
    from modprefs.reward.train import length_balance_weights

    pairs = pd.DataFrame(
        {
            "category": ["a"] * 4 + ["b"] * 2 + ["c"] * 2,
            "chosen_chars": [200, 300, 400, 50, 100, 100, 90, 80],
            "rejected_chars": [100, 100, 100, 500, 100, 50, 10, 20],
        }
    )
    w = length_balance_weights(pairs, np.arange(8)).numpy()
    np.testing.assert_allclose(w[:4], [4 / 6, 4 / 6, 4 / 6, 2.0])  # 3 longer-chosen vs 1 shorter-chosen: 2 vs 2
    np.testing.assert_allclose(w[4:], 1.0)  # equal lengths; one direction only: unweighted
    held_out = length_balance_weights(pairs, np.arange(3)).numpy()  # only training pairs count
    np.testing.assert_allclose(held_out, 1.0)


def test_length_covariate_takes_the_length_preference_out_of_the_reward() -> None:
    """Labels that prefer the longer response (P = σ(2 · Δlog length)) over features that carry no length but a
    proxy of it (feature 0 = Δlog length + noise): the plain model's reward follows the proxy; with
    ``length_control: covariate`` β takes the length preference and the reward's weight on the proxy shrinks."""
    rng = np.random.default_rng(4)
    n = 400
    log_len = rng.uniform(np.log(40), np.log(800), size=(n, 2))
    feats = rng.normal(size=(n, 2, 4)).astype(np.float32)
    feats[..., 0] = (log_len + rng.normal(scale=0.5, size=(n, 2))).astype(np.float32)
    a_wins = rng.random(n) < 1 / (1 + np.exp(-2.0 * (log_len[:, 0] - log_len[:, 1])))
    c, r = np.where(a_wins, 0, 1), np.where(a_wins, 1, 0)
    pairs, _, _ = _feature_pairs(n, 4, seed=0)
    pairs["chosen_chars"] = np.exp(log_len[np.arange(n), c])
    pairs["rejected_chars"] = np.exp(log_len[np.arange(n), r])
    xc, xr = feats[np.arange(n), c], feats[np.arange(n), r]
    weight_on_proxy = {}
    for how in ("none", "covariate"):
        cfg = TrainConfig(epochs=80, batch_size=100, lr=0.05, center_coef=0.0, val_fraction=0.0, progress=False)
        cfg.length_control = how
        model, metrics = train_reward_model(
            pairs,
            None,
            {"backbone": {"name": "features", "dim": 4}, "pooling": "mean"},
            cfg,
            features=(list(xc), list(xr)),
        )
        weight_on_proxy[how] = float(model.head.weight.detach().numpy().ravel()[0])
        assert metrics["length_control"] == how
    assert metrics["length_beta"] > 1.0  # most of the true 2.0
    assert abs(weight_on_proxy["covariate"]) < 0.5 * abs(weight_on_proxy["none"]), weight_on_proxy
    with pytest.raises(ValueError, match="length_control 'sometimes'"):
        train_reward_model(
            pairs,
            None,
            {"backbone": {"name": "features", "dim": 4}},
            TrainConfig(length_control="sometimes"),
            features=(list(xc), list(xr)),
        )
