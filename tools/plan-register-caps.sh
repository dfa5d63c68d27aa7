#!/usr/bin/env bash
# A tuning plan of every JIT register cap of each row's recorded `fused_tc` tiling: per workload, its `fused_tc` pick
# of RECORDS for the H200 (`blockfuse records best`) gives the knobs the schedule searches, which are held (`--knob`), so the
# plan is that one kernel at each cap (tune/README.md). Built into the kernel cache for measuring on the GPU host
# (bench/recipes/register_caps.txt, with tools/prepare-carry.sh).
#   usage: tools/plan-register-caps.sh PLAN RECORDS SUITE:NAME...     (BLOCKFUSE_KERNEL_CACHE: where to build)
set -euo pipefail
plan="${1:?usage: tools/plan-register-caps.sh PLAN RECORDS SUITE:NAME...}"
records="${2:?records file}"
shift 2
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bf="${BLOCKFUSE_BUILD_DIR:-$root/build}/bench/blockfuse"
py="$root/.venv/bin/python"
gpu="NVIDIA H200:sm_90"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$bf" records best "$records" --target H200 --json > "$scratch/best.jsonl"
for w in "$@"; do
    key=$(awk -v n="${w#*:}" '$1 == n {print $2; exit}' "$root/workloads/${w%%:*}.txt")
    [ -n "$key" ] || { echo "error: no workload '$w' (workloads/${w%%:*}.txt)" >&2; exit 2; }
    # The knobs this schedule searches, as the tuner names them when asked to hold one it does not.
    searched=$("$bf" tune --device cuda --gpu "$gpu" --workload "$key" --strategies fused_tc --knob none=0 \
        --records "$scratch/none.jsonl" --plan-out "$scratch/none.plan" 2>&1 | grep -o "it searches [^)]*" | head -1 |
        sed 's/it searches //; s/, /,/g') || true
    mapfile -t held < <("$py" - "$key" "$searched" "$scratch/best.jsonl" <<'PY'
import json, sys
key, searched, path = sys.argv[1], [k for k in sys.argv[2].split(",") if k and k != "max_registers"], sys.argv[3]
for r in map(json.loads, open(path)):
    if r["workload"] == key and r["strategy"] == "fused_tc":
        for k in searched:
            if k in r["knobs"]:
                print("--knob")
                print("%s=%d" % (k, r["knobs"][k]))
PY
)
    [ "${#held[@]}" -gt 0 ] || { echo "$w: no fused_tc record for the H200 in $records (skipped)"; continue; }
    echo "$w: ${held[*]}"
    "$bf" tune --device cuda --gpu "$gpu" --workload "$key" --strategies fused_tc "${held[@]}" --search random \
        --batch 12 --records "$scratch/records.jsonl" --plan-out "$plan" | tail -1
done
