#!/usr/bin/env bash
# A CUDA variant's block size must be the constant the runtime's registry gives it (KernelVariant::threads_per_block:
# threads_k x threads_x, or flat_threads): the launch checker and the register cap it loads the kernel with
# (runtime/kernel_registry.cpp) both count on it. Generates the variant's lowered statement and checks every kernel
# launch in it (halide_cuda_run's three thread extents) against that number, read from `blockfuse info`.
#   usage: cuda_block_size.sh GENERATOR BLOCKFUSE VARIANT generator-args...
set -u
gen="$1"; bf="$2"; variant="$3"; shift 3
want=$("$bf" info | awk -v v="$variant" '$1 == v {sub("threads=", "", $5); print $5}')
[[ "$want" =~ ^[1-9][0-9]*$ ]] || { echo "FAIL: $variant: no threads per block in 'blockfuse info' (got '$want')"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! msg=$("$gen" -n v -e stmt -o "$out" target=host-cuda-cuda_capability_80-no_runtime "$@" 2>&1); then
    echo "FAIL: the generator failed: $msg"; exit 1
fi
launches=$(grep -a -o 'halide_cuda_run(cuda\[0\], "[A-Za-z_0-9]*", [^,]*, [^,]*, [^,]*, [^,]*, [^,]*, [^,]*,' "$out/v.stmt")
[ -n "$launches" ] || { echo "FAIL: no CUDA launch found in the statement"; exit 1; }
fail=0
while IFS= read -r l; do
    name=$(cut -d'"' -f2 <<<"$l")
    IFS=', ' read -r -a f <<<"$(cut -d'"' -f3 <<<"$l" | sed 's/^, //; s/,$//')"
    tx=${f[3]}; ty=${f[4]}; tz=${f[5]}
    if ! [[ "$tx$ty$tz" =~ ^[0-9]+$ ]]; then
        echo "FAIL: $name: block size ($tx, $ty, $tz) depends on the shape"; fail=1
    elif [ $((tx * ty * tz)) -ne "$want" ]; then
        echo "FAIL: $name: block of $tx x $ty x $tz threads, the registry gives $want"; fail=1
    else
        echo "ok: $name: $tx x $ty x $tz"
    fi
done <<<"$launches"
exit $fail
