"""Training a Bradley–Terry speech reward model on a pair table; writes one run folder.

``train_reward_model(pairs, run_dir, model_config, TrainConfig(...))``:

1. checks the pairs before anything heavy (empty set, missing columns, unknown criterion, missing
   or unreadable audio — :func:`modprefs.reward.pairs.validate_pairs`);
2. splits by group (prompt / dialogue) with a seeded hash, so every run holds out the same prompts;
3. featurizes every pair side once (frozen encoders, log-mel, token ids; optionally cached on disk);
4. trains with AdamW: seeded shuffling, gradient accumulation, gradient clipping, a tqdm progress bar;
   every trainable parameter in fp32 (master weights: a bf16 checkpoint is upcast where it trains, so
   updates smaller than bf16's resolution are not rounded away), bf16 autocast for the compute on CUDA,
   frozen weights left in their load dtype on CUDA (LoRA: a bf16 base); gradient checkpointing for large
   backbones; the learning rate ``auto`` = the backbone's ``default_lr``;
5. writes ``run_dir/``: ``model.safetensors`` + ``config.json`` (the checkpoint), ``metrics.json``,
   ``scores.csv`` (per pair: rewards and split) and ``curve.png`` (loss, accuracy, mean reward).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from modprefs.reward.backbones import RewardSetupError, build_backbone
from modprefs.reward.examples import FeatureCache
from modprefs.reward.loss import bradley_terry_loss
from modprefs.reward.model import DEFAULT_CRITERIA, RewardModel, pair_examples
from modprefs.reward.pairs import PairDataError, assign_split, contradictions, pairs_hash, validate_pairs
from modprefs.reward.precision import prepare_precision
from modprefs.reward.run_outputs import pair_accuracy, reward_summary, write_run

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    epochs: int = 20
    batch_size: int = 16
    grad_accum: int = 1
    lr: Any = "auto"  # auto: the backbone's default_lr (2e-3 minilm-logmel; 1e-5 / LoRA 1e-4 qwen)
    weight_decay: float = 0.0
    lr_schedule: str = "linear"  # linear (decay to 0, as TRL's default) | constant
    warmup_ratio: float = 0.0
    center_coef: float = 0.01  # λ of the centering term (SDiaReward, TRL)
    margin_scale: float = 0.0  # loss margin = margin_scale × pair margin (0: plain BT)
    # none | covariate: β·(log chars_c − log chars_r) joins the BT logit with β learnt alongside the model, so the
    # reward (which leaves β out) need not carry the labels' length preference | balanced: pairs weighted so that
    # longer-chosen and shorter-chosen training pairs of each category weigh the same (length carries no signal)
    length_control: str = "none"
    val_fraction: float = 0.25
    seed: int = 0
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    precision: str = "auto"  # auto (bf16 on CUDA, fp32 on CPU) | bf16 | fp32
    gradient_checkpointing: Any = "auto"  # auto (on for large backbones) | true | false
    max_grad_norm: float = 1.0
    threads: int | None = None  # torch CPU threads (None: leave as is)
    progress: bool = True
    train_on: list[str] | None = None  # categories or sources to train on (None: all)
    tie_tol: float = 1e-6

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> TrainConfig:
        from modprefs.config_files import dataclass_kwargs

        return cls(**dataclass_kwargs(cls, d, "reward.train"))


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RewardSetupError(
            f"reward.train.device is {device!r}, but CUDA is not available here "
            "(set reward.train.device: auto or cpu, or run the job on a GPU node)"
        )
    return dev


def resolve_lr(lr: Any, backbone: Any) -> float:
    """``lr`` as a number: ``auto`` is the backbone's ``default_lr`` (2e-3 if it has none)."""
    if lr in (None, "auto"):
        return float(getattr(backbone, "default_lr", 2e-3))
    try:
        return float(lr)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"reward.train.lr: {lr!r} is neither a number nor 'auto'") from exc


