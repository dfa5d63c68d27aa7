#!/usr/bin/env bash
# Packs what a GPU host (a remote machine with the GPU, without Halide or network) needs into
# .carry/carry.tar.xz, for bench/gpu_host.sh there: the CLI, the test binaries and the runtime library
# (stripped), the prebuilt CUDA kernels of the build, and a kernel cache filled here for the runs to come
# (`./run cache fill ... --device cuda`, test_generated with BLOCKFUSE_TEST_FILL_ONLY=1). Kernels are
# shared libraries with PTX inside: xz packs them to a fraction (the carry limit is 64 MiB).
#   usage: tools/prepare-carry.sh [CACHE_DIR]     (default: the kernel cache, BLOCKFUSE_KERNEL_CACHE)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BLOCKFUSE_BUILD_DIR:-$root/build}"
cache="${1:-${BLOCKFUSE_KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/blockfuse/kernels}}"
stage="$root/.carry/stage"
rm -rf "$root/.carry" && mkdir -p "$stage/kernels" "$stage/cache"
git -C "$root" check-ignore -q .carry/carry.tar.xz ||  # .gitignore has it; info/exclude of a worktree is the main one's
    echo '/.carry/' >> "$(git -C "$root" rev-parse --path-format=absolute --git-path info/exclude)"
for f in bench/blockfuse bench/blockfuse_gbench tests/test_conv2d_cuda tests/test_generated tests/test_pool tests/test_conv_nd tests/test_ffn_tc tests/test_mbconv_tc \
         runtime/libblockfuse_runtime.so; do
    [ -f "$build/$f" ] || { echo "prepare-carry: $build/$f is not built (skipped)" >&2; continue; }
    strip -o "$stage/$(basename "$f")" "$build/$f"
done
# CUDA kernels only: the host runs no CPU or PoCL kernel.
for d in "$build/kernels"/*/ "$cache"/*/; do
    [ -f "$d/description.json" ] || continue
    grep -q '"device": "cuda"' "$d/description.json" || continue
    grep -q '"status": "ok"' "$d/description.json" || continue
    case "$d" in "$build/kernels"/*) dest="$stage/kernels" ;; *) dest="$stage/cache" ;; esac
    cp -r "${d%/}" "$dest/"
done
tar -C "$stage" -cf - . | xz -6 -T0 > "$root/.carry/carry.tar.xz"
rm -rf "$stage"
echo "$(find "$build/kernels" -maxdepth 1 -mindepth 1 | wc -l) prebuilt, $(find "$cache" -maxdepth 1 -mindepth 1 -type d | wc -l) cached kernels looked at;" \
     "carry: $(du -h "$root/.carry/carry.tar.xz" | cut -f1)"
