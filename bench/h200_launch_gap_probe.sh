#!/usr/bin/env bash
# Device time with and without the host's launch path, on a GPU host: the harness before the timing change
# (OLD: .carry/bin-old.tar.xz, built from the previous commit: it waited for the L2 flush, so the GPU sat
# idle while Halide's launch path ran between the start event and the kernel) against the current one
# (the flush still running when the call is made), A/B/A/B on the same workloads and variants, PyTorch in
# the same call, then Nsight Compute's duration of the same kernels (the GPU's own clock, no events).
#   usage: OUT=DIR [NAMES="suite:name ..."] [VARIANTS="k3fd ..."] [DETAIL="blocks:mbconv-c24-56-n8 fusednwi"]
#          bench/h200_launch_gap_probe.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, ncu, workload_key
o="${OUT:?set OUT}/gap"; mkdir -p "$o" .carry/old
if [ -f .carry/bin-old.tar.xz ] && [ ! -x .carry/old/blockfuse ]; then
  python3 -c 'import lzma,tarfile,sys; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])' \
      .carry/bin-old.tar.xz .carry/old
fi
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
names="${NAMES:-conv2d:dw3x3-c144-56-n128 conv2d:dw5x5-c240-28-n128 blocks:mbconv-c24-56-n8 blocks:convfirst-c64-56-n8 blocks:mbconv-c24-56-n128}"
variants="${VARIANTS:-k3fd k3fa k5fa k5fe fusednwi fusedspwi layer_by_layer block_cf64_fused_f16}"
: > "$o/suite.txt"; w=$(workload_args "$o/suite.txt" $names)
for run in new_a old_a new_b old_b; do
  b=$bin; [ "${run%_*}" = old ] && b=.carry/old
  timeout 100 "$b/blockfuse" bench $w --variants all --variant $variants --min-seconds 0.3 --out "$o/$run" \
      > "$o/$run.txt" 2>&1
  echo "bench $run rc=$?"
done
timeout 150 python3 bench/pytorch_baseline.py --suite "$o/suite.txt" --out "$o/pytorch.json" > "$o/pytorch.txt" 2>&1
echo "pytorch rc=$?"
# ncu: the GPU's duration of each kernel (one profiled launch per candidate after its warm-up), clocks untouched
timeout 150 "$ncu" --clock-control none --csv --print-units base -k regex:_kernel \
    --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__waves_per_multiprocessor \
    "$bin/blockfuse" bench $w --variants all --variant $variants --single-run --no-ceilings --out "$o/single" \
    > "$o/ncu_duration.csv" 2> "$o/ncu_duration.err"
echo "ncu rc=$?"
# DETAIL="suite:name variant": Nsight Compute's full section set on that one kernel (its second launch)
if [ -n "${DETAIL:-}" ]; then
  set -- $DETAIL; dn="${1#*:}"; dkey=$(workload_key "$1")
  timeout 120 "$ncu" --clock-control none --set full -k regex:_kernel -s 1 -c 1 \
      "$bin/blockfuse" bench --workload "$dkey" --variants all --variant "$2" --single-run --no-ceilings \
      > "$o/ncu_full_${dn}_$2.txt" 2>&1
  echo "ncu full rc=$?"
fi
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
tar -czf "$OUT/gap.tgz" -C "$OUT" gap
