#!/usr/bin/env bash
# A schedule fix re-checked on a GPU host, in one call: compute-sanitizer memcheck and racecheck over the [gpu]
# tests of TAGS narrowed to the changed kernels (SAN_VARIANTS, comma-separated substrings), then the workloads
# NAMES (SUITE:NAME, e.g. conv2d:highres) timed twice with the candidates whose names contain one of
# BENCH_VARIANTS (space-separated), then PyTorch eager and torch.compile on the same workloads. Tarred into
# $OUT/recheck.tgz. CHECK=tests runs the narrowed tests without the sanitizers (a first look at many new kernels;
# each one that stays needs its clean sanitizer run).
#   usage: [CHECK=tests] OUT=DIR TAGS="[conv2d]" SAN_VARIANTS="general_c,general_d" NAMES="conv2d:highres ..."
#          BENCH_VARIANTS="general ..." [SAN_LIMIT=150] [BENCH_LIMIT=120] [TORCH_TIMEOUT=150] bench/h200_recheck.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, workload_key
o="${OUT:?set OUT}/recheck"; mkdir -p "$o"
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
if [ "${CHECK:-sanitize}" = tests ]; then  # a first look at many new kernels: the tests without the sanitizers
  BLOCKFUSE_TEST_VARIANTS="${SAN_VARIANTS:?}" timeout "${SAN_LIMIT:-150}" "$bin/test_conv2d_gpu" "${TAGS:?}" > "$o/gpu_tests.txt" 2>&1
  echo "gpu tests ${TAGS} (variants: ${SAN_VARIANTS}): rc=$?"; tail -3 "$o/gpu_tests.txt"
else
  TAGS="${TAGS:?}" VARIANTS="${SAN_VARIANTS:?}" LIMIT="${SAN_LIMIT:-150}" bash bench/h200_sanitize.sh "$o/sanitize" > /dev/null 2>&1
  cat "$o/sanitize/summary.txt"
fi
: > "$o/suite.txt"; w=$(workload_args "$o/suite.txt" ${NAMES:?})
for run in a b; do
  timeout "${BENCH_LIMIT:-120}" "$bin/blockfuse" bench $w --variants all --variant ${BENCH_VARIANTS:?} --min-seconds 0.3 --out "$o/bench_$run" \
      > "$o/bench_$run.txt" 2>&1
  echo "bench $run rc=$?"
done
timeout "${TORCH_TIMEOUT:-150}" python3 bench/pytorch_baseline.py --suite "$o/suite.txt" --out "$o/pytorch.json" > "$o/pytorch.txt" 2>&1
echo "pytorch rc=$?"
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
tar -czf "$OUT/recheck.tgz" -C "$OUT" recheck
