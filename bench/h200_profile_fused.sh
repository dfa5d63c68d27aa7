#!/usr/bin/env bash
# Nsight Compute full sections (clocks untouched) on the best fused MBConv kernels of bench/results/h200/fused-sweep/:
# the second launch of each. Tarred into $OUT/prof.tgz.
#   usage: OUT=DIR bench/h200_profile_fused.sh
source bench/h200_env.sh
o=$OUT/prof; mkdir -p $o
bash bench/gpu_context.sh > $o/gpu_context.txt 2>&1
prof() {  # name workload variant
  timeout 90 "$ncu" --clock-control none --set full --import-source no -k regex:_kernel --launch-skip 1 --launch-count 1 \
      "$bin/blockfuse" bench --workload "$(workload_key $2)" --variant "$3" --single-run --no-ceilings > "$o/ncu_$1.txt" 2>&1
  echo "$1 rc=$?"
}
prof o_n128 mbconv-c24-56-n128 block_mbc24_fusedo_f16_cuda
prof nw_n8 mbconv-c24-56-n8 block_mbc24_fusednw_f16_cuda
prof c80_cw mbconv-c80-14-n128 block_mbc80_fusedcw_f16_cuda
prof c16_o mbconv-c16-112-n128 block_mbc16_fusedo_f16_cuda
for f in $o/ncu_*.txt; do echo "== $f"; grep -E "^    (Duration|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Executed Ipc Active|Issue Slots Busy|Block Limit Shared Mem|Block Limit Registers|Dynamic Shared Memory Per Block|Static Shared|Compute \(SM\) Throughput|L1/TEX Hit|Local Memory Spilling)" $f | head -20; grep -E "Stall|stall" $f | head -8; done
tar -czf $OUT/prof.tgz -C $OUT prof && rm -rf $o
