"""Shared fixtures and paths for the test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Two xdist workers share two cores: a worker's idle OpenMP (torch) and onnxruntime threads must not spin, or
# each parallel region waits on a thread the other worker has descheduled (a 2-thread torch training test
# ran 5x slower beside one busy process; README, "Tests and benchmarks"). Inherited by every snakemake run.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded default config run once, to the end (report included), in a copy of the checkout.

    One run per test session, shared by every test file and xdist worker that asks for it
    (tests/workflow/test_workflow.py reads it, tests/workflow/test_dag_inputs.py damages copies of it). Read-only: a
    test that changes files works on ``support.workflow_runner.copy_run(default_run, tmp_path / ...)``.

    For a developer iterating on these tests: ``MODPREFS_DEFAULT_RUN=DIR`` reuses a finished run (e.g. a
    previous session's ``/tmp/pytest-of-$USER/pytest-N/default_run``) instead of making one; it must have
    been made from the current checkout.
    """
    from support.workflow_runner import make_checkout, run_workflow, shared_run

    if os.environ.get("MODPREFS_DEFAULT_RUN"):
        given = Path(os.environ["MODPREFS_DEFAULT_RUN"])
        if not (given / "Snakefile").is_file() or not (given / "results/stats/tables/icc.csv").is_file():
            pytest.fail(f"MODPREFS_DEFAULT_RUN={given} is not a finished default run in a checkout copy")
        return given

    def build(folder: Path) -> None:
        make_checkout(folder)
        proc = run_workflow(folder, timeout=3000)  # the other xdist worker shares the 2 cores
        assert proc.returncode == 0, proc.stderr[-4000:]

    return shared_run(tmp_path_factory, "default_run", build)


# The longest files first, so that under `make test` (xdist --dist loadfile --no-loadscope-reorder) each
# worker starts on one of them and the many short files fill the time after, instead of the longest file
# starting last and holding the run open alone. The files that reuse the shared default run (the
# ``default_run`` fixture, which the first worker builds while the second runs SLURM) come after the other
# slow files, so that the run is ready when a worker asks for it.
LONGEST_FIRST = ("tests/workflow/test_workflow.py", "tests/cluster/test_slurm.py")
ON_THE_DEFAULT_RUN = (
    "tests/workflow/test_dag_inputs.py",
    "tests/workflow/test_resume.py",
    "tests/workflow/test_scale_end_to_end.py",
)


def _run_order(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    if path in LONGEST_FIRST:
        return LONGEST_FIRST.index(path)
    if path in ON_THE_DEFAULT_RUN:
        return len(LONGEST_FIRST) + 1
    return len(LONGEST_FIRST) + (0 if item.get_closest_marker("slow") else 2)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=_run_order)  # stable: the order within a group is pytest's
