#!/usr/bin/env bash
# Depthwise probe on a GPU host: [gpu] tests, every depthwise variant on the two target
# workloads, and Nsight Compute on chosen variants (clocks left alone).
#   usage: [TESTS="[conv2d]"] [NCU_VARIANTS="k3d:3 k3e:3"] bench/h200_profile_depthwise.sh OUTDIR
# NCU_VARIANTS: depthwise variant tags with the workload (3: dw3x3 c=144, 5: dw5x5 c=240).
set -uo pipefail
out="${1:?usage: bench/h200_profile_depthwise.sh OUTDIR}"
mkdir -p "$out"
bin=.carry
[ -x $bin/blockfuse ] || tar -xzf $bin/bin.tar.gz -C $bin  # tools/prepare-carry.sh packs them
bash bench/gpu_context.sh > "$out/gpu_context.txt" 2>&1
echo "== [gpu] tests"; timeout 200 "$bin/test_conv2d_gpu" ${TESTS:-} 2>&1 | tee "$out/gpu_tests.txt" | tail -3
dw3="conv2d:n=128,c=144,h=56,w=56,k=144,r=3,s=3,stride=1,pad=1,groups=144,dtype=f16"
dw5="conv2d:n=128,c=240,h=28,w=28,k=240,r=5,s=5,stride=1,pad=2,groups=240,dtype=f16"
echo "== depthwise variants"
timeout 200 "$bin/blockfuse" bench --workload "$dw3" --workload "$dw5" --out "$out/dw" 2>&1 | tee "$out/bench_dw.txt" | grep -E "ceil|dw|cli"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for tw in ${NCU_VARIANTS:-k3d:3 k3e:3}; do
  v="conv2d_depthwise_${tw%%:*}_f16_cuda"
  if [ "${tw##*:}" = 5 ]; then w="$dw5"; else w="$dw3"; fi
  echo "== ncu $v"
  timeout 120 "$ncu" --clock-control none --launch-count 1 -k regex:_kernel_output \
      --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
      --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats \
      "$bin/blockfuse" bench --workload "$w" --variant "$v" --min-samples 1 --min-seconds 0 --no-ceilings > "$out/ncu_$v.txt" 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Theoretical Occ|L1/TEX Hit|L2 Hit|Stall|Warp Cycles Per Issued|Compute \(SM\)|Executed Ipc|Issue Slots Busy|Executed Instructions  " "$out/ncu_$v.txt" | head -24
done
