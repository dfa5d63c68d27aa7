#!/usr/bin/env bash
# Bad schedule knobs given to the block generator (as a new add_halide_library variant or a hand-run generator would):
# each case must fail with a non-zero exit and a message naming the knob and why, not a Halide internal error.
set -u
gen="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common="-g block -e stmt -o $out target=host-cuda-cuda_capability_80-no_runtime storage=float16 family=mbconv
        channels=24 expansion=6 kernel_size=3 stride=1 act=2"
source "$(dirname "${BASH_SOURCE[0]}")/generator_expect.sh"  # expect, fail
expect "input_vec = 5 must divide the input channels (24)" strategy=fused input_vec=5
expect "hidden_vec = 3 must divide the chunk (8)" strategy=fused chunk=8 hidden_vec=3
# full_vec on ConvFirst c=24 (its grouped 3x3 layer is full width: 24 channels)
common="${common/family=mbconv/family=convfirst}" expect "full_vec = 5 must divide the channels (24)" strategy=fused full_vec=5
expect "unroll_staging needs stage_weights" strategy=fused unroll_staging=1
expect "stage_weights = 3 must be 0, 1 or 2" strategy=fused stage_weights=3
expect "stage_padded applies to the fused strategy only" strategy=depth_first blocks=3 stage_padded=1
# SE's partial-sum kernel: chunk x tile_x threads (48 x 32), past the 1024 a block may have
expect "1536 threads per block (the largest kernel of this mapping, with SE's partial sums chunk x tile_x) exceed 1024" \
    strategy=fused se=1 chunk=48 tile_x=32 tile_y=4 vec_k=4
# The CPU schedules' layer mappings (layer by layer on the host): a register tile past the vector registers, a zero knob
cpu="${common/target=host-cuda-cuda_capability_80-no_runtime/target=host-no_runtime}"
common="$cpu" expect "pw_ mapping: cpu_vec_k*cpu_tile_x*cpu_tile_y = 224 accumulator vectors exceed 32" \
    strategy=layer_by_layer pw_cpu_vec_k=4 pw_cpu_tile_x=14 pw_cpu_tile_y=4
common="$cpu" expect "layer_ mapping: cpu_rows = 0 must be at least 1" strategy=layer_by_layer layer_cpu_rows=0
# and a valid one still generates, so the cases above fail for their knob, not for the command line
# shellcheck disable=SC2086  # $common: the generator's arguments, one word each
"$gen" $common strategy=fused input_vec=8 stage_padded=1 > /dev/null 2>&1 || { echo "FAIL: a valid input_vec=8 did not generate"; fail=1; }
exit $fail
