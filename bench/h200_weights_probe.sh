#!/usr/bin/env bash
# A GPU-host pass for the kernels that read weights widened to f32 at load time and for ConvNeXt's
# layer-by-layer mappings with the flat 7x7 depthwise layer: each timed twice (the second run shows
# the noise) after its float64 check, PyTorch eager and torch.compile on the same workloads in the
# same call, and Nsight Compute's DRAM bytes of the ConvNeXt kernels against the model.
#   depthwise: the flat mappings fd (3x3) / fa (5x5) against k3fw / k5fw (same, f32 weights) and
#              k5fx (4x4 pixels, f32 weights)
#   Conv3x3-BN-ReLU: conv2d general c against cw (f32 weights)
#   ConvNeXt c=96 N=128: every layer-by-layer mapping
#   usage: bench/h200_weights_probe.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_weights_probe.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
dw=""
for t in k3fd k3fw k5fa k5fw k5fx; do dw="$dw --variant conv2d_depthwise_${t}_f16_cuda"; done
conv="$(workload_key conv3x3-bn-relu-c64-56-n128)"
cnx="$(workload_key convnext-c96-56-n128)"
for run in a b; do
  echo "== depthwise ($run)"
  timeout 90 "$bin/blockfuse" bench --suite depthwise $dw --min-seconds 0.3 --out "$out/dw_$run" > "$out/bench_dw_$run.txt" 2>&1
  echo "rc=$?"; grep -E "conv2d_depthwise" "$out/bench_dw_$run.txt" | tail -10
  echo "== Conv3x3-BN-ReLU ($run)"
  timeout 60 "$bin/blockfuse" bench --workload "$conv" --variant conv2d_general_c_f16_cuda --variant conv2d_general_cw_f16_cuda \
      --min-seconds 0.3 --out "$out/conv3x3_$run" > "$out/bench_conv3x3_$run.txt" 2>&1
  echo "rc=$?"; grep -E "conv2d_general" "$out/bench_conv3x3_$run.txt" | tail -4
done
echo "== ConvNeXt, every layer-by-layer mapping"
timeout 120 "$bin/blockfuse" bench --workload "$cnx" --strategies layer_by_layer --min-seconds 0.3 --out "$out/convnext" \
    > "$out/bench_convnext.txt" 2>&1
echo "rc=$?"; grep -E "layer_by_layer" "$out/bench_convnext.txt" | tail -10
echo "== PyTorch"
printf 'dw3x3 %s\ndw5x5 %s\nconv3x3 %s\nconvnext %s\n' "$(awk '$1 ~ /^dw3x3/ {print $2}' workloads/depthwise.txt)" \
    "$(awk '$1 ~ /^dw5x5/ {print $2}' workloads/depthwise.txt)" "$conv" "$cnx" > "$out/torch_suite.txt"
timeout 150 python3 bench/pytorch_baseline.py --suite "$out/torch_suite.txt" --out "$out/pytorch.json" > "$out/pytorch.txt" 2>&1
echo "rc=$?"; tail -5 "$out/pytorch.txt"
for d in dw_a conv3x3_a convnext; do
  python3 bench/merge_results.py --ours "$out/$d/results.json" --torch "$out/pytorch.json" \
      --out-md "$out/$d/summary.md" --out-csv "$out/$d/merged.csv" > /dev/null 2>&1
done
if [ -n "$ncu" ]; then
  echo "== Nsight Compute DRAM bytes, ConvNeXt layer by layer"
  echo "convnext $cnx" > "$out/convnext_suite.txt"
  mkdir -p "$out/dram"
  ncu_dram_validation "$out/dram" "$out/convnext_suite.txt" 150 14
fi
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
