#!/usr/bin/env bash
# A side environment in which `datasets` decodes Audio cells itself, for tests/test_publish.py's decoding check.
#
# `datasets` decodes Audio with torchcodec, and PyPI's torchcodec wheels are linked against PyPI's torch (its CUDA
# build: libtorch_cuda, libnvrtc; it runs on a CPU-only machine). The project's .venv holds torch's CPU wheel
# (Makefile), against which torchcodec cannot load, so the decoding check runs in this second venv: PyPI's torch,
# torchcodec, and the same `datasets` release as .venv. This machine's pip finds the CPU torch (2.13.0+cpu) on
# its find-links first, so the install asks PyPI's index alone (--isolated drops the machine's pip config).
# About 5 GB and 2-3 minutes; idempotent: a rerun with the environment in place returns at once.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${HF_AUDIO_VENV:-.venv-hfaudio}"
MAIN="${VENV_MAIN:-.venv}"
TORCH=2.13.0       # the project's torch release (Makefile)
TORCHCODEC=0.17.0  # the torchcodec release built against it

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import torchcodec.decoders, datasets, soundfile" 2>/dev/null; then
  echo "hf audio env: $VENV ready"
  exit 0
fi
DATASETS=$("$MAIN/bin/python" -c "import datasets; print(datasets.__version__)")
SOUNDFILE=$("$MAIN/bin/python" -c "import soundfile; print(soundfile.__version__)")
python3 -m venv "$VENV"
cert=()
if [ -n "${PIP_CERT:-}" ]; then cert=(--cert "$PIP_CERT"); fi
"$VENV/bin/pip" install --quiet --isolated --disable-pip-version-check "${cert[@]}" --index-url "${HF_AUDIO_INDEX:-https://pypi.org/simple}" \
  "torch==$TORCH" "torchcodec==$TORCHCODEC" "datasets==$DATASETS" "soundfile==$SOUNDFILE"
"$VENV/bin/python" -c "import torchcodec.decoders, datasets; print('hf audio env:', datasets.__version__, 'torchcodec', torchcodec.__version__)"
