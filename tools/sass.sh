#!/usr/bin/env bash
# Registers, spills and the inner-loop instruction mix of a Halide CUDA kernel's SASS (tools/sass_mix.py).
# Works without a GPU: the CUDA toolkit's ptxas compiles the kernel's PTX, and cuobjdump/nvdisasm
# (installed into the project's .venv from PyPI on first use) disassemble it.
#   usage: tools/sass.sh KERNEL.s [--arch sm_90] [--maxrregcount N] [--keep DIR]
# KERNEL.s: the kernel's Halide assembly, from a build configured with -DBLOCKFUSE_EMIT_STMT=ON or
# from a generator run by hand, e.g.
#   build/generators/block.generator -g block -e assembly -o /tmp/k target=host-cuda-cuda_capability_80-no_runtime \
#       storage=float16 family=ffn channels=256 expansion=4 kernel_size=1 strategy=layer_by_layer
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
[ -x "$venv/bin/python" ] || { echo "error: $venv missing: run ./run build first" >&2; exit 2; }
pkgs="$venv/lib/python3*/site-packages/nvidia/cu13/bin"
# shellcheck disable=SC2086  # $pkgs is a glob (python3*), expanded here on purpose
if ! ls $pkgs/nvdisasm $pkgs/cuobjdump > /dev/null 2>&1; then
  echo "[install] cuobjdump and nvdisasm from PyPI into .venv" >&2
  "$venv/bin/pip" install -q nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
fi
# shellcheck disable=SC2012,SC2086  # the first directory the glob names
bindir=$(ls -d $pkgs | head -1)
chmod +x "$bindir"/* 2> /dev/null || true
export PATH="$bindir:/usr/local/cuda/bin:$PATH"
exec "$venv/bin/python" "$root/tools/sass_mix.py" "$@"
