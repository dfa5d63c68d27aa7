#!/usr/bin/env bash
# Installs what blockfuse needs, idempotently:
#  - Debian packages (test/bench libraries, PoCL for running the GPU schedules on CPU in CI, clang-format
#    and shellcheck for tools/lint.sh)
#  - a project venv (.venv) holding Halide 21.0.0, cmake, ninja and matplotlib from PyPI, and the tools of
#    the checks: ruff (tools/lint.sh) and jsonschema (tests/python/test_results_schema.py).
#  - with --anchors: also ONNX Runtime (CPU) and onnx, the CPU baseline's (bench/onnxruntime_baseline.py)
#  - with --torch: also PyTorch and torchvision from PyPI (their Linux wheels are CUDA builds and bring the CUDA
#    libraries: about 5.4 GB; they run on the CPU without a GPU) for tests/python_torch (blockfuse.torch). Where
#    the disk has too little room or the install fails, a line says so and that test reports itself skipped.
# Why PyPI Halide: it is the current release and ships the C++ library + CMake package;
# Debian's Halide 14 is only the documented fallback (docs/halide-21.md).
set -euo pipefail
anchors=0 torch=0
for a in "$@"; do
  case "$a" in
    --anchors) anchors=1 ;;
    --torch) torch=1 ;;
    *) echo "install-deps.sh: unknown option '$a' (known: --anchors, --torch)" >&2; exit 2 ;;
  esac
done
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HALIDE_VERSION="21.0.0"
DEB_PKGS=(catch2 libbenchmark-dev nlohmann-json3-dev libcli11-dev libfmt-dev libxxhash-dev
          pocl-opencl-icd ocl-icd-opencl-dev build-essential python3-venv clang-format shellcheck)

missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[install] Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

venv="$here/.venv"
stamp="$venv/.blockfuse-deps-halide-$HALIDE_VERSION"
# A venv made before the checks' tools were added gains them without being remade.
tools_stamp="$venv/.blockfuse-deps-tools-1"
if [ ! -f "$stamp" ]; then
  echo "[install] Python venv at .venv (halide==$HALIDE_VERSION, cmake, ninja, matplotlib)"
  PY="${PYTHON:-python3}"
  "$PY" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "halide==$HALIDE_VERSION" "cmake>=3.28" ninja matplotlib numpy
  touch "$stamp"
fi
if [ ! -f "$tools_stamp" ]; then
  echo "[install] ruff and jsonschema into .venv"
  "$venv/bin/pip" install -q "ruff==0.17.*" "jsonschema==4.*"
  touch "$tools_stamp"
fi

if ((anchors)) && ! "$venv/bin/python" -c 'import onnxruntime, onnx' 2>/dev/null; then
  echo "[install] ONNX Runtime (CPU) and onnx into .venv"
  "$venv/bin/pip" install -q onnxruntime onnx
fi

if ((torch)) && ! "$venv/bin/python" -c 'import torch, torchvision' 2>/dev/null; then
  need_gb=8  # the wheels unpacked (5.4 GB) and pip's unpacking room
  free_gb=$(df -P -BG "$venv" | awk 'NR == 2 { sub("G", "", $4); print $4 }')
  if ((free_gb < need_gb)); then
    echo "[install] PyTorch NOT installed: ${free_gb} GB free for .venv, it needs ${need_gb} (python_torch will be skipped)"
  else
    echo "[install] PyTorch and torchvision into .venv (PyPI; about 5.4 GB)"
    "$venv/bin/pip" install -q --no-cache-dir torch torchvision ||
      echo "[install] PyTorch NOT installed: pip failed (above; python_torch will be skipped)"
  fi
fi
