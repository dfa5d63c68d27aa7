#!/usr/bin/env bash
# Bad input through ./run: each case must exit 2 with one 'error:' line naming what is wrong,
# and never a crash or a raw Halide error.
set -u
run="$1"
fail=0
expect() {  # expect <substring> <args...>
    local want="$1"; shift
    local out rc
    out=$("$run" "$@" 2>&1); rc=$?
    if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out" || [ "$(grep -c '^error:' <<<"$out")" -ne 1 ]; then
        echo "FAIL: ./run $* -> rc=$rc, output: $out"; fail=1
    else
        echo "ok: ./run $* -> $out"
    fi
}
expect "missing field 'k'" check "conv2d:n=1,c=8,h=4,w=4,r=3,s=3"
expect "field 'groups' = 3 does not divide c = 8" check "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,groups=3"
expect "field 'dtype' = 'f64' is not supported" check "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,dtype=f64"
expect "empty output" check "conv2d:n=1,c=8,h=1,w=1,k=8,r=3,s=3"
expect "no ':' found" check "garbage"
expect "field 'w' = 0 must be positive" bench --workload "conv2d:n=1,c=8,h=4,w=0,k=8,r=3,s=3"
expect "unknown suite 'nosuchsuite'" bench --suite nosuchsuite
expect "--dtype 'f8' is not supported" bench --suite conv2d --dtype f8
expect "a stage (blocks = 3) needs stride 1" bench --workload "mbconv:n=1,c=8,h=9,w=9,e=2,stride=2,blocks=3"
expect "field 'blocks' = 9 must be 1 to 4" check "mbconv:n=1,c=8,h=4,w=4,e=2,blocks=9"
expect "--strategies 'fast' is not one of layer_by_layer, fused, depth_first, layer_by_layer_tc, fused_tc, direct" bench --workload "mbconv:n=1,c=8,h=9,w=9,e=2" --strategies fast
expect "tuning records '/nonexistent/records.jsonl': no such file" bench --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --tuning-records /nonexistent/records.jsonl
bad_records=$(mktemp)
echo '{"version": 2, "workload": "conv2d:n=1,c=8", "strategy": "direct", "family": "conv2d", "knobs": {}, "target": "cpu", "halide_version": "21.0.0", "median_ms": 1}' > "$bad_records"
expect "line 1: invalid workload" bench --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --tuning-records "$bad_records"
echo '{"workload": "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3", "target": "cpu", "variant": "x", "median_ms": 1}' > "$bad_records"
expect "line 1: not a version 2 or 3 record" bench --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --tuning-records "$bad_records"
rm -f "$bad_records"
# Kernels on demand: a strategy the workload does not have, a knob the schedule does not declare, a bad device.
expect "strategy 'depth_first' does not apply" generate "mbconv:n=1,c=8,h=9,w=9,e=2" --strategy depth_first --out /tmp
expect "'tile_q' is not a knob of the block" generate "mbconv:n=1,c=8,h=9,w=9,e=2" --strategy fused --knob tile_q=4 --out /tmp
expect "--knob 'tile_x' is not name=integer" generate "mbconv:n=1,c=8,h=9,w=9,e=2" --knob tile_x --out /tmp
expect "--device 'tpu' is not one of" generate "mbconv:n=1,c=8,h=9,w=9,e=2" --device tpu --out /tmp
# Halide's autoschedulers: an unknown one, and one the device is not scheduled by.
expect "--autoscheduler 'Adams2020' is not one of" bench --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --autoscheduler Adams2020
expect "--autoscheduler Anderson2021 schedules GPUs only" bench --device cpu --no-ceilings --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --autoscheduler Anderson2021
expect "--strategies: none of them applies" bench --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --strategies fused
expect "nothing to fill" cache fill --device cpu
expect "--autoscheduler 'Adams2020' is not one of" cache fill --device cuda --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --autoscheduler Adams2020
expect "--autoscheduler Mullapudi2016 schedules CPUs only" cache fill --device cuda --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --autoscheduler Mullapudi2016
# A workload the autoscheduler cannot take (the stem gives no shape estimates) is named, the others' kernels still
# fill (here the stem's own), and the fill exits 1.
fill_dir=$(mktemp -d)
out=$("$run" cache fill --device cuda --gpu "NVIDIA H200:sm_90" --into "$fill_dir" --variants default --no-tuning-records \
      --workload "stem:n=1,h=9,w=7,c=3,k=16,dtype=f16" --autoscheduler Anderson2021 2>&1); rc=$?
if [ "$rc" -ne 1 ] || ! grep -qF "stem: --autoscheduler: the stem generator gives the autoschedulers no shape estimates" <<<"$out" ||
   ! grep -qF "1 workloads had no autoscheduled kernel" <<<"$out" || ! grep -qE "[1-9][0-9]* generated" <<<"$out"; then
    echo "FAIL: cache fill past a workload Anderson2021 cannot take -> rc=$rc, output: $out"; fail=1
else
    echo "ok: cache fill past a workload Anderson2021 cannot take -> $out"
fi
rm -rf "$fill_dir"
expect "results '/nonexistent/results.json': no such file" records --from /nonexistent/results.json --out /dev/null
expect "field 'dtype' = 'f32' is not supported by the tensor-core GEMM" check "gemm:m=8,n=8,k=8,dtype=f32"
expect "field 'k' = 0 must be positive" bench --workload "gemm:m=8,n=8,k=0"
expect "'bogus' is not a knob of the gemm GPU schedules" generate "gemm:m=8,n=8,k=8" --device cuda --knob bogus=1 --out /tmp
# Knobs the schedule declares but this workload's kernel cannot take: the tuner's check, before Halide's own error.
expect "stage_input=1 (the window in registers) does not build for a grouped conv2d" generate \
    "conv2d:n=3,c=48,h=9,w=9,k=48,r=3,s=3,pad=1,groups=6" --strategy direct --device cuda --knob stage_input=1 \
    --knob flat_threads=0 --knob stage_channels=0 --out /tmp
exit $fail