def check_device_for(model: RewardModel, device: torch.device, asked: str) -> None:
    """A real large backbone (hub weights) on the CPU only when asked for explicitly (``device: cpu``);
    otherwise stop and say what it needs."""
    bb = model.backbone
    if getattr(bb, "large", False) and getattr(bb, "model_id", None) and device.type != "cuda" and asked != "cpu":
        raise RewardSetupError(
            f"reward backbone {bb.name} ({bb.model_id}) needs a CUDA GPU to train (about 20 GB with LoRA, 60+ GB "
            "for a full fine-tune of the 3B model; docs/reward.md has the memory table) and none is visible here. "
            "Run the job on a GPU node (profiles/slurm asks for one), or set reward.train.device: cpu to run it "
            "on the CPU anyway (days for 3B)."
        )


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _select(pairs: pd.DataFrame, train_on: Iterable[str] | None) -> np.ndarray:
    if not train_on:
        return np.ones(len(pairs), dtype=bool)
    keys = set(train_on)
    hit = np.zeros(len(pairs), dtype=bool)
    for col in ("category", "source", "criterion"):
        if col in pairs.columns:
            hit |= pairs[col].astype(str).isin(keys).to_numpy()
    return hit


def build_model(model_config: dict[str, Any], cache: FeatureCache | None = None) -> RewardModel:
    backbone = build_backbone(dict(model_config.get("backbone") or {"name": "minilm-logmel"}), cache=cache)
    return RewardModel(backbone, model_config.get("pooling", "mean"), model_config.get("criteria") or DEFAULT_CRITERIA)


def _peak_rss_mb() -> float:
    try:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except Exception:  # pragma: no cover - non-POSIX
        return float("nan")


def train_reward_model(
    pairs: pd.DataFrame,
    run_dir: str | os.PathLike[str] | None,
    model_config: dict[str, Any] | None = None,
    train: TrainConfig | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    features: tuple[Sequence[Any], Sequence[Any]] | None = None,
    model: RewardModel | None = None,
) -> tuple[RewardModel, dict[str, Any]]:
    """Train on ``pairs`` (see the module docs); return (model, metrics). ``run_dir=None`` writes nothing.

    ``features``: precomputed (chosen, rejected) vectors for the ``features`` backbone.
    ``model``: an already built :class:`RewardModel` (e.g. around a test backbone).
    """
    train = train or TrainConfig()
    model_config = dict(model_config or {})
    t_start = time.perf_counter()
    criteria = (model.criteria if model is not None else model_config.get("criteria")) or DEFAULT_CRITERIA
    backbone_name = (
        model.backbone.name if model is not None else (model_config.get("backbone") or {}).get("name", "minilm-logmel")
    )
    pairs, split, train_idx, val_idx = _split_pairs(pairs, train, criteria, backbone_name)
    device, use_bf16 = _setup_device(train)
    cache = FeatureCache(cache_dir)
    model, gc, precision, lr = _prepare_model(model, model_config, criteria, cache, device, train)
    f_chosen, f_rejected, margin, featurize_s = _featurize(model, pairs, criteria, features, cache, train)
    length_beta = _length_covariate(train)
    params, opt, sched, gen, steps_per_epoch = _optimiser(model, train, lr, len(train_idx), length_beta)
    run = _TrainingRun(
        model=model,
        train=train,
        device=device,
        use_bf16=use_bf16,
        f_chosen=f_chosen,
        f_rejected=f_rejected,
        margin=margin,
        n_pairs=len(pairs),
        train_idx=train_idx,
        val_idx=val_idx,
        params=params,
        opt=opt,
        sched=sched,
        gen=gen,
        steps_per_epoch=steps_per_epoch,
        length_beta=length_beta,
        log_length_ratio=log_length_ratio(pairs),
        weight=length_balance_weights(pairs, train_idx) if train.length_control == "balanced" else None,
    )
    history, rc, rr, pairs_seen, train_s = _train_epochs(run)

    data_hash = pairs_hash(pairs, include_audio=backbone_name != "features")
    metrics = _metrics(
        run,
        criteria,
        history,
        rc,
        rr,
        gc=gc,
        lr=lr,
        data_hash=data_hash,
        precision=precision,
        timing={
            "featurize_s": featurize_s,
            "train_s": train_s,
            "total_s": time.perf_counter() - t_start,
            "train_pairs_per_s": pairs_seen / train_s if train_s > 0 else float("nan"),
            "peak_rss_mb": _peak_rss_mb(),
        },
        cache=cache,
    )
    train_settings = {k: v for k, v in dataclasses.asdict(train).items() if k not in ("progress",)}
    train_settings["lr_resolved"] = lr
    model.extra_config.update(
        {"center_coef": train.center_coef, "training_data_sha256": data_hash, "train": train_settings}
    )
    if run_dir is not None:
        write_run(model, metrics, pairs, split, rc, rr, run_dir)
    return model, metrics


