#!/usr/bin/env bash
# A CUDA kernel's block size must be the constant the runtime gives it (its description's threads_per_block:
# threads_k x threads_x, flat_threads, the fused block's mapping; for a layer-by-layer block or stem, whose
# layers have mappings of their own, the largest of them, so each launch is at most that): the launch checker
# and the register cap the kernel is loaded with (runtime/kernel_registry.cpp) both count on it. For each key, `blockfuse generate
# --device cuda` writes every strategy's kernel with its lowered statement (no GPU needed); every kernel launch
# in it (halide_cuda_run's three thread extents) is checked against that number.
#   usage: cuda_block_size.sh BLOCKFUSE KEY...
set -u
bf="$1"; shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export BLOCKFUSE_KERNEL_CACHE="${BLOCKFUSE_KERNEL_CACHE:-$out/cache}"
"$bf" generate "$@" --device cuda --out "$out/kernels" > "$out/generate.txt" 2>&1 \
    || { cat "$out/generate.txt"; echo "FAIL: generate exited $?"; exit 1; }
fail=0 kernels=0
for desc in "$out"/kernels/*/*.json; do
    dir=$(dirname "$desc"); name=$(basename "$dir")
    read -r want most < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
layers = d["family"] in ("block", "stem") and d["params"].get("strategy") in ("layer_by_layer", "layer_by_layer_tc")
print(d["threads_per_block"], "max" if layers else "exact")' "$desc")
    # Each launch's kernel and thread extents: the 4th-6th arguments after the name, split at top-level commas
    # (a grid extent may be an expression such as "t12 + 1" or "max(a, b)").
    launches=$(python3 -c 'import re, sys
for path in sys.argv[1:]:
    text = open(path, errors="replace").read()
    for m in re.finditer(r"halide_cuda_run\(cuda\[0\], \"(\w+)\", ", text):
        args, depth, cur, i = [], 0, "", m.end()
        while len(args) < 6 and i < len(text):
            ch = text[i]
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                args.append(cur.strip())
                cur = ""
            else:
                cur += ch
            i += 1
        print(m.group(1), *(a.replace(" ", "") for a in args[3:6]))' "$dir"/*.stmt)
    [ -n "$launches" ] || { echo "FAIL: $name: no CUDA launch in its statement"; fail=1; continue; }
    kernels=$((kernels + 1))
    while read -r fn tx ty tz; do
        if ! [[ "$tx$ty$tz" =~ ^[0-9]+$ ]]; then
            echo "FAIL: $name $fn: block size ($tx, $ty, $tz) depends on the shape"; fail=1
        elif [ "$most" = exact ] && [ $((tx * ty * tz)) -ne "$want" ] || [ $((tx * ty * tz)) -gt "$want" ]; then
            echo "FAIL: $name $fn: block of $tx x $ty x $tz threads, its description gives $want ($most)"; fail=1
        fi
    done <<<"$launches"
done
[ "$kernels" -gt 0 ] || { cat "$out/generate.txt"; echo "FAIL: no kernel generated"; exit 1; }
[ "$fail" -eq 0 ] && echo "ok: every launch of $kernels kernels has its description's block size"
exit $fail
