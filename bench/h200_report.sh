#!/usr/bin/env bash
# The whole H200 report in one command, on a GPU host with .carry/ (tools/prepare-carry.sh): per
# suite, the kernels checked and timed beside PyTorch (bench/h200_suite.sh without the [gpu] tests),
# for the blocks suite the Nsight Compute DRAM validation of every kernel, then the waterline /
# roofline / efficiency-gap plots and summary (bench/report.py; the host's python3 needs matplotlib).
#   usage: [SUITES="conv2d blocks"] [NCU=0] bench/h200_report.sh OUTDIR
#   result: OUTDIR/<suite>/{results.json,results.csv,pytorch.json,summary.md,merged.csv,report/}
#           OUTDIR/dram_validation.md (+ ncu_dram.csv, single/), bench and PyTorch logs, GPU context
# Each suite takes several minutes (blocks with ncu the most); SUITES runs a subset, e.g. one suite
# per call where a remote runner limits a command's time.
set -uo pipefail
out="${1:?usage: [SUITES=\"conv2d blocks\"] bench/h200_report.sh OUTDIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rc=0
for suite in ${SUITES:-conv2d blocks}; do
  TESTS=0 bash "$here/h200_suite.sh" "$suite" "$out" || rc=1
  python3 "$here/report.py" "$out/$suite" --torch "$out/$suite/pytorch.json" || rc=1
done
exit $rc
