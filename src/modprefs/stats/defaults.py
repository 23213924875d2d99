"""The statistics' defaults, in one place: ``modprefs stats`` uses them, and the workflow's config has the same.

``tests/cli/test_cli.py`` checks that :data:`STATS_DEFAULTS` equals the defaults of the
``stats`` section (and the top-level ``seed``) of ``workflow/schemas/config.schema.yaml`` and the
values of the embedded ``config.yaml``, so the two entry points give identical tables on the same
data. Keys: ``seed`` (the config's top-level ``seed``), the rest as in the config's ``stats:``.

The rating scale is the study's, not a statistics setting: the config's ``study.scale`` (default the
paper's 1..100, :data:`modprefs.scale.PAPER_SCALE`), ``modprefs stats --scale`` (default
:data:`STATS_SCALE`, the same scale). The workflow's rules pass ``scale=config["study"]["scale"]`` and
the CLI passes ``--scale`` as the same mapping (``params["scale"]``), which the analyses read with
:func:`modprefs.stats.tables.analyses.study_scale`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

#: ``modprefs stats --scale``'s default (MIN:MAX[:STEP]): the paper's 1..100 slider, config study.scale's default
STATS_SCALE = "1:100"

STATS_DEFAULTS: MappingProxyType[str, Any] = MappingProxyType(
    {
        "seed": 20261130,  # every bootstrap/permutation stream derives from it
        "n_boot": 2000,  # bootstrap resamples for the ICC CIs (paper 2,000)
        # ICC CI (modprefs.stats.reliability.icc_ci): auto | f_based | jackknife | stimulus | prompt | two_way |
        # parametric; auto = the F-based interval (McGraw & Wong; df shrunk to the ratings' variability) on complete
        # balanced ratings (a prompt's pair of clips taken as items) without covariates, unless tests of its
        # assumptions reject or the jackknife's is more than 1 + 4/k times as wide, else the jackknife
        "icc_ci_method": "auto",
        # Table 2's random effects: participant_slopes (by-participant order and trial slopes, fallback ladder) |
        # stimulus_modality | paper
        "table2_random": "participant_slopes",
        # participant_slopes keeps the ladder's slopes where their likelihood-ratio test against (1|participant)
        # gives p <= this (Matuschek et al. 2017); 1 = keep every regular slope fit (the ladder alone)
        "table2_slope_alpha": 0.2,
        "icc_test": "calibrated",  # Table 4's ICC-difference test: calibrated | jackknife | permutation (the paper's)
        "n_perm": 2000,  # participant permutations for the ICC modality test (paper 2,000)
        "n_boot_alpha": 5000,  # stimulus-bootstrap resamples for Krippendorff's alpha (paper 5,000)
        "n_perm_alpha": 5000,  # participant permutations for the alpha modality test (paper 5,000)
        "n_boot_threshold": 1000,  # participant resamples for the binarisation thresholds' intervals (0 = none)
        "ci_level": 0.95,  # two-sided level of every interval
        "modality_terms": "resources/analysis/modality_terms.txt",  # words left out of the justification analysis
    }
)
