"""onnxruntime session options shared by every ONNX model the workflow runs (Kokoro, Piper, DNSMOS).

Spin-waiting follows ``OMP_WAIT_POLICY``, the knob the OpenMP runtimes under torch and CTranslate2
read: with ``PASSIVE``, onnxruntime's threads block while they wait for work instead of spinning
(onnxruntime spins by default). Spinning is fastest when a job has its cores to itself (a local
``snakemake --cores N``, a SLURM allocation); when other busy processes share the cores (two test
workers on two cores, an oversubscribed node) spinning threads take CPU from them. Measured on 2 cores
(Kokoro, one 10 s sentence, 2 threads): alone, blocking costs 2 % wall and saves 10 % CPU; beside one
other busy process it is 12 % faster.
"""

from __future__ import annotations

import os
from typing import Any


def spinning_allowed() -> bool:
    """False when ``OMP_WAIT_POLICY`` is ``PASSIVE`` (any case)."""
    return os.environ.get("OMP_WAIT_POLICY", "").strip().upper() != "PASSIVE"


def cpu_session_options(threads: int) -> Any:
    """``onnxruntime.SessionOptions``: ``threads`` intra-op threads (at least 1), one inter-op thread,
    sequential execution; threads spin while waiting unless :func:`spinning_allowed` says no."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(1, int(threads))
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    spin = "1" if spinning_allowed() else "0"
    options.add_session_config_entry("session.intra_op.allow_spinning", spin)
    options.add_session_config_entry("session.inter_op.allow_spinning", spin)
    return options
