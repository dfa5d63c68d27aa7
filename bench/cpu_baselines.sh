#!/usr/bin/env bash
# The CPU comparison of bench/results/cpu/baselines/: blockfuse's heuristic kernels beside Halide's CPU
# autoschedulers (Mullapudi2016, Adams2019, Li2018) in one harness run, and ONNX Runtime (CPU), each run
# REPEATS times (CPU timings on a shared machine are noisy: the table takes the median of the runs'
# medians and shows their spread), then the table (bench/merge_results.py --by-provider).
#   usage: bench/cpu_baselines.sh [OUT] [REPEATS]     (default bench/results/cpu/baselines, 3)
#   AUTOSCHEDULERS: those of the conv2d workloads (default the three; empty: none); BLOCK_AUTOSCHEDULERS: those of
#   the block workloads (default AUTOSCHEDULERS; Adams2019's beam search over a two-block MBConv stage had not
#   finished after 12 minutes on the loaded 2-core machine)
#   CONV_SUITE, BLOCK_SUITE: the suite files (default bench/results/cpu/baselines/suite.txt and blocks.txt; an empty
#   BLOCK_SUITE: conv2d only)
#   TUNING_RECORDS=FILE: also blockfuse dispatched by these records (`blockfuse tune --device cpu`) in each repeat,
#   and a second table of them (table_tuned.{md,csv}) against the same ONNX Runtime runs
# Needs the build (./run build) and ONNX Runtime (./run install --anchors).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$here/bench/results/cpu/baselines}"
repeats="${2:-3}"
bf="${BLOCKFUSE_BIN:-$here/build/bench/blockfuse}"
py="$here/.venv/bin/python"
suite="${CONV_SUITE:-$here/bench/results/cpu/baselines/suite.txt}"
blocks="${BLOCK_SUITE-$here/bench/results/cpu/baselines/blocks.txt}"
conv_as="${AUTOSCHEDULERS-Mullapudi2016,Adams2019,Li2018}"
block_as="${BLOCK_AUTOSCHEDULERS-$conv_as}"
records="${TUNING_RECORDS:-}"
[ -x "$bf" ] || { echo "error: $bf not found: ./run build first" >&2; exit 2; }
"$py" -c 'import onnxruntime' 2>/dev/null || { echo "error: onnxruntime missing: ./run install --anchors" >&2; exit 2; }
mkdir -p "$out"
{ lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|Flags)'; echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"; } > "$out/cpu.txt"
# One bench run into DIR (results.json, DIR.log). Exit 1 means some rows failed (e.g. an autoscheduler's kernel
# that could not be built): they are in the results as failed and the table leaves their cells out, so the
# comparison goes on and cpu.txt says so; any other failure stops it.
bench_rows() {
    local dir="$1" rc=0
    shift
    "$bf" bench "$@" --out "$dir" > "$dir.log" 2>&1 || rc=$?
    [ "$rc" -le 1 ] || { echo "error: bench exited $rc ($dir.log)" >&2; exit 1; }
    [ "$rc" -eq 0 ] || echo "$(basename "$dir"): failed rows (see $(basename "$dir").log)" >> "$out/cpu.txt"
}
ours=() tuned=() ort=()
for i in $(seq 1 "$repeats"); do
    for part in conv2d ${blocks:+blocks}; do
        if [ "$part" = conv2d ]; then list="$suite"; as="$conv_as"; else list="$blocks"; as="$block_as"; fi
        bench_rows "$out/run$i-$part" --device cpu --suite "$list" --variants default --no-tuning-records \
            ${as:+--autoscheduler "$as"} --min-seconds 0.3
        ours+=("$out/run$i-$part/results.json")
        if [ -n "$records" ]; then
            bench_rows "$out/run$i-$part-tuned" --device cpu --suite "$list" --variants default \
                --tuning-records "$records" --min-seconds 0.3
            tuned+=("$out/run$i-$part-tuned/results.json")
        fi
    done
    cat "$suite" ${blocks:+"$blocks"} > "$out/all.txt"
    "$py" "$here/bench/onnxruntime_baseline.py" --suite "$out/all.txt" --min-seconds 0.3 \
        --out "$out/onnxruntime$i.json" --out-csv "$out/onnxruntime$i.csv" > "$out/onnxruntime$i.log" 2>&1
    ort+=("$out/onnxruntime$i.json")
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/cpu.txt"
"$py" "$here/bench/merge_results.py" --by-provider --ours "${ours[@]}" --baseline "${ort[@]}" \
    --out-md "$out/table.md" --out-csv "$out/table.csv"
if [ -n "$records" ]; then
    "$py" "$here/bench/merge_results.py" --by-provider --ours "${tuned[@]}" --baseline "${ort[@]}" \
        --out-md "$out/table_tuned.md" --out-csv "$out/table_tuned.csv"
fi
