"""Speech reward models (SDiaReward-style Bradley–Terry): pairs, backbones, training, evaluation.

- :mod:`.pairs` — pair tables from study ratings, corpora, rewrites and degradations;
  :mod:`.build` — the workflow's four pair sets; :mod:`.colloquial` — the rule-based spoken-style rewriter;
- :mod:`.backbones` — ``minilm-logmel`` (CPU default; :mod:`.mixer` conditions it on criterion and context),
  ``qwen2.5-omni`` (GPU; LoRA, fp32 master weights via :mod:`.precision`), ``features``;
- :mod:`.pooling`, :mod:`.loss`, :mod:`.model` — pooling, BT loss with centering, the scorer;
- :mod:`.train` — training a run folder; :mod:`.evaluate` — accuracy, OOD, drift, length, transfer, pair types.

Every path that padding can reach is masked: a score does not depend on the batch it is computed in.
docs/reward.md documents every option.

No Snakemake imports here; workflow/scripts/reward_*.py are the adapters.
"""

from modprefs.reward.loss import bradley_terry_loss
from modprefs.reward.model import DEFAULT_CRITERIA, RewardModel, load_reward_model

__all__ = ["DEFAULT_CRITERIA", "RewardModel", "bradley_terry_loss", "load_reward_model"]
