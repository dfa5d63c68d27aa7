#!/usr/bin/env bash
# The best fused MBConv mappings (bench/results/h200/fused-sweep/) at several CUDA JIT register caps
# (--max-registers: the cap for every kernel of the run), c=16 / c=24 at N=128 and c=24 at N=8,
# candidates interleaved within each run. Tarred into $OUT/caps.tgz.
#   usage: OUT=DIR [CAPS="64 80 96 128"] bench/h200_register_caps.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, workload_key
o="${OUT:?set OUT}/caps"; mkdir -p "$o"
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
v=""
for x in o op opw hp hpw nw npw jpw; do v="$v --variant block_mbc24_fused${x}_f16_cuda"; done
for x in o opw hpw npw; do v="$v --variant block_mbc16_fused${x}_f16_cuda"; done
w=$(workload_args - mbconv-c16-112-n128 mbconv-c24-56-n128 mbconv-c24-56-n8)
for cap in ${CAPS:-64 80 96 128}; do
  timeout 120 "$bin/blockfuse" bench $w $v --max-registers "$cap" --min-seconds 0.2 --out "$o/cap$cap" > "$o/cap$cap.txt" 2>&1
  echo "cap $cap rc=$?"
done
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
tar -czf "$OUT/caps.tgz" -C "$OUT" caps && rm -rf "$o"
