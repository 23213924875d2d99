"""The judges' entry point: run the configured backend (API or local) over items; its command line.

``judges.backend: local`` runs :func:`modprefs.judges.local.run_local_judges`, anything else the API
judge (:func:`modprefs.judges.client.arun_judges`). Each backend is imported only when it is used.

    python -m modprefs.judges.dispatch --items items.json --config judges.yaml --out DIR [--table F]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from modprefs.judges.types import JudgeAbort, JudgeItem, JudgeSetupError, RunResult

if TYPE_CHECKING:
    from modprefs.judges.api_config import JudgeConfig
    from modprefs.judges.qc_reuse import QcMeasures


def run_judges(
    items: list[JudgeItem],
    config: dict | JudgeConfig,
    out_dir: str | Path,
    table_path: str | Path | None = None,
    qc: Mapping[str, QcMeasures] | None = None,
) -> RunResult:
    """Synchronous entry point; optionally writes the tidy table (CSV) to ``table_path``.

    ``config['backend'] == 'local'`` (a ``judges`` mapping) runs the offline judges instead
    (:func:`modprefs.judges.local.run_local_judges`, which reuses audio QC's measurements ``qc`` by audio
    hash); anything else is the API judge.
    """
    if isinstance(config, dict) and config.get("backend") == "local":
        from modprefs.judges.local import run_local_judges

        result = run_local_judges(items, config, out_dir, qc)
    else:
        from modprefs.judges.client import arun_judges

        result = asyncio.run(arun_judges(items, config, out_dir))
    if table_path is not None:
        from modprefs.io import write_csv

        write_csv(result.table, table_path)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run the configured judges (API or local) over a JSON list of items.")
    ap.add_argument("--items", required=True, help="JSON file: a list of JudgeItem fields")
    ap.add_argument("--config", required=True, help="JSON or YAML file holding the judges.* mapping")
    ap.add_argument("--out", required=True, help="output dir (records under <out>/raw)")
    ap.add_argument("--table", help="write the tidy ratings CSV here")
    args = ap.parse_args(argv)
    items = [JudgeItem(**d) for d in json.loads(Path(args.items).read_text())]
    text = Path(args.config).read_text()
    if args.config.endswith((".yaml", ".yml")):
        import yaml

        config = yaml.safe_load(text)
        config = config.get("judges", config)
    else:
        config = json.loads(text)
    try:
        result = run_judges(items, config, args.out, args.table)
    except (JudgeSetupError, JudgeAbort) as e:
        print(f"judges: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(result.stats.as_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
