# Sourced by every bench/h200_*.sh script (run from the repository root on a GPU host):
#   bin  the carried binaries, unpacked from .carry/bin.tar.gz on first use (tools/prepare-carry.sh)
#   san  compute-sanitizer, ncu  Nsight Compute (empty where the host has none)
#   ncu_dram_validation  the DRAM-bytes check of a suite's kernels against the model (below)
#   workload_key  a workload's key by its name in a suite file
# and unbuffered Python output, so a log cut off by a time limit still shows how far it got.
bin=.carry
[ -x $bin/blockfuse ] || tar -xzf $bin/bin.tar.gz -C $bin
san=$(command -v compute-sanitizer || ls /opt/nvidia/*/compute-sanitizer/compute-sanitizer \
      /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
export PYTHONUNBUFFERED=1

# A workload's key by its name in a suite file (default workloads/blocks.txt): workload_key NAME [SUITE];
# NAME may be SUITE:NAME (workload_key conv2d:highres reads workloads/conv2d.txt).
workload_key() {
  local n="$1" f="${2:-workloads/blocks.txt}"
  if [[ "$n" == *:* ]]; then f="workloads/${n%%:*}.txt"; n="${n#*:}"; fi
  awk -v n="$n" '$1 == n {print $2}' "$f"
}

# blockfuse bench's --workload arguments for NAME... (as workload_key takes them); SUITE_OUT, unless "-", gets a
# "name key" line per workload, the suite file pytorch_baseline.py reads: w=$(workload_args "$o/suite.txt" $names)
workload_args() {
  local out="$1" sn key; shift
  for sn in "$@"; do
    key=$(workload_key "$sn" | head -1)
    printf ' --workload %s' "$key"
    [ "$out" = - ] || echo "${sn#*:} $key" >> "$out"
  done
}

# Nsight Compute's DRAM read and write bytes for every kernel of a suite (one profiled run each,
# clocks untouched) against the model's bytes: OUT/ncu_dram.csv, OUT/single/, OUT/dram_validation.md.
# Each profiled run sits between two read-only L2 evictions (kernel l2_evict_read, bench --single-run):
# ncu must not flush caches itself (--cache-control none) and replays the application, not the
# kernel, so nothing it saves or restores passes through the L2. The second eviction's DRAM writes
# are what the run left dirty in the write-back L2 (bench/ncu_compare.py adds them to the run).
# Prints ncu's exit status, then the last LINES lines of the comparison. SPILLS=CSV (tools/kernel_spills.py, made
# on the build machine, which has ptxas) adds each run's spill bytes per thread.
#   usage: ncu_dram_validation OUT SUITE TIMEOUT_S LINES
ncu_dram_validation() {
  mkdir -p "$1"
  timeout "$3" "$ncu" --clock-control none --cache-control none --replay-mode application --csv --print-units base \
      -k regex:"_kernel|l2_evict_read" \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
      "$bin/blockfuse" bench --suite "$2" --single-run --no-ceilings --out "$1/single" > "$1/ncu_dram.csv" 2> "$1/ncu_dram.err"
  echo "ncu dram rc=$?"
  python3 bench/ncu_compare.py "$1/single/results.json" "$1/ncu_dram.csv" --out "$1/dram_validation.md" \
      ${SPILLS:+--spills "$SPILLS"} | tail -"$4"
}
