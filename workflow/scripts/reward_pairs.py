"""Snakemake adapter (rule reward_pairs): study ratings, judge ratings, clips (and optionally a user
corpus and colloquial rewrites) -> results/reward/pairs/{study,degradation,modality,colloquial}.parquet.

A builder without its input (no judge table, no corpus, no rewrites or endpoint) writes an empty
pair file and says in the log and in summary.json what it skipped and why.
"""

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import pandas as pd  # noqa: E402

from modprefs.io import write_json  # noqa: E402
from modprefs.reward import pairs as rp  # noqa: E402
from modprefs.workflow_log import run_adapter, setup_logging  # noqa: E402

smk = snakemake  # noqa: F821
setup_logging(smk, fmt="%(asctime)s %(name)s %(message)s")
cfg = smk.params.pairs
ids = {"participant_id": str, "prompt_id": str, "clip_id": str}
summary = {"skipped": {}}
_tts = {}


def renderer(kind: str):
    """A TTS renderer (the study's tts settings), built once, writing results/reward/audio/{kind}/."""
    if "backend" not in _tts:
        from modprefs.speech.backends import get_backend
        _tts["backend"] = get_backend(smk.params.tts, threads=smk.threads)
    return rp.tts_renderer(_tts["backend"], Path(smk.params.audio_dir) / kind)


def main(smk) -> None:  # noqa: ANN001
    stimuli = pd.read_csv(smk.input.stimuli, dtype=ids)
    manifest = pd.read_csv(smk.input.manifest, dtype=ids)
    conversations = pd.read_parquet(smk.input.conversations)
    judges = None
    if smk.params.judge_ratings:
        judges = pd.read_csv(smk.params.judge_ratings, dtype=ids)
    else:
        summary["skipped"]["judge"] = "no judge ratings configured (reward.pairs.judge_ratings / judges stage)"
    report = {}
    study = rp.study_pairs(pd.read_csv(smk.input.ratings, dtype=ids), stimuli, manifest, conversations,
                           judges=judges, min_gap=cfg["min_gap"], sources=cfg["sources"],
                           criterion_by_modality=bool(cfg.get("criterion_by_modality", False)), report=report)
    summary["study"] = report
    rp.write_pairs(study, smk.output.study)

    deg = cfg.get("degradation") or {}
    study_clips = manifest[manifest["clip_id"].isin(stimuli["clip_id"])]
    degraded = rp.degradation_pairs(study_clips, kinds=deg.get("kinds", []), per_clip=int(deg.get("per_clip", 1)),
                                    seed=int(smk.params.seed))
    summary["degradation"] = {"pairs": len(degraded), "by_kind": degraded["category"].value_counts().to_dict()}
    rp.write_pairs(degraded, smk.output.degradation)

    corpus_cfg = cfg.get("corpus")
    if corpus_cfg and corpus_cfg.get("manifest"):
        corpus = rp.read_corpus_manifest(corpus_cfg["manifest"])
        modality = rp.modality_pairs(corpus, renderer("tts_resynthesis"),
                                     min_context_turns=int(corpus_cfg.get("min_context_turns", 1)),
                                     max_pairs=corpus_cfg.get("max_pairs"), seed=int(smk.params.seed),
                                     corpus_name=str(corpus_cfg.get("name", "corpus")))
        summary["modality"] = {"pairs": len(modality), "by_tier": modality["category"].value_counts().to_dict()}
    else:
        modality = rp.empty_pairs()
        summary["skipped"]["modality"] = "no user corpus configured (reward.pairs.corpus.manifest)"
    rp.write_pairs(modality, smk.output.modality)

    col_cfg = cfg.get("colloquial") or {}
    if col_cfg.get("rewrites"):
        rewrites = pd.read_csv(col_cfg["rewrites"], dtype={"item_id": str})
    elif col_cfg.get("endpoint"):
        ep = col_cfg["endpoint"]
        texts = dict(zip(stimuli["clip_id"], manifest.set_index("clip_id").loc[stimuli["clip_id"], "spoken_text"]))
        texts = dict(list(texts.items())[: int(col_cfg.get("n", 24))])
        rewrites = rp.request_rewrites(texts, rp.openai_completer(ep["base_url"], ep["model"],
                                                                  ep.get("api_key_env", "OPENAI_API_KEY")))
    else:
        rewrites = None
        summary["skipped"]["colloquial"] = ("no rewrites table or endpoint configured "
                                            "(reward.pairs.colloquial.rewrites / .endpoint)")
    if rewrites is not None:
        contexts = rp.study_context(conversations)
        contexts.update({f"{p}_{r}": contexts[p] for p in list(contexts) for r in (0, 1)})
        colloquial = rp.colloquial_pairs(rewrites, renderer("colloquial"), contexts=contexts)
        summary["colloquial"] = {"pairs": len(colloquial)}
    else:
        colloquial = rp.empty_pairs()
    rp.write_pairs(colloquial, smk.output.colloquial)
    for what, why in summary["skipped"].items():
        logging.info("skipped %s pairs: %s", what, why)
    write_json(summary, smk.output.summary)
    logging.info("pairs: study %d, degradation %d, modality %d, colloquial %d", len(study), len(degraded),
                 len(modality), len(colloquial))


run_adapter(main, smk)
