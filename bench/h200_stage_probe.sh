#!/usr/bin/env bash
# Stage of three MBConv blocks (c=24) at N=8 and N=128 on a GPU host: the [stages] [gpu] tests, every
# strategy and mapping timed twice, Nsight Compute DRAM bytes against the model; tarred into $OUT/st.tgz.
#   usage: OUT=DIR [SKIP_TESTS=1] [RUNS="a b"] bench/h200_stage_probe.sh
source bench/h200_env.sh
o=$OUT/st; mkdir -p $o
bash bench/gpu_context.sh > $o/gpu_context.txt 2>&1
if [ -z "${SKIP_TESTS:-}" ]; then
  timeout 60 $bin/test_conv2d_gpu "[stages]" > $o/gpu_tests_stages.txt 2>&1; echo "tests rc=$?"; tail -2 $o/gpu_tests_stages.txt
fi
grep -E "^stage-mbconv" workloads/blocks.txt > $o/suite.txt
for run in ${RUNS-a b}; do
  timeout 90 $bin/blockfuse bench --suite $o/suite.txt --min-seconds 0.3 --out $o/bench_$run > $o/bench_$run.txt 2>&1; echo "bench rc=$?"
  grep -E "_cuda" $o/bench_$run.txt | awk '{print $1,$2,$3,$4}'
done
ncu_dram_validation $o/dram $o/suite.txt 120 12
bash bench/gpu_context.sh > $o/gpu_context_after.txt 2>&1
tar -czf $OUT/st.tgz -C $OUT st && rm -rf $o
