#!/usr/bin/env bash
# Nsight Compute on a GPU host (clocks left alone): DRAM bytes of every kernel of workloads/ncu.txt
# against the model, and the full section set on the best fused MBConv kernel.
#   usage: bench/h200_ncu.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_ncu.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
ncu_dram_validation "$out" ncu 300 30
timeout 150 "$ncu" --clock-control none --set full -k regex:_kernel \
    "$bin/blockfuse" bench --workload "mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16" \
    --variant block_mbc24_fusede_f16_cuda --single-run --no-ceilings > "$out/ncu_fused_full.txt" 2>&1
grep -E "Duration|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Local|Stall|Issue Slots|Executed Ipc" "$out/ncu_fused_full.txt" | head -24
