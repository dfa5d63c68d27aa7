#!/usr/bin/env bash
# The fused MBConv mappings of every MBConv configuration of the blocks suite against each other and
# against layer by layer, on a GPU host: the [gpu] tests of TAGS (default [blocks]: every block variant
# against float64), the MBConv workloads with every candidate (--variants all: each layer-by-layer mapping
# too), checked then timed, the whole run twice to see the noise; then compute-sanitizer racecheck and
# memcheck over the same tests. NAMES picks other workloads of workloads/blocks.txt (or SUITE:NAME of another
# suite file, e.g. conv2d:highres), VARIANTS a subset of
# the candidates (bench --variant: substrings of the variant name or strategy). Tarred into $OUT/sweep.tgz.
#   usage: OUT=DIR [NAMES="name ..."] [VARIANTS="fusedspw layer_by_layer ..."] [TAGS="[blocks],[stages]"]
#          [SAN_LIMIT=150] bench/h200_fused_sweep.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu, workload_key
o="${OUT:?set OUT}/sweep"; mkdir -p "$o"
tags="${TAGS:-[blocks]}"
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
timeout 150 "$bin/test_conv2d_gpu" "$tags" > "$o/gpu_tests.txt" 2>&1; echo "tests $tags rc=$?"; tail -2 "$o/gpu_tests.txt"
w=$(workload_args - ${NAMES:-mbconv-c16-112-n128 mbconv-c24-56-n128 mbconv-c40-28-n128 mbconv-c80-14-n128 mbconv-c24-56-n8})
for run in a b; do
  timeout 240 "$bin/blockfuse" bench $w --variants all ${VARIANTS:+--variant $VARIANTS} --min-seconds 0.2 \
      --out "$o/bench_$run" > "$o/bench_$run.txt" 2>&1
  echo "bench $run rc=$?"
done
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
TAGS="$tags" LIMIT="${SAN_LIMIT:-150}" bash bench/h200_sanitize.sh "$o/sanitize" > /dev/null 2>&1; cat "$o/sanitize/summary.txt"
tar -czf "$OUT/sweep.tgz" -C "$OUT" sweep && rm -rf "$o"
