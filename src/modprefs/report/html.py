"""A self-contained HTML report: every table and figure of a run, its config and package versions.

Figures are embedded as base64 PNG so the file can be mailed or archived alone. All text from
tables and config is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import importlib.metadata
import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import yaml

from modprefs.report.measured import benchmark_summary

PACKAGES = (
    "modprefs",
    "snakemake",
    "numpy",
    "scipy",
    "pandas",
    "statsmodels",
    "krippendorff",
    "piper-tts",
    "kokoro-onnx",
    "onnxruntime",
    "datasets",
    "lingua-language-detector",
    "scikit-learn",
    "nltk",
    "matplotlib",
)

_CSS = (
    "\n"
    "body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;"
    "padding:0 1em;color:#222}\n"
    "h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}\n"
    "table{border-collapse:collapse;font-size:.85em;margin:.5em 0}"
    "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}\n"
    "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
    ".note{background:#fff4e0;border-left:4px solid #f0a030;padding:.5em 1em}\n"
    "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:.8em}img{max-width:100%}"
    "nav a{margin-right:1em}\n"
)


def package_versions(names: Sequence[str] = PACKAGES) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _table_html(df: pd.DataFrame) -> str:
    return df.to_html(index=False, na_rep="", float_format=lambda x: f"{x:.4g}", escape=True, border=0)


def _figure_html(path: Path, title: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,{data}"></figure>'


def build_report(
    sections: Sequence[tuple[str, Sequence[tuple[str, pd.DataFrame | Path]]]],
    config: dict,
    notes: Sequence[str] = (),
    title: str = "modprefs report",
) -> str:
    """The report's HTML. ``sections``: (heading, [(caption, DataFrame or PNG path), ...])."""
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        f"<p>Generated {datetime.now(UTC):%Y-%m-%d %H:%M UTC}.</p>",
    ]
    for note in notes:
        parts.append(f'<p class="note">{html.escape(note)}</p>')
    parts.append(
        "<nav>" + "".join(f'<a href="#s{i}">{html.escape(h)}</a>' for i, (h, _) in enumerate(sections)) + "</nav>"
    )
    for i, (heading, items) in enumerate(sections):
        parts.append(f'<h2 id="s{i}">{html.escape(heading)}</h2>')
        for caption, item in items:
            parts.append(f"<h3>{html.escape(caption)}</h3>")
            parts.append(_figure_html(item, caption) if isinstance(item, Path) else _table_html(item))
    parts.append("<h2>Configuration</h2><pre>" + html.escape(yaml.safe_dump(config, sort_keys=False)) + "</pre>")
    versions = pd.DataFrame(sorted(package_versions().items()), columns=["package", "version"])
    parts.append("<h2>Software versions</h2>" + _table_html(versions))
    parts.append("</body></html>")
    return "\n".join(parts)


def markdown_title(md_path: Path) -> str | None:
    """The ``# title`` line of a table's Markdown twin, if any."""
    if not md_path.is_file():
        return None
    first = md_path.read_text(encoding="utf-8").splitlines()[:1]
    return first[0][2:].strip() if first and first[0].startswith("# ") else None


def coverage_table(coverage_json: Path | None) -> pd.DataFrame | None:
    """The ICC interval coverage benchmark (benchmarks/validity/icc_coverage.py) as one row per model x size x
    method."""
    summary = benchmark_summary(coverage_json)
    if summary is None:
        return None
    rows = []
    for key, block in summary.items():
        model, _, size = key.partition("/")
        for method, m in block.get("methods", {}).items():
            row = {
                "model": model,
                "size": size,
                "studies": block.get("n_studies"),
                "truth_icc_2_1": block.get("truth_icc_2_1"),
                "method": method,
            }
            for stat in ("icc_2_1", "icc_2_k"):
                c = m.get(stat) or {}
                lo, hi = c.get("coverage_ci95_clopper_pearson") or (None, None)
                row.update(
                    {
                        f"{stat}_coverage": c.get("coverage"),
                        f"{stat}_coverage_lo": lo,
                        f"{stat}_coverage_hi": hi,
                        f"{stat}_width": c.get("mean_width"),
                    }
                )
            rows.append(row)
    return pd.DataFrame(rows) if rows else None


