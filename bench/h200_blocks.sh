#!/usr/bin/env bash
# The fused-block run on a GPU host, in one go: GPU context, the CUDA block tests ([blocks]),
# compute-sanitizer memcheck and racecheck over them, the blocks suite (each strategy checked then
# timed) and PyTorch eager / torch.compile on the same workloads, merged into one table.
#   usage: bench/h200_blocks.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_blocks.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
echo "== [blocks] tests"; timeout 120 "$bin/test_conv2d_gpu" "[blocks]" 2>&1 | tee "$out/gpu_tests_blocks.txt" | tail -3
for tool in memcheck racecheck; do
  echo "== compute-sanitizer $tool"
  timeout 150 "$san" --tool "$tool" --error-exitcode 9 "$bin/test_conv2d_gpu" "[blocks]" > "$out/sanitizer_$tool.txt" 2>&1
  echo "rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|Error|Hazard" "$out/sanitizer_$tool.txt" | head -5
done
echo "== blocks suite"
timeout 200 "$bin/blockfuse" bench --suite blocks --min-seconds 0.3 --out "$out/blocks" 2>&1 | tee "$out/bench_blocks.txt" | tail -12
echo "== PyTorch"
timeout 200 python3 bench/pytorch_baseline.py --suite workloads/blocks.txt --out "$out/blocks/pytorch.json" > "$out/pytorch_blocks.txt" 2>&1
tail -14 "$out/pytorch_blocks.txt"
python3 bench/merge_results.py --ours "$out/blocks/results.json" --torch "$out/blocks/pytorch.json" \
    --out-md "$out/blocks/summary.md" --out-csv "$out/blocks/merged.csv" > /dev/null 2>&1
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
