"""The dataset card (README.md): YAML metadata header, design, rating scale, ICC table, simulated-data banner,
config, citation.

Pure: :func:`dataset_card` returns the text; the caller writes it. The header's ``rating_scale`` (``study.scale``'s
mapping: min, max, step, labels) is the study's rating scale; :func:`recorded_scale` reads it back (``modprefs stats
--ratings <published folder>`` takes it as the scale).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd
import yaml

from modprefs.scale import RatingScale, scale_from_config

SIMULATED_BANNER = (
    "> **SIMULATED RATINGS.** Every human-condition rating in this dataset was produced by the study's simulator "
    "(`ratings.source: simulate`), not by people. Use it to test pipelines, never as evidence about human "
    "preferences."
)


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket of ``n`` rows."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return name
    return "n>1M"


def data_file(split: str) -> str:
    """The Parquet data file of ``split``, relative to the dataset folder: one Hub config per split (the
    splits differ in columns), its one split named ``train`` as the Hub expects."""
    return f"data/{split}/train-00000-of-00001.parquet"


#: the card header's key of the study's rating scale (``study.scale``'s mapping)
SCALE_KEY = "rating_scale"


def metadata(
    frames: Mapping[str, pd.DataFrame], license_id: str, pretty_name: str, scale: RatingScale | None = None
) -> dict[str, Any]:
    """The card's YAML header: one config per split (splits differ in columns), ``ratings`` the default, and the
    study's rating scale (:data:`SCALE_KEY`) when known."""
    return {
        "license": license_id,
        "pretty_name": pretty_name,
        "language": ["en"],
        "task_categories": ["text-classification", "audio-classification", "text-to-speech"],
        "modalities": ["text", "audio", "tabular"],
        "tags": ["preference", "human-feedback", "reward-modeling", "speech", "inter-rater-reliability"],
        "size_categories": [size_category(max((len(f) for f in frames.values()), default=0))],
        "configs": [
            {
                "config_name": split,
                "data_files": [{"split": "train", "path": data_file(split)}],
                **({"default": True} if split == "ratings" else {}),
            }
            for split in frames
        ],
        **({SCALE_KEY: scale.as_config()} if scale is not None else {}),
    }


def front_matter(card: str) -> dict[str, Any]:
    """The YAML header of a dataset card (``---`` ... ``---``); empty when there is none or it is not a mapping."""
    if not card.startswith("---"):
        return {}
    parts = card.split("\n---", 1)
    try:
        header = yaml.safe_load(parts[0].removeprefix("---")) if len(parts) == 2 else None
    except yaml.YAMLError:
        return {}
    return header if isinstance(header, dict) else {}


def recorded_scale(card: str) -> RatingScale | None:
    """The rating scale a published dataset's card records (its header's :data:`SCALE_KEY`); None without one
    (a dataset published before the scale was recorded).

    Raises:
        ValueError: the recorded scale is not a valid ``study.scale`` (min, max, step, labels).
    """
    block = front_matter(card).get(SCALE_KEY)
    if not isinstance(block, Mapping):
        return None
    return scale_from_config(block)


def scale_sentence(scale: RatingScale, judges: bool = False) -> str:
    """The ratings' scale in one sentence (the card's "Rating scale" section, the ratings split's description);
    ``judges``: the ratings include AI judge rows (on 1-100)."""
    return (
        f"Human (and simulated) ratings, `rating` and `audio_quality`, are on the study's scale {scale.describe()}"
        + ("; AI judge rows (`source` judge) are on 1-100." if judges else ".")
    )


def _design(frames: Mapping[str, pd.DataFrame]) -> list[str]:
    r = frames["ratings"]
    human = r[r["source"] != "judge"]
    lines = [f"- prompts (items): {len(frames['stimuli'])}, each with two responses as text and as speech"]
    if "condition" in human.columns:
        per = human.groupby("condition")["participant_id"].nunique()
        lines.append("- raters per condition: " + ", ".join(f"{c} {int(n)}" for c, n in per.items()))
    if "trial" in human.columns:
        trials = pd.to_numeric(human["trial"], errors="coerce")
        lines.append(
            f"- trials per participant: {int(trials.max()) if trials.notna().any() else 0} "
            "(after the attention check at trial 0)"
        )
    lines.append(f"- ratings: {len(human)} (attention-check ratings included, trial 0)")
    judges = r[r["source"] == "judge"]
    if len(judges):
        lines.append(f"- AI judge ratings: {len(judges)} ({judges['participant_id'].nunique()} judges)")
    return lines


#: config keys never shown in the card (the pseudonym salt; any secret a lab adds)
SECRET_KEY = re.compile(r"^(salt|.*token|.*password|.*secret|api_key)$", re.IGNORECASE)


