#!/usr/bin/env bash
# The two L2 flushes side by side on a GPU host (runtime/timing.h): each sample after a memset of
# 2x the L2 ("write", left dirty: what triton.testing.do_bench does) or after a read-only eviction
# ("read", clean), ours and PyTorch (bench/pytorch_baseline.py --l2-flush) under each, in the order
# write, read, write, read so drift shows. Workloads: the depthwise targets, Conv3x3-BN-ReLU, MBConv
# c=24 (layer by layer and fused) and the FFN: memory-bound to compute-bound.
#   usage: bench/h200_flush_probe.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_flush_probe.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
{
  grep -E "^dw(3x3|5x5)" workloads/depthwise.txt
  grep -E "^(conv3x3-bn-relu-c64-56-n128|mbconv-c24-56-n128|ffn-c256-p25088) " workloads/blocks.txt
} > "$out/suite.txt"
variants=""
for v in conv2d_depthwise_k3fd_f16_cuda conv2d_depthwise_k5fa_f16_cuda conv2d_depthwise_k5fw_f16_cuda \
         conv2d_general_c_f16_cuda block_mbc24_layer_by_layer_f16_cuda block_mbc24_fusedk_f16_cuda \
         block_ffn256_layer_by_layer_sx_f16_cuda; do variants="$variants --variant $v"; done
for run in write_1 read_1 write_2 read_2; do
  flush=${run%_*}
  echo "== ours, --l2-flush $flush ($run)"
  timeout 70 "$bin/blockfuse" bench --suite "$out/suite.txt" $variants --l2-flush "$flush" --min-seconds 0.3 \
      --out "$out/ours_$run" > "$out/bench_$run.txt" 2>&1
  echo "rc=$?"; grep -E "_cuda" "$out/bench_$run.txt" | awk '{print $1, $2, $3, $4}' | sed 's/  */ /g'
done
for flush in write read; do
  echo "== PyTorch, --l2-flush $flush"
  timeout 100 python3 bench/pytorch_baseline.py --suite "$out/suite.txt" --l2-flush "$flush" --out "$out/pytorch_$flush.json" \
      > "$out/pytorch_$flush.txt" 2>&1
  echo "rc=$?"; grep -E " ok| FAIL|error" "$out/pytorch_$flush.txt" | head -8
  python3 bench/merge_results.py --ours "$out/ours_${flush}_1/results.json" --torch "$out/pytorch_$flush.json" \
      --out-md "$out/ours_${flush}_1/summary.md" --out-csv "$out/ours_${flush}_1/merged.csv" > /dev/null 2>&1
done
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
