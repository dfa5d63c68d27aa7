#!/usr/bin/env bash
# compute-sanitizer over the CUDA kernels of the block suite on a GPU host: memcheck (out-of-bounds
# and misaligned accesses, leaks) and racecheck (shared-memory hazards) while the [gpu] tests run
# every block, stage and stem variant against the float64 reference. A hazard or an access error
# is a failed run (--error-exitcode), not a tuning choice.
# VARIANTS="a,b" runs only the variants whose names contain one of these (BLOCKFUSE_TEST_VARIANTS).
#   usage: [TAGS="[blocks],[stages],[stem]"] [TOOLS="memcheck racecheck"] [LIMIT=240] [VARIANTS=...] bench/h200_sanitize.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_sanitize.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
[ -n "$san" ] || { echo "error: compute-sanitizer not found (PATH, /opt/nvidia, /usr/local/cuda/bin)" >&2; exit 2; }
"$san" --version > "$out/sanitizer_version.txt" 2>&1
tags="${TAGS:-[blocks],[stages],[stem]}"
for tool in ${TOOLS:-memcheck racecheck}; do
  extra=""
  [ "$tool" = memcheck ] && extra="--leak-check full"
  start=$(date +%s)
  BLOCKFUSE_TEST_VARIANTS="${VARIANTS:-}" timeout "${LIMIT:-240}" "$san" --tool "$tool" $extra --error-exitcode 9 "$bin/test_conv2d_gpu" "$tags" \
      > "$out/$tool.txt" 2>&1
  rc=$?
  echo "$tool $tags${VARIANTS:+ (variants: $VARIANTS)}: rc=$rc ($(( $(date +%s) - start )) s; 0 = clean and every test passed, 9 = sanitizer errors, 124 = time limit)" \
      | tee -a "$out/summary.txt"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|test cases|assertions" "$out/$tool.txt" | tail -4 | tee -a "$out/summary.txt"
done
