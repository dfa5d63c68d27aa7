#!/usr/bin/env bash
# Bad knobs given to the GEMM generator (a variant of schedules/variants/gemm.json, or a kernel generated on
# demand): a non-zero exit and a message naming the knob, not a Halide internal error; a valid set still generates.
set -u
gen="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common="-g gemm -e stmt -o $out target=host-cuda-cuda_capability_80-no_runtime storage=float16"
source "$(dirname "${BASH_SOURCE[0]}")/generator_expect.sh"  # expect, fail
expect "warp_m = 20 must be a positive multiple of 16" warp_m=20
expect "warp_n = 12 must be a positive multiple of 8" warp_n=12
expect "k_step = 24 must be a positive multiple of 16" k_step=24
expect "pad = 4 must be a non-negative multiple of 8" pad=4
expect "warps_m * warps_n = 64 exceeds 32 warps per block" warps_m=8 warps_n=8
expect "storage must be float16 or bfloat16" storage=float32
expect "prefetch = 2 must be 0 or 1" prefetch=2
expect "stages = 9 must be 1 to 8" stages=9
expect "stages = 3 with prefetch = 1: the cp.async ring replaces the register prefetch" stages=3 prefetch=1
common="-g gemm -e stmt -o $out target=host-opencl-no_runtime storage=float16"
expect "prefetch = 1 and stages > 1 are for CUDA and the CPU" prefetch=1
expect "prefetch = 1 and stages > 1 are for CUDA and the CPU" stages=2
common="-g gemm -e stmt -o $out target=host-cuda-cuda_capability_80-no_runtime storage=float16"
# shellcheck disable=SC2086  # $common: the generator's arguments, one word each
"$gen" $common warp_m=16 warp_n=16 warps_m=1 warps_n=1 k_step=16 > /dev/null 2>&1 ||
    { echo "FAIL: a valid small tiling did not generate"; fail=1; }
exit $fail
