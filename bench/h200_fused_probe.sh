#!/usr/bin/env bash
# A GPU-host pass for the fused MBConv mappings and the kernels never run on a GPU before (stem,
# ConvNeXt): every [gpu] test (also proves the shared-library build runs there), racecheck over
# [blocks], the blocks suite (every strategy and mapping, checked then timed), Nsight Compute's
# full section set on the second launch of several fused mappings (N=8), and the DRAM validation
# of workloads/ncu.txt.
# PyTorch runs in a separate call (bench/pytorch_baseline.py), the device tool's 10-minute limit.
#   usage: bench/h200_fused_probe.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_fused_probe.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
echo "== [gpu] tests"; timeout 150 "$bin/test_conv2d_gpu" 2>&1 | tee "$out/gpu_tests.txt" | tail -3
echo "== racecheck [blocks] [stem]"
timeout 200 "$san" --tool racecheck --error-exitcode 9 "$bin/test_conv2d_gpu" "[blocks],[stem]" > "$out/racecheck.txt" 2>&1
echo "rc=$?"; grep -E "RACECHECK SUMMARY|passed|failed" "$out/racecheck.txt" | tail -3
echo "== blocks suite"
timeout 200 "$bin/blockfuse" bench --suite blocks --min-seconds 0.3 --out "$out/blocks" 2>&1 | tee "$out/bench_blocks.txt" | tail -30
mb8="mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16"
for v in c f h i; do
  timeout 60 "$ncu" --clock-control none --set full -k regex:_kernel --launch-skip 1 --launch-count 1 \
      "$bin/blockfuse" bench --workload "$mb8" --variant "block_mbc24_fused${v}_f16_cuda" --single-run --no-ceilings \
      > "$out/ncu_fused_$v.txt" 2>&1
done
ncu_dram_validation "$out" ncu 150 12
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
