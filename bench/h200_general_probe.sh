#!/usr/bin/env bash
# A GPU-host pass for the general 3x3 conv variants with a staged channel window (conv2d general
# c, d, e) and the flat 1x1 mapping of the wide blocks (sf): the [conv2d] and [blocks] [gpu]
# tests (every variant against float64), Conv3x3-BN-ReLU and the wide blocks checked then timed
# (every conv2d variant / layer-by-layer mapping built), and Nsight Compute's full sections on
# the fastest new conv2d variant.
#   usage: bench/h200_general_probe.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_general_probe.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
for tag in conv2d blocks; do
  echo "== [$tag] tests"; timeout 150 "$bin/test_conv2d_gpu" "[$tag]" 2>&1 | tee "$out/gpu_tests_$tag.txt" | tail -2
done
conv="$(workload_key conv3x3-bn-relu-c64-56-n128)"
echo "== Conv3x3-BN-ReLU, every conv2d variant"
timeout 120 "$bin/blockfuse" bench --workload "$conv" --min-seconds 0.3 --out "$out/conv3x3" > "$out/bench_conv3x3.txt" 2>&1
echo "rc=$?"; grep -E "conv2d_" "$out/bench_conv3x3.txt" | tail -12
wide=()
for name in ffn-c256-p25088 convfirst-c64-56-n128 convfirst-c128-28-n128 convfirst-c256-14-n128 fused-mbconv-c48-56 \
            convnext-c96-56-n128; do
  wide+=(--workload "$(workload_key "$name")")
done
echo "== wide blocks, layer by layer"
timeout 200 "$bin/blockfuse" bench "${wide[@]}" --strategies layer_by_layer --min-seconds 0.3 --out "$out/wide" \
    > "$out/bench_wide.txt" 2>&1
echo "rc=$?"; grep -E "layer_by_layer" "$out/bench_wide.txt" | tail -40
best=$(grep -oE "conv2d_general_[cde]_f16_cuda\*? +[0-9.]+" "$out/bench_conv3x3.txt" | tr -d "*" | sort -k2 -n | head -1 | awk '{print $1}')
if [ -n "$ncu" ] && [ -n "$best" ]; then
  timeout 60 "$ncu" --clock-control none --set full -k regex:_kernel --launch-skip 1 --launch-count 1 \
      "$bin/blockfuse" bench --workload "$conv" --variant "$best" --single-run --no-ceilings \
      > "$out/ncu_${best}.txt" 2>&1
  grep -E "^  _kernel|Duration|Compute \(SM\) Throughput|DRAM Throughput|L1/TEX Hit|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Ipc A|Theoretical Occupancy" \
      "$out/ncu_${best}.txt" | head -16
fi
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
