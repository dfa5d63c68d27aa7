#!/usr/bin/env bash
# Halide's CUDA JIT register cap (64 per thread by default) against blockfuse's per-variant cap
# (the most each block size allows), on a GPU host: the [gpu] tests under the new cap, then the
# blocks suite and the workloads/ncu.txt suite (depthwise, pointwise, full conv, fused MBConv)
# timed with each cap (auto twice, to know the run-to-run noise), and Nsight Compute on the best
# fused MBConv mapping under each cap.
#   usage: bench/h200_registers.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_registers.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
echo "== [gpu] tests"; timeout 150 "$bin/test_conv2d_gpu" 2>&1 | tee "$out/gpu_tests.txt" | tail -2
for run in auto:0 r64:64 auto2:0; do
  tag=${run%%:*}; regs=${run##*:}
  echo "== blocks, --max-registers $regs ($tag)"
  timeout 150 "$bin/blockfuse" bench --suite blocks --max-registers "$regs" --min-seconds 0.3 --out "$out/blocks_$tag" \
      > "$out/bench_blocks_$tag.txt" 2>&1; grep -E "mbconv-c24-56-n128|stem" "$out/bench_blocks_$tag.txt" | sort -k5 -n | head -5
  echo "== ncu suite, --max-registers $regs ($tag)"
  timeout 100 "$bin/blockfuse" bench --suite ncu --max-registers "$regs" --min-seconds 0.2 --no-ceilings --out "$out/conv_$tag" \
      > "$out/bench_conv_$tag.txt" 2>&1; tail -3 "$out/bench_conv_$tag.txt"
done
mb8="mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16"
for regs in 0 64; do
  timeout 60 "$ncu" --clock-control none --set full -k regex:_kernel --launch-skip 1 --launch-count 1 \
      "$bin/blockfuse" bench --workload "$mb8" --variant block_mbc24_fusedj_f16_cuda --max-registers $regs --single-run --no-ceilings \
      > "$out/ncu_fusedj_r$regs.txt" 2>&1
  grep -E "^\s+(Duration|Registers Per Thread|Achieved Occupancy|Local Memory Spilling Requests) " "$out/ncu_fusedj_r$regs.txt"
done
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
