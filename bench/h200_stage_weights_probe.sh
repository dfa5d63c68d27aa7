#!/usr/bin/env bash
# The fused MBConv mappings with each chunk's weights staged in shared memory as f32 (stage_weights:
# block_mbc24_fusedhw / fusednw) against the same mappings without (h / n) and layer by layer, on a GPU
# host: the [blocks] [gpu] tests (every block variant against float64), then MBConv c=24 at N=128 and N=8
# timed twice, interleaved; racecheck over the block tests. Tarred into $OUT/sw.tgz.
#   usage: OUT=DIR bench/h200_stage_weights_probe.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
o="${OUT:?set OUT}/sw"; mkdir -p "$o"
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
timeout 90 "$bin/test_conv2d_gpu" "[blocks]" > "$o/gpu_tests_blocks.txt" 2>&1; echo "tests rc=$?"; tail -2 "$o/gpu_tests_blocks.txt"
v=""
for x in layer_by_layer fusedh fusedhw fusedn fusednw; do v="$v --variant block_mbc24_${x}_f16_cuda"; done
for run in a b; do
  timeout 60 "$bin/blockfuse" bench --workload "$(workload_key mbconv-c24-56-n128)" --workload "$(workload_key mbconv-c24-56-n8)" $v \
      --min-seconds 0.3 --out "$o/bench_$run" > "$o/bench_$run.txt" 2>&1
  echo "bench rc=$?"; grep -E "_cuda" "$o/bench_$run.txt"
done
TAGS="[blocks]" TOOLS=racecheck LIMIT=90 bash bench/h200_sanitize.sh "$o/race" > /dev/null 2>&1; cat "$o/race/summary.txt"
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
tar -czf "$OUT/sw.tgz" -C "$OUT" sw && rm -rf "$o"
