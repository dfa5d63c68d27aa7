#!/usr/bin/env bash
# Packs what a GPU host needs into .carry/bin.tar.gz (ignored by git; name .carry in the device
# tool's `carry`): the CLI, the CUDA test binary and the shared library with every kernel,
# stripped and gzipped (the kernels' PTX is text: 70 MB -> 15 MB, under the tool's 64 MiB).
# On the host, `tar -xzf .carry/bin.tar.gz -C .carry` puts them back beside each other (the
# binaries find the library through their $ORIGIN run path).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BLOCKFUSE_BUILD_DIR:-$root/build}"
rm -rf "$root/.carry" && mkdir -p "$root/.carry/stage"
grep -qx '/.carry/' "$root/.git/info/exclude" 2>/dev/null || echo '/.carry/' >> "$root/.git/info/exclude"
for f in bench/blockfuse tests/test_conv2d_gpu runtime/libblockfuse_runtime.so; do
    strip -o "$root/.carry/stage/$(basename "$f")" "$build/$f"
done
tar -C "$root/.carry/stage" -cf - . | gzip -6 > "$root/.carry/bin.tar.gz"
rm -rf "$root/.carry/stage"
du -sh "$root/.carry"