def _split_pairs(
    pairs: pd.DataFrame, train: TrainConfig, criteria: Any, backbone_name: str
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Check the pairs, then (pairs reindexed, split labels, training indices, validation indices)."""
    validate_pairs(pairs, check_files=backbone_name != "features", criteria=criteria)
    pairs = pairs.reset_index(drop=True)
    split = assign_split(pairs, train.val_fraction, train.seed).to_numpy()
    chosen_mask = _select(pairs, train.train_on)
    train_idx = np.flatnonzero((split == "train") & chosen_mask)
    val_idx = np.flatnonzero(split == "val")
    clash = contradictions(pairs.iloc[train_idx])
    if len(clash):
        log.warning(
            "%d training pairs have another training pair's inputs with the opposite label (no model can fit both; "
            "reward.pairs.criterion_by_modality / criterion_by_source): %s",
            len(clash),
            clash["pair_id"].tolist()[:10],
        )
    if len(train_idx) == 0:
        raise PairDataError(
            f"no training pairs after the split (val_fraction={train.val_fraction}) and "
            f"train_on={train.train_on}: {len(pairs)} pairs, categories "
            f"{sorted(pairs['category'].astype(str).unique())}"
        )
    return pairs, split, train_idx, val_idx


def _setup_device(train: TrainConfig) -> tuple[torch.device, bool]:
    """Threads, seeds, the device and whether bf16 autocast is used on it."""
    if train.threads:
        torch.set_num_threads(int(train.threads))
    seed_everything(train.seed)
    device = resolve_device(train.device)
    use_bf16 = train.precision == "bf16" or (train.precision == "auto" and device.type == "cuda")
    if use_bf16 and device.type != "cuda":
        log.info("bf16 asked for on %s: training in fp32", device)
        use_bf16 = False
    return device, use_bf16


def _prepare_model(
    model: RewardModel | None,
    model_config: dict[str, Any],
    criteria: Any,
    cache: FeatureCache,
    device: torch.device,
    train: TrainConfig,
) -> tuple[RewardModel, bool, Any, float]:
    """The model on its device: (model, gradient checkpointing on, parameter precision summary, learning rate)."""
    if model is None:
        model = build_model({**model_config, "criteria": criteria}, cache)
    check_device_for(model, device, train.device)
    gc = train.gradient_checkpointing
    if (gc is True or (gc == "auto" and getattr(model.backbone, "large", False))) and hasattr(
        model.backbone, "enable_gradient_checkpointing"
    ):
        model.backbone.enable_gradient_checkpointing()
        gc = True
    else:
        gc = False
    model.to(device)
    precision = prepare_precision(model, device)
    lr = resolve_lr(train.lr, model.backbone)
    return model, gc, precision, lr


def _featurize(
    model: RewardModel,
    pairs: pd.DataFrame,
    criteria: Any,
    features: tuple[Sequence[Any], Sequence[Any]] | None,
    cache: FeatureCache,
    train: TrainConfig,
) -> tuple[Any, Any, torch.Tensor, float]:
    """Every pair side featurized once: (chosen features, rejected features, loss margins, seconds taken)."""
    t0 = time.perf_counter()
    ex_c, ex_r = pair_examples(pairs, criteria, features)
    feats = model.featurize(ex_c + ex_r)
    n = len(pairs)
    f_chosen, f_rejected = feats[:n], feats[n:]
    featurize_s = time.perf_counter() - t0
    log.info(
        "featurized %d pair sides in %.1f s (cache hits %d, misses %d)", 2 * n, featurize_s, cache.hits, cache.misses
    )
    margin = torch.tensor(
        pd.to_numeric(pairs["margin"], errors="coerce").fillna(0.0).to_numpy() if "margin" in pairs else np.zeros(n),
        dtype=torch.float32,
    ) * float(train.margin_scale)
    return f_chosen, f_rejected, margin, featurize_s


def log_length_ratio(pairs: pd.DataFrame) -> torch.Tensor:
    """(n,) log(chosen_chars / rejected_chars) per pair (0 where a length is missing or not positive)."""
    n = len(pairs)
    c, r = (
        pd.to_numeric(pairs[col], errors="coerce").to_numpy(float) if col in pairs else np.full(n, np.nan)
        for col in ("chosen_chars", "rejected_chars")
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(c) - np.log(r)
    return torch.tensor(np.where(np.isfinite(d), d, 0.0), dtype=torch.float32)


def length_balance_weights(pairs: pd.DataFrame, train_idx: np.ndarray) -> torch.Tensor:
    """(n,) loss weights of ``length_control: balanced``: within each ``category``, the training pairs whose longer
    response was chosen and those whose shorter one was chosen get equal total weight (the mean weight stays 1);
    pairs of equal or unknown length, and categories with only one direction, keep weight 1."""
    d = log_length_ratio(pairs).numpy()
    cats = pairs["category"].astype(str).to_numpy() if "category" in pairs else np.full(len(pairs), "all")
    w = np.ones(len(pairs), dtype=np.float32)
    in_train = np.zeros(len(pairs), bool)
    in_train[train_idx] = True
    for cat in np.unique(cats):
        longer, shorter = in_train & (cats == cat) & (d > 0), in_train & (cats == cat) & (d < 0)
        n_long, n_short = int(longer.sum()), int(shorter.sum())
        if n_long and n_short:
            w[longer], w[shorter] = (n_long + n_short) / (2 * n_long), (n_long + n_short) / (2 * n_short)
        elif n_long or n_short:
            log.warning(
                "length_control balanced: category %s has only %s-chosen pairs; left unweighted",
                cat,
                "longer" if n_long else "shorter",
            )
    return torch.from_numpy(w)


def _length_covariate(train: TrainConfig) -> torch.nn.Parameter | None:
    """β of ``length_control: covariate`` (a scalar starting at 0), None otherwise."""
    if train.length_control not in ("none", "covariate", "balanced"):
        raise ValueError(f"reward.train.length_control {train.length_control!r}: use none, covariate or balanced")
    return torch.nn.Parameter(torch.zeros(())) if train.length_control == "covariate" else None


def _optimiser(
    model: RewardModel, train: TrainConfig, lr: float, n_train: int, extra: torch.nn.Parameter | None = None
) -> tuple[list[torch.nn.Parameter], torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR, torch.Generator, int]:
    """(trainable parameters (and ``extra``, the length covariate's β), AdamW, its learning-rate schedule, the
    shuffling generator, steps per epoch)."""
    params = [p for p in model.parameters() if p.requires_grad] + ([extra] if extra is not None else [])
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=train.weight_decay)
    gen = torch.Generator().manual_seed(train.seed)
    steps_per_epoch = math.ceil(n_train / (train.batch_size * train.grad_accum))
    total_steps = max(1, train.epochs * steps_per_epoch)
    warmup = int(train.warmup_ratio * total_steps)
    if train.lr_schedule not in ("linear", "constant"):
        raise ValueError(f"lr_schedule {train.lr_schedule!r}: use linear or constant")

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        if train.lr_schedule == "constant":
            return 1.0
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    return params, opt, sched, gen, steps_per_epoch


@dataclass
class _TrainingRun:
    """What the epoch loop and the per-epoch evaluation share."""

    model: RewardModel
    train: TrainConfig
    device: torch.device
    use_bf16: bool
    f_chosen: Any
    f_rejected: Any
    margin: torch.Tensor
    n_pairs: int
    train_idx: np.ndarray
    val_idx: np.ndarray
    params: list[torch.nn.Parameter]
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR
    gen: torch.Generator
    steps_per_epoch: int
    length_beta: torch.nn.Parameter | None = None
    log_length_ratio: torch.Tensor | None = None
    weight: torch.Tensor | None = None
    run_c: np.ndarray = dataclasses.field(init=False)
    run_r: np.ndarray = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        n = self.n_pairs
        self.run_c, self.run_r = np.full(n, np.nan, dtype=np.float32), np.full(n, np.nan, dtype=np.float32)

    def loss_margin(self, idx: np.ndarray, device: torch.device) -> torch.Tensor:
        """The BT margin of the pairs ``idx`` (n,): the rating-gap margin, less β·log length ratio under
        ``length_control: covariate`` (the logit becomes r_c − r_r + β·log(chars_c / chars_r) − margin)."""
        m = self.margin[idx].to(device)
        if self.length_beta is None or self.log_length_ratio is None:
            return m
        return m - self.length_beta.to(device) * self.log_length_ratio[idx].to(device)


def _train_epochs(run: _TrainingRun) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray, int, float]:
    """Every epoch: (history, final chosen and rejected rewards of every pair, pairs seen, seconds taken)."""
    train, model, val_idx = run.train, run.model, run.val_idx
    history: list[dict[str, Any]] = []
    from tqdm.auto import tqdm

    t1 = time.perf_counter()
    pairs_seen = 0
    bar = tqdm(
        total=train.epochs * run.steps_per_epoch,
        desc="reward training",
        disable=not train.progress,
        leave=False,
        mininterval=1.0,
    )
    for epoch in range(1, train.epochs + 1):
        model.train()
        order = run.train_idx[torch.randperm(len(run.train_idx), generator=run.gen).numpy()]
        loss_sum, n_loss = 0.0, 0
        micro = [order[i : i + train.batch_size] for i in range(0, len(order), train.batch_size)]
        for step_start in range(0, len(micro), train.grad_accum):
            loss_sum, n_loss, seen = _train_step(
                run, micro[step_start : step_start + train.grad_accum], loss_sum, n_loss
            )
            pairs_seen += seen
            bar.update(1)
            bar.set_postfix(loss=f"{loss_sum / max(n_loss, 1):.4f}", epoch=epoch)
        last = _evaluate(run, epoch, loss_sum, n_loss)
        history.append(last)
        log.info(
            "epoch %d: loss %.4f train acc (running) %.3f val acc %s mean reward %.3f",
            epoch,
            last["train_loss"],
            last["train_accuracy"],
            f"{last['val_accuracy']:.3f}" if len(val_idx) else "-",
            last["train_mean_reward"],
        )
    bar.close()
    rc = model.score_features(run.f_chosen, train.batch_size * 2)  # the trained model on every pair (scores.csv)
    rr = model.score_features(run.f_rejected, train.batch_size * 2)
    train_s = time.perf_counter() - t1
    return history, rc, rr, pairs_seen, train_s


def _train_step(run: _TrainingRun, group: list[np.ndarray], loss_sum: float, n_loss: int) -> tuple[float, int, int]:
    """One optimiser step over ``group``'s micro-batches: (running loss sum, running count, pairs seen)."""
    model, train = run.model, run.train
    run.opt.zero_grad(set_to_none=True)
    total = sum(len(b) for b in group)
    seen = 0
    for b in group:
        batch = model.backbone.collate([run.f_chosen[i] for i in b] + [run.f_rejected[i] for i in b])
        with torch.autocast(device_type=run.device.type, dtype=torch.bfloat16, enabled=run.use_bf16):
            r = model(batch)
        rc, rr = r[: len(b)].float(), r[len(b) :].float()
        run.run_c[b], run.run_r[b] = rc.detach().cpu().numpy(), rr.detach().cpu().numpy()
        weight = run.weight[b].to(rc.device) if run.weight is not None else None
        loss, _parts = bradley_terry_loss(rc, rr, run.loss_margin(b, rc.device), train.center_coef, weight)
        (loss * (len(b) / total)).backward()
        loss_sum += float(loss.detach()) * len(b)
        n_loss += len(b)
        seen += len(b)
    if train.max_grad_norm:
        torch.nn.utils.clip_grad_norm_(run.params, train.max_grad_norm)
    run.opt.step()
    run.sched.step()
    return loss_sum, n_loss, seen


def _evaluate(run: _TrainingRun, epoch: int, loss_sum: float, n_loss: int) -> dict[str, Any]:
    """The epoch's curve point: train metrics from the scores the training steps computed during the
    epoch (running, before each step's update), held-out metrics from scoring the val pairs now."""
    model, train, val_idx, train_idx = run.model, run.train, run.val_idx, run.train_idx
    row = {"epoch": epoch, "train_loss": loss_sum / n_loss if n_loss else float("nan")}
    vc = model.score_features([run.f_chosen[i] for i in val_idx], train.batch_size * 2)
    vr = model.score_features([run.f_rejected[i] for i in val_idx], train.batch_size * 2)
    for name, (c, r) in (("train", (run.run_c[train_idx], run.run_r[train_idx])), ("val", (vc, vr))):
        acc = pair_accuracy(c, r, train.tie_tol)
        row[f"{name}_accuracy"] = acc["accuracy"]
        row[f"{name}_ties"] = acc["ties"]
        row.update({f"{name}_{k}": v for k, v in reward_summary(c, r).items()})
    if len(val_idx):
        with torch.no_grad():
            vl, _ = bradley_terry_loss(
                torch.from_numpy(vc),
                torch.from_numpy(vr),
                run.loss_margin(val_idx, torch.device("cpu")),
                train.center_coef,
            )
        row["val_loss"] = float(vl)
    return row


def _metrics(
    run: _TrainingRun,
    criteria: Any,
    history: list[dict[str, Any]],
    rc: np.ndarray,
    rr: np.ndarray,
    *,
    gc: bool,
    lr: float,
    data_hash: str,
    precision: Any,
    timing: dict[str, float],
    cache: FeatureCache,
) -> dict[str, Any]:
    """metrics.json: the trained model on the train and val pairs, the curve, the settings and the timing."""
    model, train, device, train_idx, val_idx = run.model, run.train, run.device, run.train_idx, run.val_idx
    metrics: dict[str, Any] = {
        "backbone": model.backbone.config(),
        "pooling": model.pooling_name,
        "criteria": sorted(criteria),
        "center_coef": train.center_coef,
        "margin_scale": train.margin_scale,
        "length_control": train.length_control,
        "length_beta": float(run.length_beta.detach()) if run.length_beta is not None else None,
        "train_on": train.train_on,
        "n_pairs": int(run.n_pairs),
        "n_train": int(len(train_idx)),
        "n_val": int(len(val_idx)),
        "train": pair_accuracy(rc[train_idx], rr[train_idx], train.tie_tol)
        | reward_summary(rc[train_idx], rr[train_idx]),
        "val": (pair_accuracy(rc[val_idx], rr[val_idx], train.tie_tol) | reward_summary(rc[val_idx], rr[val_idx]))
        if len(val_idx)
        else None,
        "all": reward_summary(rc, rr),
        "history": history,
        "device": str(device),
        "precision": "bf16" if run.use_bf16 else "fp32",
        "gradient_checkpointing": gc,
        "seed": train.seed,
        "epochs": train.epochs,
        "batch_size": train.batch_size,
        "grad_accum": train.grad_accum,
        "lr": lr,
        "training_data_sha256": data_hash,
        "parameters": precision,
        "timing": timing,
        "cache": {"hits": cache.hits, "misses": cache.misses},
    }
    if device.type == "cuda":
        metrics["timing"]["peak_cuda_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    return metrics


def run_message(run: str, pairs: pd.DataFrame, model: str, train: TrainConfig) -> str:
    """The line that opens a training run's log: its pairs by category, the model and the training settings."""
    return f"run {run}: {len(pairs)} pairs ({pairs['category'].value_counts().to_dict()}), model {model}, train {train}"


def metrics_message(run: str, metrics: Mapping[str, Any]) -> str:
    """The line that closes a training run's log: train and validation accuracy, total seconds."""
    val = metrics["val"] and round(metrics["val"]["accuracy"], 3)
    return f"run {run}: train acc {metrics['train']['accuracy']:.3f}, val {val}, {metrics['timing']['total_s']:.1f} s"