def coverage_note(method: str, coverage_json: Path | None) -> str:
    """Which ICC CI method the run used, and its coverage range over the benchmark's models and sizes."""
    from modprefs.stats.reliability.icc_ci import ci_method_label  # noqa: PLC0415

    text = f"ICC confidence intervals: {ci_method_label(method)}."
    table = coverage_table(coverage_json)
    if table is None:
        return text + " Its coverage has not been measured on this installation (benchmarks/validity/icc_coverage.py)."
    # auto uses the F-based interval on complete balanced ratings without covariates (where its checks pass),
    # else the jackknife (measured here on the benchmark's unbalanced designs)
    mine = table[table["method"].isin(("f_based", "jackknife") if method == "auto" else (method,))]
    if mine.empty:
        return text + " The coverage benchmark does not include this method."
    cov = mine[["icc_2_1_coverage", "icc_2_k_coverage"]].to_numpy(float)
    return (
        text + f" Measured coverage of its nominal 95 % intervals: {cov.min():.3f}-{cov.max():.3f} over "
        f"{len(mine)} settings ({', '.join(sorted(set(mine['model'])))}; sizes {', '.join(sorted(set(mine['size'])))}; "
        f"{int(mine['studies'].min())}+ simulated studies each) -- the table 'ICC interval coverage' below "
        "(benchmarks/out/icc_coverage.json)."
    )


def table2_null_table(null_json: Path | None) -> pd.DataFrame | None:
    """False-positive rates of Table 2's modality interactions (benchmarks/validity/table2_null.py), one row per model x
    random-effects structure x term."""
    summary = benchmark_summary(null_json)
    if summary is None:
        return None
    rows = []
    for model, block in summary.items():
        for structure in ("stimulus_modality", "paper"):
            # the two interactions every generating model sets to zero (the simulator keeps the paper's
            # modality x trial effect, so its rejection rate there is power, not a false-positive rate)
            for term in ("modality_x_length", "modality_x_order"):
                t = block.get(structure, {}).get(term)
                if t:
                    rows.append(
                        {
                            "model": model,
                            "table2_random": structure,
                            "term": term,
                            "studies": block.get("n_studies"),
                            "false_positive_rate": t["rate"],
                            "rate_lo": t["rate_ci95"][0],
                            "rate_hi": t["rate_ci95"][1],
                        }
                    )
    return pd.DataFrame(rows) if rows else None


def table2_note(structure: str, null_json: Path | None) -> str:
    """Which random-effects structure Table 2 used and the false-positive rates measured for both."""
    table = table2_null_table(null_json)
    text = f"Table 2's omnibus model used stats.table2_random = {structure}."
    if table is None:
        return (
            text + " Its false-positive rate has not been measured on this installation "
            "(benchmarks/validity/table2_null.py)."
        )
    parts = []
    for name in ("stimulus_modality", "paper"):
        rates = table[(table["table2_random"] == name) & table["term"].isin(["modality_x_length", "modality_x_order"])]
        if not rates.empty:
            parts.append(f"{name}: {rates['false_positive_rate'].min():.3f}-{rates['false_positive_rate'].max():.3f}")
    return (
        text + " Rejection rates at alpha = .05 of the modality x length and modality x order interactions in null "
        "simulations (no interaction; "
        + ", ".join(sorted(set(table["model"])))
        + "): "
        + "; ".join(parts)
        + " -- the table 'Table 2 false-positive rates' below (benchmarks/out/table2_null.json)."
    )


def judges_note(judges: pd.DataFrame) -> str | None:
    """What the AI ratings are, from results/judges/ratings.csv's ``backend`` and ``model`` columns.

    The offline backends are named for what they are: ``local`` (a small text model), ``local-cascade``
    (Whisper transcript -> that text model: it judges the words, not the voice) and ``dnsmos`` (a
    predicted-MOS model for audio quality). The paper's audio judge is end to end (GPT-4o-Audio-Preview).
    """
    if judges is None or judges.empty:
        return None
    parts = []
    for (modality, kind), g in judges.groupby(["modality", "kind"], sort=True):
        labels = ", ".join(sorted({f"{b} ({m})" for b, m in zip(g["backend"], g["model"])}))
        parts.append(f"{modality}/{kind}: {labels}")
    note = "AI ratings (Tables 5-6, rater plan) come from: " + "; ".join(parts) + "."
    backends = set(judges["backend"])
    if "local-cascade" in backends:
        note += (
            " The offline 'AI-audio' response ratings come from a CASCADE: a Whisper transcript of each clip "
            "rated by a small text model. A cascade judges transcripts, not speech, which is exactly why the "
            "paper used an end-to-end audio model; the paper's judge needs judges.backend: openai with "
            "gpt-4o-audio-preview, or an OpenAI-compatible server running an end-to-end audio LLM (e.g. vLLM "
            "serving Qwen2.5-Omni)."
        )
    if backends & {"local", "local-cascade"}:
        note += (
            " The offline text model (SmolLM2-135M-Instruct) is far weaker than GPT-4o: treat these AI ratings "
            "as a pipeline check, not as the paper's synthetic raters (README, 'Synthetic judges')."
        )
    return note
