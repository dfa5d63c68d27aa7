#!/usr/bin/env bash
# The one runner for a GPU host: a remote machine with the GPU, without Halide or network. What it runs
# is data, a recipe (bench/recipes/NAME.txt): one step a line, `STEP NAME ARGS...`, $VARS expanded
# from the environment. Everything it writes goes to $OUT/NAME/..., tarred at the end into
# $OUT/RECIPE.tgz (one file to bring back).
#   usage (on the GPU host, from the repository root): OUT=DIR [CARRY=DIR] [VAR=...] bench/gpu_host.sh RECIPE
# The binaries, the CUDA kernels they load and the kernel cache come in .carry/ (tools/prepare-carry.sh,
# on the machine with Halide), so every kernel a recipe runs was generated there.
# Steps:
#   context NAME                       GPU, driver, clocks, toolchain (nvidia-smi, torch)
#   test NAME [VAR=value...] BINARY [ARGS...]      a test binary of .carry/, its environment first
#   sanitize NAME TOOL [VAR=value...] BINARY [ARGS...]   the same under compute-sanitizer --tool TOOL
#   bench NAME [blockfuse bench args...]          the harness; results in NAME/results.{json,csv}
#   torch NAME SUITE [pytorch_baseline.py args...] PyTorch eager and torch.compile on a suite file
#   merge NAME BENCH TORCH               our results beside PyTorch's (bench/merge_results.py): NAME.{md,csv,json}
#   pick NAME SUITE:WORKLOAD...          a suite file of the named workloads (workloads/SUITE.txt), $RUN/NAME.suite,
#                                        for bench --suite and torch
#   dram NAME SUITE                      Nsight Compute's DRAM bytes of every kernel of a suite against the model
#                                        (bench/ncu_compare.py): NAME/{ncu_dram.csv,dram_validation.md}
#   profile NAME SUITE:WORKLOAD|KEY VARIANT [bench args...]  Nsight Compute's full sections on the second launch
#                                        of a kernel variant (`-`: the workload's default kernel, dispatched as bench
#                                        does, e.g. with --heuristics); with SOURCE=1 also its per-instruction SASS
#                                        table (tools/stall_phases.py)
#   report NAME BENCH [TORCH]            plots and summary of a bench step (bench/report.py; needs matplotlib)
#   tune NAME PLAN [blockfuse tune args...]   measure a tuning plan built where Halide is (tune/README.md);
#                                        records in NAME.jsonl
#   py NAME SCRIPT [ARGS...]             a Python script with python/ on its path and the carried runtime
#                                        library (blockfuse.torch): `python3 SCRIPT --out $OUT/RECIPE ARGS`
#   python NAME SCRIPT [ARGS...]         a script of bench/ (e.g. tc_torch.py), its JSON to NAME.json (--out)
# $RUN is this recipe's output folder (a step's files are $RUN/NAME...).
# Each step is limited to $STEP_LIMIT seconds (default 300) and to what is left of $BUDGET (default 540 s
# for the whole recipe: the archive is always written), and prints its exit status; a failing step does
# not stop the recipe (its log says why), the runner's exit status counts the failed and skipped steps.
set -uo pipefail
recipe="${1:?usage: OUT=DIR bench/gpu_host.sh RECIPE}"
file="bench/recipes/$recipe.txt"
[ -f "$file" ] || { echo "error: no recipe '$recipe' (bench/recipes/)" >&2; exit 2; }
out="${OUT:?set OUT}/$recipe"
mkdir -p "$out"
carry="${CARRY:-.carry}"  # another carry (e.g. an older build's binaries and kernels, for an A/B in one run)
[ -x "$carry/blockfuse" ] || tar -xJf "$carry/carry.tar.xz" -C "$carry"
export BLOCKFUSE_KERNEL_CACHE="$PWD/$carry/cache" BLOCKFUSE_PREBUILT_DIR="$PWD/$carry/kernels" PYTHONUNBUFFERED=1
export RUN="$out"
# shellcheck disable=SC2012  # ls: the first of the install paths that exist, none with odd characters
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer/compute-sanitizer \
      2>/dev/null | head -1)
# shellcheck disable=SC2012  # as above
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
budget="${BUDGET:-540}"
failed=0

# A workload's key by SUITE:NAME (workloads/SUITE.txt; the first row of that name); a key (FAMILY:FIELD=...) as it is.
workload_key() {
    if [[ "$1" == *=* ]]; then echo "$1"; else awk -v n="${1#*:}" '$1 == n {print $2; exit}' "workloads/${1%%:*}.txt"; fi
}

# Nsight Compute's DRAM read and write bytes for every kernel of a suite (one profiled run each, clocks
# untouched) against the model's bytes. Each profiled run sits between two read-only L2 evictions (kernel
# l2_evict_read, bench --single-run): ncu must not flush caches itself (--cache-control none) and replays the
# application, not the kernel, so nothing it saves or restores passes through the L2. The second eviction's
# DRAM writes are what the run left dirty in the write-back L2 (bench/ncu_compare.py adds them to the run).
# SPILLS=CSV (tools/kernel_spills.py, made on the build machine, which has ptxas) adds each kernel's spills.
dram() {  # DIR SUITE LIMIT
    mkdir -p "$1"
    timeout "$3" "$ncu" --clock-control none --cache-control none --replay-mode application --csv --print-units base \
        -k regex:"_kernel|l2_evict_read" --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
        "$carry/blockfuse" bench --suite "$2" --single-run --no-ceilings --out "$1/single" > "$1/ncu_dram.csv" 2> "$1/ncu_dram.err" &&
        python3 bench/ncu_compare.py "$1/single/results.json" "$1/ncu_dram.csv" --out "$1/dram_validation.md" \
            ${SPILLS:+--spills "$SPILLS"}
}

