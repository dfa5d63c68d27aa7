#!/usr/bin/env bash
# The fused MBConv mappings of every MBConv configuration of the blocks suite against each other and
# against layer by layer, on a GPU host: the [blocks] [gpu] tests (every block variant against float64),
# compute-sanitizer racecheck and memcheck over them, then the five MBConv workloads with every candidate
# (--variants all: each layer-by-layer mapping too), checked then timed, the whole run twice to see the
# noise. NAMES picks other workloads of workloads/blocks.txt. Tarred into $OUT/sweep.tgz.
#   usage: OUT=DIR [NAMES="name ..."] bench/h200_fused_sweep.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu, workload_key
o="${OUT:?set OUT}/sweep"; mkdir -p "$o"
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
timeout 150 "$bin/test_conv2d_gpu" "[blocks]" > "$o/gpu_tests_blocks.txt" 2>&1; echo "tests rc=$?"; tail -2 "$o/gpu_tests_blocks.txt"
TAGS="[blocks]" LIMIT=150 bash bench/h200_sanitize.sh "$o/sanitize" > /dev/null 2>&1; cat "$o/sanitize/summary.txt"
w=""
for name in ${NAMES:-mbconv-c16-112-n128 mbconv-c24-56-n128 mbconv-c40-28-n128 mbconv-c80-14-n128 mbconv-c24-56-n8}; do
  w="$w --workload $(workload_key $name)"
done
for run in a b; do
  timeout 240 "$bin/blockfuse" bench $w --variants all --min-seconds 0.2 --out "$o/bench_$run" > "$o/bench_$run.txt" 2>&1
  echo "bench $run rc=$?"
done
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
tar -czf "$OUT/sweep.tgz" -C "$OUT" sweep && rm -rf "$o"
