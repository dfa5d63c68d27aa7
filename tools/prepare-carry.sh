#!/usr/bin/env bash
# Copies what a GPU host needs into .carry/ (ignored by git; name it in the device tool's `carry`):
# the CLI, the CUDA test binary and the shared library with every kernel, stripped. The binaries
# find the library beside themselves ($ORIGIN run path).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BLOCKFUSE_BUILD_DIR:-$root/build}"
mkdir -p "$root/.carry"
grep -qx '/.carry/' "$root/.git/info/exclude" 2>/dev/null || echo '/.carry/' >> "$root/.git/info/exclude"
for f in bench/blockfuse tests/test_conv2d_gpu runtime/libblockfuse_runtime.so; do
    strip -o "$root/.carry/$(basename "$f")" "$build/$f"
done
du -sh "$root/.carry"
