#!/usr/bin/env bash
# One suite on a GPU host, side by side in one run: GPU context, the [gpu] tests, the suite with
# every candidate kernel checked then timed (ceilings measured first), PyTorch eager and
# torch.compile on the same workloads, merged into one table; for the blocks suite also the
# Nsight Compute DRAM validation of every kernel of the suite (h200_env.sh, ncu_dram_validation).
#   usage: [TESTS=0] [NCU=0] [RACECHECK=TAGS] [BENCH_TIMEOUT=S] [TORCH_TIMEOUT=S] bench/h200_suite.sh blocks|conv2d OUTDIR
# TESTS=0 skips the [gpu] tests, NCU=0 the Nsight Compute part; RACECHECK="[stages]" runs
# compute-sanitizer racecheck over those [gpu] test cases first. BENCH_TIMEOUT (default 480 s)
# bounds the suite's run: on a fresh host the driver JIT-compiles every kernel's PTX on its first
# launch, which for the conv2d suite's ~100 variants took longer than 240 s (2026-11-29).
set -uo pipefail
suite="${1:?usage: bench/h200_suite.sh blocks|conv2d OUTDIR}"
out="${2:?usage: bench/h200_suite.sh blocks|conv2d OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
if [ "${TESTS:-1}" != 0 ]; then
  echo "== [gpu] tests"; timeout 400 "$bin/test_conv2d_gpu" 2>&1 | tee "$out/gpu_tests.txt" | tail -2
fi
if [ -n "${RACECHECK:-}" ]; then  # writes $out/racecheck.txt
  TOOLS=racecheck TAGS="$RACECHECK" LIMIT=150 bash bench/h200_sanitize.sh "$out"
fi
echo "== $suite suite"
timeout "${BENCH_TIMEOUT:-480}" stdbuf -oL "$bin/blockfuse" bench --suite "$suite" --out "$out/$suite" > "$out/bench_$suite.txt" 2>&1
echo "rc=$?"; tail -4 "$out/bench_$suite.txt"
echo "== PyTorch"
timeout "${TORCH_TIMEOUT:-150}" python3 bench/pytorch_baseline.py --suite "workloads/$suite.txt" --out "$out/$suite/pytorch.json" \
    > "$out/pytorch_$suite.txt" 2>&1
echo "rc=$?"; tail -3 "$out/pytorch_$suite.txt"
python3 bench/merge_results.py --ours "$out/$suite/results.json" --torch "$out/$suite/pytorch.json" \
    --out-md "$out/$suite/summary.md" --out-csv "$out/$suite/merged.csv" > /dev/null 2>&1
if [ "$suite" = blocks ] && [ "${NCU:-1}" != 0 ]; then
  ncu_dram_validation "$out" blocks 330 4
fi
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
