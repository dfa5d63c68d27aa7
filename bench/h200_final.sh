#!/usr/bin/env bash
# One short GPU-host pass: the CUDA block tests with racecheck, the blocks suite's MBConv c=24
# (every strategy) beside PyTorch, and the Nsight Compute DRAM-bytes validation of workloads/ncu.txt.
#   usage: bench/h200_final.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_final.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
timeout 100 "$san" --tool racecheck --error-exitcode 9 "$bin/test_conv2d_gpu" "[blocks]" > "$out/racecheck_blocks.txt" 2>&1
echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|passed|failed" "$out/racecheck_blocks.txt" | tail -3
mb="mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16"
mb8="mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16"
timeout 100 "$bin/blockfuse" bench --workload "$mb" --workload "$mb8" --min-seconds 0.3 --out "$out/blocks" 2>&1 | tee "$out/bench_blocks.txt" | tail -14
timeout 100 python3 bench/pytorch_baseline.py --suite workloads/blocks.txt --only mbconv-c24-56-n128 mbconv-c24-56-n8 \
    --out "$out/blocks/pytorch.json" > "$out/pytorch_blocks.txt" 2>&1; tail -4 "$out/pytorch_blocks.txt"
ncu_dram_validation "$out" ncu 150 12
