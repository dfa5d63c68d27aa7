#!/usr/bin/env bash
# Depthwise probe on a GPU host: optionally [gpu] tests, every depthwise variant on the two target
# workloads (workloads/depthwise.txt) timed twice (the second run shows the noise), PyTorch eager
# and torch.compile on the same workloads in the same call, and Nsight Compute on chosen variants
# (clocks left alone).
#   usage: [TESTS="[conv2d]"] [VARIANTS="k3fa k5fa ..."] [NCU_VARIANTS="k3fa:3 k5fa:5"] bench/h200_profile_depthwise.sh OUTDIR
# TESTS empty (default): no [gpu] tests. VARIANTS: time only these depthwise variant tags (default:
# every candidate, about 60, which takes over 200 s per run: each gets fresh 115 MB tensors and a
# JIT compile). NCU_VARIANTS: variant tags with the workload (3: dw3x3 c=144, 5: dw5x5 c=240).
set -uo pipefail
out="${1:?usage: bench/h200_profile_depthwise.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
if [ -n "${TESTS:-}" ]; then
  echo "== [gpu] tests $TESTS"; timeout 300 "$bin/test_conv2d_gpu" "$TESTS" 2>&1 | tee "$out/gpu_tests.txt" | tail -3
fi
only=""
for t in ${VARIANTS:-}; do only="$only --variant conv2d_depthwise_${t}_f16_cuda"; done
for run in dw dw_again; do
  echo "== depthwise variants ($run)"
  timeout 280 stdbuf -oL "$bin/blockfuse" bench --suite depthwise --min-seconds 0.3 $only --out "$out/$run" \
      > "$out/bench_$run.txt" 2>&1
  echo "rc=$?"; grep -E "ceil|copy|FFMA" "$out/bench_$run.txt" | head -3
done
echo "== PyTorch"
timeout 120 python3 bench/pytorch_baseline.py --suite workloads/depthwise.txt --out "$out/dw/pytorch.json" \
    > "$out/pytorch_dw.txt" 2>&1
echo "rc=$?"; tail -3 "$out/pytorch_dw.txt"
python3 bench/merge_results.py --ours "$out/dw/results.json" --torch "$out/dw/pytorch.json" \
    --out-md "$out/dw/summary.md" --out-csv "$out/dw/merged.csv" > /dev/null 2>&1
dw3=$(awk '$1 ~ /^dw3x3/ {print $2}' workloads/depthwise.txt)
dw5=$(awk '$1 ~ /^dw5x5/ {print $2}' workloads/depthwise.txt)
for tw in ${NCU_VARIANTS:-}; do
  v="conv2d_depthwise_${tw%%:*}_f16_cuda"
  if [ "${tw##*:}" = 5 ]; then w="$dw5"; else w="$dw3"; fi
  echo "== ncu $v"
  timeout 120 "$ncu" --clock-control none --launch-count 1 -k regex:_kernel_output \
      --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
      --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats \
      "$bin/blockfuse" bench --workload "$w" --variant "$v" --min-samples 1 --min-seconds 0 --no-ceilings > "$out/ncu_$v.txt" 2>&1
  grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Theoretical Occ|Executed Instructions  |Issue Slots Busy" "$out/ncu_$v.txt" | head -10
done
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
