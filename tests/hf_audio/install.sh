#!/usr/bin/env bash
# A side environment in which `datasets` decodes Audio cells itself, for tests/publish/test_publish.py's decoding check.
#
# `datasets` decodes Audio with torchcodec, and PyPI's torchcodec wheels are linked against PyPI's torch (its CUDA
# build: libtorch_cuda, libnvrtc; it runs on a CPU-only machine). The project's .venv holds torch's CPU wheel
# (Makefile), against which torchcodec cannot load, so the decoding check runs in this second venv: PyPI's torch,
# torchcodec, and the same `datasets` release as .venv. This machine's pip finds the CPU torch (2.13.0+cpu) on
# its find-links first, so the install asks PyPI's index alone (--isolated drops the machine's pip config).
# About 5 GB and 2-3 minutes; idempotent: a rerun with the environment in place (and decoding) returns at once.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${HF_AUDIO_VENV:-.venv-hfaudio}"
MAIN="${VENV_MAIN:-.venv}"
TORCH=2.13.0       # the project's torch release (Makefile)
TORCHCODEC=0.17.0  # the torchcodec release built against it

# torchcodec loads the system's FFmpeg shared libraries (it bundles none). Debian's chromium once pulled them in;
# its current build does not, so they are installed here by name (bookworm: FFmpeg 5.1, torchcodec's core5).
FFMPEG_LIBS=(libavutil57 libavcodec59 libavformat59 libavdevice59 libavfilter8 libswscale6 libswresample4)
if ! ldconfig -p | grep -q 'libavdevice\.so\.'; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "hf audio env: installing FFmpeg's shared libraries (${FFMPEG_LIBS[*]})"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${FFMPEG_LIBS[@]}" >/dev/null
fi

# Ready means decoding works: importing torchcodec does not load FFmpeg, decoding one second of silence does.
decodes() {
  "$VENV/bin/python" - <<'PY'
import io, wave
import datasets, soundfile, torchcodec
from torchcodec.decoders import AudioDecoder
buf = io.BytesIO()
with wave.open(buf, "wb") as w:
    w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000); w.writeframes(b"\0\0" * 16000)
n = AudioDecoder(buf.getvalue()).get_all_samples().data.shape[-1]
assert n == 16000, n
print("hf audio env:", datasets.__version__, "torchcodec", torchcodec.__version__, "decodes with FFmpeg")
PY
}

if [ -x "$VENV/bin/python" ] && decodes 2>/dev/null; then
  exit 0
fi
DATASETS=$("$MAIN/bin/python" -c "import datasets; print(datasets.__version__)")
SOUNDFILE=$("$MAIN/bin/python" -c "import soundfile; print(soundfile.__version__)")
# The install unpacks about 5 GB (torch's CUDA build and its nvidia-* wheels); say so before pip fails half-way.
NEED_KB=$((7 * 1024 * 1024))
FREE_KB=$(df -Pk "$(dirname "$(realpath -m "$VENV")")" | awk 'NR == 2 {print $4}')
if [ "$FREE_KB" -lt "$NEED_KB" ]; then
  echo "hf audio env: $((FREE_KB / 1024)) MiB free beside $VENV; the install needs about 7 GiB" >&2
  exit 1
fi
python3 -m venv "$VENV"
cert=()
if [ -n "${PIP_CERT:-}" ]; then cert=(--cert "$PIP_CERT"); fi
"$VENV/bin/pip" install --quiet --isolated --no-cache-dir --disable-pip-version-check "${cert[@]}" --index-url "${HF_AUDIO_INDEX:-https://pypi.org/simple}" \
  "torch==$TORCH" "torchcodec==$TORCHCODEC" "datasets==$DATASETS" "soundfile==$SOUNDFILE"
decodes
