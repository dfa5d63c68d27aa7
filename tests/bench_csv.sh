#!/usr/bin/env bash
# The harness's results.csv is valid CSV: a Squeeze-Excitation block's fused row is labelled
# "fused (...) [split at SE: tile sums, then the block with the gate]", commas inside one field. Every row must parse to the
# header's column count, and the label must survive in its own column (it once spilled over three).
#   usage: bench_csv.sh BLOCKFUSE PYTHON
set -u
bf="$1"; py="$2"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bf" bench --device cpu --workload "mbconv:n=1,c=8,h=9,w=7,e=2,k=3,stride=1,se=1,act=silu,dtype=f32" \
    --min-seconds 0 --min-samples 1 --out "$out" > "$out/log.txt" 2>&1 || { cat "$out/log.txt"; exit 1; }
"$py" - "$out/results.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
head, body = rows[0], rows[1:]
bad = [r for r in body if len(r) != len(head)]
assert body and not bad, f"rows with a column count other than the header's {len(head)}: {bad}"
d = [dict(zip(head, r)) for r in body]
assert any("[split at SE: tile sums, then the block with the gate]" in r["strategy"] for r in d), [r["strategy"] for r in d]
assert all(r["key"].startswith("mbconv:") and r["check_ok"] == "true" for r in d), d
print(f"ok: {len(body)} rows, {len(head)} columns each")
PY