def public_config(config: Mapping[str, Any] | None) -> dict[str, Any]:
    """The config as shown in the card: ``publish.salt`` and any other key named like a secret removed."""

    def strip(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: strip(v) for k, v in node.items() if not SECRET_KEY.match(str(k))}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(copy.deepcopy(dict(config or {})))


def dataset_card(
    frames: Mapping[str, pd.DataFrame],
    icc: pd.DataFrame,
    config: Mapping[str, Any] | None,
    license_id: str,
    ties: Mapping[str, int],
    dropped: list[str],
    pretty_name: str = "modprefs cross-modal speech preference study",
    scale: RatingScale | None = None,
) -> str:
    """The README.md of the published dataset.

    Args:
        frames: the splits (:func:`modprefs.publish.build.build_splits`).
        icc: results/stats/tables/icc.csv of the run (shown as it is, intervals included).
        config: the workflow config the run used (shown without ``publish.salt``); None if unknown.
        license_id: the Hub license id (config ``publish.license``).
        ties: modality -> prompts left out of ``preferences_<modality>`` (equal mean ratings).
        dropped: ``split.column`` names removed for privacy.
        scale: the study's rating scale (config ``study.scale``), recorded in the header and stated.
    """
    header = yaml.safe_dump(metadata(frames, license_id, pretty_name, scale), sort_keys=False, allow_unicode=True)
    simulated = bool((frames["ratings"]["source"] == "simulated").any())
    parts = [f"---\n{header}---\n", f"# {pretty_name}\n"]
    if simulated:
        parts.append(SIMULATED_BANNER + "\n")
    parts.append(
        "Ratings of AI assistant responses presented as **text** or as **speech** (TTS audio), collected (or "
        "simulated) with the modprefs workflow, a replication of the cross-modal preference study design. "
        "Each prompt has two responses; raters in the text condition read them, raters in the audio condition "
        "heard them.\n"
    )
    parts.append("## Design\n\n" + "\n".join(_design(frames)) + "\n")
    if scale is not None:
        judges = bool((frames["ratings"]["source"] == "judge").any())
        parts.append(
            f"## Rating scale\n\n{scale_sentence(scale, judges)} The card's header records it (`{SCALE_KEY}`); "
            "`modprefs stats --ratings <this dataset>` uses it.\n"
        )
    split_lines = [f"- `{s}`: {len(f)} rows, file `{data_file(s)}`" for s, f in frames.items()]
    parts.append(
        "## Splits\n\n"
        + "\n".join(split_lines)
        + "\n\n`stimuli` holds the study's exact WAV files (`audio_0`, `audio_1`); `preferences_<modality>` are in "
        "the conversational format reward-model / DPO trainers take (`prompt`, `chosen`, `rejected` message lists, "
        "plus `chosen_audio` / `rejected_audio`), with `margin` (mean rating difference), `agreement` (share of "
        "raters rating the chosen response higher) and `n_raters`; `item_reliability` gives per-prompt agreement "
        "for filtering.\n"
        + "\n".join(
            f"- {m}: {n} tied prompt(s) (equal mean ratings) left out of `preferences_{m}`" for m, n in ties.items()
        )
        + '\n\nLoad: `datasets.load_dataset("<owner>/<name>", "ratings", split="train")` (one config per split), '
        '`datasets.load_from_disk("<folder>")` for a local copy, or `modprefs stats --ratings <folder or '
        "hf://owner/name>` to recompute the statistics.\n"
    )
    parts.append(
        "## Reliability (ICC)\n\nFrom the publishing run (results/stats/tables/icc.csv):\n\n"
        + icc.to_markdown(index=False, floatfmt=".4g")
        + "\n"
    )
    privacy = (
        "## Privacy\n\nParticipant ids are replaced by salted hashes (the salt is not published; the order of "
        "the ids is kept). Identifier fields (platform ids, session ids, tokens, IP addresses) are dropped; "
        "e-mail addresses, URLs, IP addresses and platform-like ids in free text are replaced by placeholders."
    )
    if dropped:
        privacy += " Dropped here: " + ", ".join(f"`{d}`" for d in dropped) + "."
    parts.append(privacy + "\n")
    if config is not None:
        parts.append(
            "## Configuration used\n\n```yaml\n"
            + yaml.safe_dump(public_config(config), sort_keys=False, allow_unicode=True)
            + "```\n"
        )
    parts.append(
        "## Citation\n\nIf you use this dataset, cite it and the modprefs workflow:\n\n```bibtex\n"
        "@misc{modprefs_dataset,\n  title  = {" + pretty_name + "},\n  note   = {Published with modprefs "
        "(modprefs publish)},\n  license = {" + license_id + "}\n}\n```\n"
    )
    return "\n".join(parts)