# Nsight Compute's full sections (clocks untouched) on the second launch of a variant's kernels.
profile() {  # LIMIT NAME SUITE:WORKLOAD|KEY VARIANT [bench args...]
    local rep=() limit="$1" pick=(--variants default)
    shift
    [ -n "${SOURCE:-}" ] && rep=(-o "$out/$1")
    [ "$3" = - ] || pick=(--variant "$3")
    timeout "$limit" "$ncu" --clock-control none --set full --import-source no -k regex:_kernel --launch-skip 1 \
        --launch-count 1 "${rep[@]}" "$carry/blockfuse" bench --workload "$(workload_key "$2")" "${pick[@]}" \
        --single-run --no-ceilings "${@:4}" || return
    if [ -n "${SOURCE:-}" ]; then
        "$ncu" -i "$out/$1.ncu-rep" --print-details all &&
            "$ncu" -i "$out/$1.ncu-rep" --page source --print-source sass --csv > "$out/sass_$1.csv" &&
            rm -f "$out/$1.ncu-rep"
    fi
}

env_words() {  # how many leading VAR=value words
    local n=0
    while [ $# -gt 0 ] && [[ "$1" == *=* && "$1" != -* ]]; do n=$((n + 1)); shift; done
    echo "$n"
}

step() {
    local kind="$1" name="$2"; shift 2
    local log="$out/$name.txt" rc
    local t0=$SECONDS limit=$((budget - SECONDS))
    [ "$limit" -gt "${STEP_LIMIT:-300}" ] && limit="${STEP_LIMIT:-300}"
    if [ "$limit" -lt 5 ]; then
        echo "== $kind $name: skipped, the recipe's budget of $budget s is spent"
        failed=$((failed + 1))
        return
    fi
    case "$kind" in
        context) bash bench/gpu_context.sh > "$log" 2>&1 ;;
        test | sanitize)
            local pre=() n
            if [ "$kind" = sanitize ]; then
                pre=("$san" --tool "$1" --error-exitcode 1)
                [ "$1" = memcheck ] && pre+=(--leak-check full)
                shift
            fi
            n=$(env_words "$@")
            timeout "$limit" env "${@:1:n}" "${pre[@]}" "$carry/${*:n+1:1}" "${@:n+2}" > "$log" 2>&1 ;;
        bench) timeout "$limit" "$carry/blockfuse" bench "$@" --out "$out/$name" > "$log" 2>&1 ;;
        torch) timeout "$limit" python3 bench/pytorch_baseline.py --suite "$1" --out "$out/$name.json" "${@:2}" > "$log" 2>&1 ;;
        py) timeout "$limit" env PYTHONPATH="$PWD/python" BLOCKFUSE_RUNTIME_LIB="$PWD/$carry/libblockfuse_runtime.so" \
                python3 "$1" --out "$out" "${@:2}" > "$log" 2>&1 ;;
        tune) timeout "$limit" "$carry/blockfuse" tune --device cuda --measure "$1" --records "$out/$name.jsonl" "${@:2}" \
                  > "$log" 2>&1 ;;
        python) timeout "$limit" python3 "bench/$1" "${@:2}" --out "$out/$name.json" > "$log" 2>&1 ;;
        merge) python3 bench/merge_results.py --ours "$out/$1/results.json" --torch "$out/$2.json" \
                   --out-md "$out/$name.md" --out-csv "$out/$name.csv" --out-json "$out/$name.json" > "$log" 2>&1 ;;
        pick)
            if [ $# -eq 0 ]; then
                echo "error: no workloads to pick (NAMES)" > "$log"
                false
            else
                local w
                for w in "$@"; do echo "${w#*:} $(workload_key "$w")"; done > "$out/$name.suite"
                cat "$out/$name.suite" > "$log"
                ! grep -q ' $' "$out/$name.suite"  # a name not in its suite file
            fi ;;
        dram) dram "$out/$name" "$1" "$limit" > "$log" 2>&1 ;;
        profile) profile "$limit" "$name" "$@" > "$log" 2>&1 ;;
        report) python3 bench/report.py "$out/$1" ${2:+--torch "$out/$2.json"} > "$log" 2>&1 ;;
        *) echo "error: unknown step '$kind' in $file" > "$log"; false ;;
    esac
    rc=$?
    [ "$rc" -eq 0 ] || failed=$((failed + 1))
    echo "== $kind $name: exit $rc ($((SECONDS - t0)) s)"
    tail -n "${TAIL:-4}" "$log"
}

while read -r line; do
    line="${line%%#*}"
    [ -z "${line// }" ] && continue
    eval "set -- $line"  # recipes are the project's own data: $VARS expand from the environment
    step "$@" < /dev/null
done < "$file"
tar -czf "$OUT/$recipe.tgz" -C "$OUT" "$recipe"
echo "recipe $recipe: $failed failed steps; $OUT/$recipe.tgz"
exit "$failed"
