#!/usr/bin/env bash
# Bad input through ./run: each case must exit 2 with one 'error:' line naming what is wrong,
# and never a crash or a raw Halide error.
set -u
run="$1"
fail=0
expect() {  # expect <substring> <args...>
    local want="$1"; shift
    local out rc
    out=$("$run" "$@" 2>&1); rc=$?
    if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out" || [ "$(grep -c '^error:' <<<"$out")" -ne 1 ]; then
        echo "FAIL: ./run $* -> rc=$rc, output: $out"; fail=1
    else
        echo "ok: ./run $* -> $out"
    fi
}
expect "missing field 'k'" check "conv2d:n=1,c=8,h=4,w=4,r=3,s=3"
expect "field 'groups' = 3 does not divide c = 8" check "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,groups=3"
expect "field 'dtype' = 'f64' is not supported" check "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,dtype=f64"
expect "empty output" check "conv2d:n=1,c=8,h=1,w=1,k=8,r=3,s=3"
expect "no ':' found" check "garbage"
expect "field 'w' = 0 must be positive" bench --workload "conv2d:n=1,c=8,h=4,w=0,k=8,r=3,s=3"
expect "unknown suite 'nosuchsuite'" bench --suite nosuchsuite
expect "--dtype 'f8' is not supported" bench --suite conv2d --dtype f8
expect "a stage (blocks = 3) needs stride 1" bench --workload "mbconv:n=1,c=8,h=9,w=9,e=2,stride=2,blocks=3"
expect "field 'blocks' = 9 must be 1 to 4" check "mbconv:n=1,c=8,h=4,w=4,e=2,blocks=9"
expect "--strategies 'fast' is not one of layer_by_layer, fused, depth_first, direct" bench --workload "mbconv:n=1,c=8,h=9,w=9,e=2" --strategies fast
expect "tuning records '/nonexistent/records.jsonl': no such file" bench --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --tuning-records /nonexistent/records.jsonl
bad_records=$(mktemp); echo '{"workload": "conv2d:n=1,c=8", "target": "cpu", "variant": "x", "median_ms": 1}' > "$bad_records"
expect "line 1: invalid workload" bench --workload "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1" --tuning-records "$bad_records"
rm -f "$bad_records"
expect "results '/nonexistent/results.json': no such file" records --from /nonexistent/results.json --out /dev/null
exit $fail
