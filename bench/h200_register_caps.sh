#!/usr/bin/env bash
# Fused block mappings at several CUDA JIT register caps (--max-registers: the cap for every kernel of the run),
# candidates interleaved within each run, a run per cap (name a cap twice to see the run-to-run noise). Defaults:
# the fused-sweep's MBConv mappings (bench/results/h200/fused-sweep/) on c=16 / c=24 at N=128 and c=24 at N=8;
# VARIANTS (kernel names) and NAMES (workload names of workloads/blocks.txt) replace them. Tarred into $OUT/caps.tgz.
#   usage: OUT=DIR [CAPS="64 80 96 128"] [VARIANTS="block_mbc40_fusedxpwi_f16_cuda ..."] [NAMES="mbconv-c40-28-n128 ..."]
#          bench/h200_register_caps.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, workload_key
o="${OUT:?set OUT}/caps"; mkdir -p "$o"
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
if [ -z "${VARIANTS:-}" ]; then
  for x in o op opw hp hpw nw npw jpw; do VARIANTS="${VARIANTS:-} block_mbc24_fused${x}_f16_cuda"; done
  for x in o opw hpw npw; do VARIANTS="$VARIANTS block_mbc16_fused${x}_f16_cuda"; done
fi
v=""; for x in $VARIANTS; do v="$v --variant $x"; done
w=$(workload_args - ${NAMES:-mbconv-c16-112-n128 mbconv-c24-56-n128 mbconv-c24-56-n8})
run=0
for cap in ${CAPS:-64 80 96 128}; do
  run=$((run + 1)); d="$o/run${run}_cap$cap"
  timeout 120 "$bin/blockfuse" bench $w $v --max-registers "$cap" --min-seconds 0.2 --out "$d" > "$d.txt" 2>&1
  echo "run $run cap $cap rc=$?"
done
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
tar -czf "$OUT/caps.tgz" -C "$OUT" caps && rm -rf "$o"
