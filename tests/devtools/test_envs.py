"""Every conda environment in envs/ lists what its rules' scripts import (modprefs.devtools.env_closure)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from modprefs.devtools.env_closure import (
    environment_distributions,
    missing_distributions,
    rule_environments,
    third_party_imports,
)


@pytest.mark.slow  # over 10 s on 2 cores: not in `make test-fast`
def test_every_rule_environment_holds_its_scripts_imports():
    rules = rule_environments()
    assert len(rules) >= 25 and {r.env.name for r in rules} == {
        "data.yaml",
        "tts.yaml",
        "judges.yaml",
        "stats.yaml",
        "reward.yaml",
    }
    assert missing_distributions(rules) == {}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_a_missing_distribution_is_found(tmp_path):
    """A toy repository: the script reaches scipy through a modprefs module (inside a function) and
    statsmodels at top level; the environment lists only numpy and statsmodels."""
    src = tmp_path / "src"
    _write(src / "modprefs" / "__init__.py", "")
    _write(
        src / "modprefs" / "toy.py",
        """
        import numpy as np
        try:
            import kokoro  # optional: left out
        except ImportError:
            kokoro = None

        def resample(x):
            from scipy.signal import resample_poly
            return resample_poly(x, 1, 2)

        def optional_feature():
            from modprefs import heavy  # a modprefs module loaded on use: not followed
    """,
    )
    _write(src / "modprefs" / "heavy.py", "import torch\n")
    script = _write(
        tmp_path / "workflow" / "scripts" / "toy.py",
        """
        import sys
        import statsmodels.api as sm
        from modprefs.toy import resample
    """,
    )
    _write(
        tmp_path / "envs" / "toy.yaml",
        """
        channels: [conda-forge]
        dependencies:
          - python=3.11
          - numpy>=1.26
          - pip
          - pip:
              - statsmodels>=0.14
    """,
    )
    _write(
        tmp_path / "rules" / "toy.smk",
        """
        rule toy:
            output:
                "x"
            conda:
                "../envs/toy.yaml"
            script:
                "../workflow/scripts/toy.py"
    """,
    )
    assert third_party_imports(script, src) == {"numpy", "statsmodels", "scipy"}
    (rule,) = rule_environments(tmp_path / "rules")
    assert rule.env == (tmp_path / "envs" / "toy.yaml").resolve() and rule.script == script.resolve()
    assert {"numpy", "statsmodels"} <= environment_distributions(rule.env)
    # scipy is a requirement of statsmodels (installed metadata), so the environment does hold it ...
    assert missing_distributions([rule], src) == {}
    # ... and without statsmodels it does not
    _write(tmp_path / "envs" / "toy.yaml", "dependencies:\n  - numpy>=1.26\n")
    assert missing_distributions([rule], src) == {"toy": {"scipy": ["scipy"], "statsmodels": ["statsmodels"]}}
