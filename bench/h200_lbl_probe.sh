#!/usr/bin/env bash
# A GPU-host pass for the layer-by-layer mappings of the wide blocks and the DRAM-validation
# protocol: the [blocks] [gpu] tests (every block variant against float64), the wide blocks and
# Conv3x3-BN-ReLU (every layer-by-layer mapping and conv2d variant built) checked then timed,
# Nsight Compute's full sections on the FFN's layer-by-layer kernels (default and sx), and
# the DRAM validation of workloads/ncu.txt with the read-only L2 evictions (ncu_dram_validation).
#   usage: bench/h200_lbl_probe.sh OUTDIR
# (Its first run, bench/results/h200/lbl-probe/, profiled the "x" mapping, since replaced by "sx".)
set -uo pipefail
out="${1:?usage: bench/h200_lbl_probe.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
echo "== [blocks] tests"; timeout 150 "$bin/test_conv2d_gpu" "[blocks]" 2>&1 | tee "$out/gpu_tests_blocks.txt" | tail -2
wide=()
for name in ffn-c256-p25088 convfirst-c64-56-n128 convfirst-c128-28-n128 convfirst-c256-14-n128 fused-mbconv-c48-56 \
            convnext-c96-56-n128 conv3x3-bn-relu-c64-56-n128; do
  wide+=(--workload "$(workload_key "$name")")
done
echo "== wide blocks, layer by layer"
timeout 200 "$bin/blockfuse" bench "${wide[@]}" --strategies layer_by_layer,direct --min-seconds 0.3 --out "$out/wide" \
    > "$out/bench_wide.txt" 2>&1
echo "rc=$?"; grep -E "layer_by_layer|direct|conv2d_" "$out/bench_wide.txt" | tail -40
ffn="$(awk '$1 == "ffn-c256-p25088" {print $2}' workloads/blocks.txt)"
for v in "" _sx; do
  timeout 60 "$ncu" --clock-control none --set full -k regex:_kernel --launch-skip 2 --launch-count 2 \
      "$bin/blockfuse" bench --workload "$ffn" --variant "block_ffn256_layer_by_layer${v}_f16_cuda" --single-run --no-ceilings \
      > "$out/ncu_ffn_lbl${v:-_default}.txt" 2>&1
  grep -E "^  _kernel|Duration|Compute \(SM\) Throughput|DRAM Throughput|L1/TEX Hit|L1/TEX Cache Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|Executed Ipc A" \
      "$out/ncu_ffn_lbl${v:-_default}.txt" | head -24
done
ncu_dram_validation "$out" ncu 150 8
bash bench/gpu_context.sh > "$out/gpu_context_after.txt" 2>&1
