#!/usr/bin/env bash
# The one runner for a GPU host: a remote machine with the GPU, without Halide or network. What it runs
# is data, a recipe (bench/recipes/NAME.txt): one step a line, `STEP NAME ARGS...`, $VARS expanded
# from the environment. Everything it writes goes to $OUT/NAME/..., tarred at the end into
# $OUT/RECIPE.tgz (one file to bring back).
#   usage (on the GPU host, from the repository root): OUT=DIR [VAR=...] bench/gpu_host.sh RECIPE
# The binaries, the CUDA kernels they load and the kernel cache come in .carry/ (tools/prepare-carry.sh,
# on the machine with Halide), so every kernel a recipe runs was generated there.
# Steps:
#   context NAME                       GPU, driver, clocks, toolchain (nvidia-smi, torch)
#   test NAME [VAR=value...] BINARY [ARGS...]      a test binary of .carry/, its environment first
#   sanitize NAME TOOL [VAR=value...] BINARY [ARGS...]   the same under compute-sanitizer --tool TOOL
#   bench NAME [blockfuse bench args...]          the harness; results in NAME/results.{json,csv}
#   torch NAME SUITE [pytorch_baseline.py args...] PyTorch eager and torch.compile on a suite file
#   merge NAME BENCH TORCH               our results beside PyTorch's (bench/merge_results.py)
#   tune NAME PLAN [blockfuse tune args...]   measure a tuning plan built where Halide is (tune/README.md);
#                                        records in NAME.jsonl
#   py NAME SCRIPT [ARGS...]             a Python script with python/ on its path and the carried runtime
#                                        library (blockfuse.torch): `python3 SCRIPT --out $OUT/RECIPE ARGS`
#   python NAME SCRIPT [ARGS...]         a script of bench/ (e.g. tc_torch.py), its JSON to NAME.json (--out)
# Each step is limited to $STEP_LIMIT seconds (default 300) and to what is left of $BUDGET (default 540 s
# for the whole recipe: the archive is always written), and prints its exit status; a failing step does
# not stop the recipe (its log says why), the runner's exit status counts the failed and skipped steps.
set -uo pipefail
recipe="${1:?usage: OUT=DIR bench/gpu_host.sh RECIPE}"
file="bench/recipes/$recipe.txt"
[ -f "$file" ] || { echo "error: no recipe '$recipe' (bench/recipes/)" >&2; exit 2; }
out="${OUT:?set OUT}/$recipe"
mkdir -p "$out"
carry=.carry
[ -x $carry/blockfuse ] || tar -xJf $carry/carry.tar.xz -C $carry
export BLOCKFUSE_KERNEL_CACHE="$PWD/$carry/cache" BLOCKFUSE_PREBUILT_DIR="$PWD/$carry/kernels" PYTHONUNBUFFERED=1
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer/compute-sanitizer \
      2>/dev/null | head -1)
budget="${BUDGET:-540}"
failed=0

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
                   --out-md "$out/$name.md" --out-csv "$out/$name.csv" > "$log" 2>&1 ;;
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
