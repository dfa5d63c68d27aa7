#!/usr/bin/env bash
# Nsight Compute full sections (clocks untouched) on fused kernels: the second launch of each. PROFILES lists
# "name:workload:variant" entries (default: the best fused MBConv kernels of bench/results/h200/fused-sweep/).
# SOURCE=1 also writes each kernel's per-instruction SASS table (warp-stall samples by instruction, CSV) for
# tools/stall_phases.py. Tarred into $OUT/prof.tgz.
#   usage: OUT=DIR [PROFILES="name:workload:variant ..."] [SOURCE=1] bench/h200_profile_fused.sh
source bench/h200_env.sh
o=$OUT/prof; mkdir -p $o
bash bench/gpu_context.sh > $o/gpu_context.txt 2>&1
prof() {  # name workload variant
  timeout 90 "$ncu" --clock-control none --set full --import-source no -k regex:_kernel --launch-skip 1 --launch-count 1 \
      ${SOURCE:+-o "$o/rep_$1"} "$bin/blockfuse" bench --workload "$(workload_key $2)" --variant "$3" --single-run --no-ceilings \
      > "$o/ncu_$1.txt" 2>&1
  echo "$1 rc=$?"
  if [ -n "${SOURCE:-}" ]; then
    "$ncu" -i "$o/rep_$1.ncu-rep" --print-details all > "$o/ncu_$1.txt" 2>&1
    "$ncu" -i "$o/rep_$1.ncu-rep" --page source --print-source sass --csv > "$o/sass_$1.csv" 2> "$o/sass_$1.err"
    echo "$1 source rc=$?"
    rm -f "$o/rep_$1.ncu-rep"
  fi
}
for p in ${PROFILES:-o_n128:mbconv-c24-56-n128:block_mbc24_fusedo_f16_cuda nw_n8:mbconv-c24-56-n8:block_mbc24_fusednw_f16_cuda \
                    c80_cw:mbconv-c80-14-n128:block_mbc80_fusedcw_f16_cuda c16_o:mbconv-c16-112-n128:block_mbc16_fusedo_f16_cuda}; do
  IFS=: read -r name workload variant <<< "$p"
  prof "$name" "$workload" "$variant"
done
for f in $o/ncu_*.txt; do echo "== $f"; grep -E "^    (Duration|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Executed Ipc Active|Issue Slots Busy|Block Limit Shared Mem|Block Limit Registers|Dynamic Shared Memory Per Block|Static Shared|Compute \(SM\) Throughput|L1/TEX Hit|Local Memory Spilling)" $f | head -20; grep -E "Stall|stall" $f | head -8; done
tar -czf $OUT/prof.tgz -C $OUT prof && rm -rf $o
