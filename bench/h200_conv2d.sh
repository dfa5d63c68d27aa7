#!/usr/bin/env bash
# The conv2d foundation run on a GPU host, in one go: GPU context, the [gpu] tests, the conv2d
# suite (every kernel variant, checked then timed) and PyTorch eager / torch.compile on the same
# workloads in the same session, merged into one table. Binaries are built on the build machine
# and carried in .carry/ (see README "Running on the H200").
#   usage: bench/h200_conv2d.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_conv2d.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
"$bin/blockfuse" info > "$out/info.txt" 2>&1
echo "== [gpu] tests"; timeout 240 "$bin/test_conv2d_gpu" 2>&1 | tee "$out/gpu_tests.txt" | tail -4
echo "== conv2d suite"
timeout 300 "$bin/blockfuse" bench --suite conv2d --min-seconds 0.3 --out "$out/conv2d" 2>&1 | tee "$out/bench_conv2d.txt" | tail -80
echo "== PyTorch"
timeout 240 python3 bench/pytorch_baseline.py --suite workloads/conv2d.txt --out "$out/conv2d/pytorch.json" > "$out/pytorch_conv2d.txt" 2>&1
tail -5 "$out/pytorch_conv2d.txt"
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
python3 bench/merge_results.py --ours "$out/conv2d/results.json" --torch "$out/conv2d/pytorch.json" \
    --out-md "$out/conv2d/summary.md" --out-csv "$out/conv2d/merged.csv"
