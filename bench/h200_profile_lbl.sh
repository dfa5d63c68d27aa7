#!/usr/bin/env bash
# Nsight Compute's full sections (clocks untouched) on the best layer-by-layer kernels of the wide
# blocks and on the Conv3x3-BN-ReLU kernel: which floor they sit on (issue rate, instruction mix,
# occupancy, memory). One profiled run each, after a warm-up (--single-run, launches skipped).
#   usage: bench/h200_profile_lbl.sh OUTDIR
set -uo pipefail
out="${1:?usage: bench/h200_profile_lbl.sh OUTDIR}"
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/h200_env.sh"  # bin, san, ncu
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
# workload name, variant, kernels per run
for spec in "ffn-c256-p25088 block_ffn256_layer_by_layer_sx_f16_cuda 2" \
            "convfirst-c128-28-n128 block_cf128_layer_by_layer_sx_f16_cuda 3" \
            "conv3x3-bn-relu-c64-56-n128 conv2d_general_a_f16_cuda 1"; do
  set -- $spec
  timeout 90 "$ncu" --clock-control none --set full -k regex:_kernel --launch-skip "$3" --launch-count "$3" \
      "$bin/blockfuse" bench --workload "$(workload_key "$1")" --variant "$2" --single-run --no-ceilings > "$out/ncu_$2.txt" 2>&1
  echo "== $2 rc=$?"
  grep -E "^  _kernel|Duration|Compute \(SM\) Throughput|DRAM Throughput|Issue Slots Busy|Registers Per|Achieved Occupancy|Executed Instructions  |L1/TEX Hit" \
      "$out/ncu_$2.txt" | head -30
done
