#!/usr/bin/env bash
# The "sfm" layer-by-layer mapping (1x1 layers in 64-thread blocks) on every wide block of the blocks suite, on a GPU
# host: the [blocks] GPU tests of the sfm variants under memcheck, then the wide workloads with the sf, sfm, sx and sg
# mappings timed twice, then PyTorch eager on the two N=8 blocks three times (its N=8 times follow the host: the
# spread between runs is part of the result). Tarred into $OUT/sfm.tgz.
#   usage: OUT=DIR bench/h200_lbl_sfm.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, workload_key
o="${OUT:?set OUT}/sfm"; mkdir -p "$o"
bash bench/gpu_context.sh > "$o/gpu_context.txt" 2>&1
BLOCKFUSE_TEST_VARIANTS=layer_by_layer_sfm timeout 90 "$san" --tool memcheck --error-exitcode 9 "$bin/test_conv2d_gpu" "[blocks]" \
    > "$o/gpu_tests_memcheck.txt" 2>&1
echo "[blocks] sfm tests under memcheck rc=$?"; tail -3 "$o/gpu_tests_memcheck.txt"
w=$(workload_args - convfirst-c64-56-n8 convfirst-c64-56-n128 convfirst-c128-28-n128 convfirst-c256-14-n128 \
      ffn-c256-p25088 fused-mbconv-c48-56 convnext-c96-56-n128 mbconv-c24-56-n8)
for run in a b; do
  timeout 150 "$bin/blockfuse" bench $w --variants all --variant layer_by_layer_sf layer_by_layer_sx layer_by_layer_sg fusednwi \
      --min-seconds 0.3 --out "$o/bench_$run" > "$o/bench_$run.txt" 2>&1
  echo "bench $run rc=$?"
done
for rep in 1 2 3; do
  timeout 60 python3 bench/pytorch_baseline.py --suite workloads/blocks.txt --only mbconv-c24-56-n8 convfirst-c64-56-n8 \
      --no-compile --out "$o/pytorch_n8_$rep.json" > "$o/pytorch_n8_$rep.txt" 2>&1
  echo "pytorch $rep rc=$?"
done
bash bench/gpu_context.sh > "$o/gpu_context_after.txt" 2>&1
tar -czf "$OUT/sfm.tgz" -C "$OUT" sfm
