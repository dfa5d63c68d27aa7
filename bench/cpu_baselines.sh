#!/usr/bin/env bash
# The CPU comparison of bench/results/cpu/baselines/: blockfuse's heuristic kernels beside Halide's CPU
# autoschedulers (Mullapudi2016, Adams2019, Li2018) in one harness run, and ONNX Runtime (CPU), each run
# REPEATS times (CPU timings on a shared machine are noisy: the table takes the median of the runs'
# medians and shows their spread), then the table (bench/merge_results.py --by-provider).
#   usage: bench/cpu_baselines.sh [OUT] [REPEATS]     (default bench/results/cpu/baselines, 3)
#   BLOCK_AUTOSCHEDULERS: the autoschedulers of the block workloads (default the three; Adams2019's beam
#   search over a two-block MBConv stage had not finished after 12 minutes on the loaded 2-core machine)
# Needs the build (./run build) and ONNX Runtime (./run install --anchors).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$here/bench/results/cpu/baselines}"
repeats="${2:-3}"
bf="${BLOCKFUSE_BIN:-$here/build/bench/blockfuse}"
py="$here/.venv/bin/python"
suite="$here/bench/results/cpu/baselines/suite.txt"    # conv2d
blocks="$here/bench/results/cpu/baselines/blocks.txt"
block_as="${BLOCK_AUTOSCHEDULERS:-Mullapudi2016,Adams2019,Li2018}"
[ -x "$bf" ] || { echo "error: $bf not found: ./run build first" >&2; exit 2; }
"$py" -c 'import onnxruntime' 2>/dev/null || { echo "error: onnxruntime missing: ./run install --anchors" >&2; exit 2; }
mkdir -p "$out"
{ lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|L1d|L2|L3|Flags)'; echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"; } > "$out/cpu.txt"
ours=() ort=()
for i in $(seq 1 "$repeats"); do
    for part in conv2d blocks; do
        if [ "$part" = conv2d ]; then list="$suite"; as=Mullapudi2016,Adams2019,Li2018; else list="$blocks"; as="$block_as"; fi
        "$bf" bench --device cpu --suite "$list" --variants default --no-tuning-records \
            --autoscheduler "$as" --min-seconds 0.3 --out "$out/run$i-$part" > "$out/run$i-$part.log" 2>&1
        ours+=("$out/run$i-$part/results.json")
    done
    cat "$suite" "$blocks" > "$out/all.txt"
    "$py" "$here/bench/onnxruntime_baseline.py" --suite "$out/all.txt" --min-seconds 0.3 \
        --out "$out/onnxruntime$i.json" --out-csv "$out/onnxruntime$i.csv" > "$out/onnxruntime$i.log" 2>&1
    ort+=("$out/onnxruntime$i.json")
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/cpu.txt"
"$py" "$here/bench/merge_results.py" --by-provider --ours "${ours[@]}" --baseline "${ort[@]}" \
    --out-md "$out/table.md" --out-csv "$out/table.csv"
