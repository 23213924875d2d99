"""The benchmark scripts the tests check, imported from their files (benchmarks/{tools,validity,performance}/)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
GROUPS = ("tools", "validity", "performance")


def bench_module(name: str) -> ModuleType:
    """benchmarks/<group>/<name>.py as the module ``name``, imported once per process.

    Loaded from its file, so the tests add no folder to ``sys.path``; a script that imports a module beside
    it (``_records``, ``_plan_common``, modprefs) sets up its own path as it does when run. A module the
    script imported already (``_records`` by ``table2_null``) is that same module object.
    """
    path = next((BENCH / g / f"{name}.py" for g in GROUPS if (BENCH / g / f"{name}.py").is_file()), None)
    if path is None:
        raise FileNotFoundError(f"no benchmarks/{{{','.join(GROUPS)}}}/{name}.py")
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", None) or "").resolve() == path.resolve():
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickle look a module up by its name
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
