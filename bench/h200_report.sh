#!/usr/bin/env bash
# The whole H200 report in one command, on a GPU host with .carry/ (tools/prepare-carry.sh): the
# conv2d and blocks suites beside PyTorch (bench/h200_suite.sh, the blocks run with the Nsight
# Compute DRAM validation), then the waterline / roofline / efficiency-gap plots and summaries
# (bench/report.py; the host's python3 needs matplotlib). About 10-12 minutes on the H200.
#   usage: bench/h200_report.sh OUTDIR
#   result: OUTDIR/conv2d/{results.json,results.csv,pytorch.json,summary.md,merged.csv,report/}
#           OUTDIR/blocks/{... the same ...}, OUTDIR/dram_validation.md, logs and GPU context
set -uo pipefail
out="${1:?usage: bench/h200_report.sh OUTDIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rc=0
for suite in conv2d blocks; do
  bash "$here/h200_suite.sh" "$suite" "$out" || rc=1
  python3 "$here/report.py" "$out/$suite" --torch "$out/$suite/pytorch.json" || rc=1
done
exit $rc
