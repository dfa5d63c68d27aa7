#!/usr/bin/env bash
# Every suite file under workloads/ through `./run check`: each key valid (exit 0, one canonical key printed per
# line of the file). The seed library's Conv & Pool table (../shared/refs/002_eea04ff0ba733a8c.txt) in full:
# its 120 workload and dtype rows are pool.txt (65), conv1d.txt (16), conv3d.txt (8) and the Conv2dFwd rows of
# conv2d.txt (31 of its 33: the other two are the depthwise N=128 targets of the foundation issue).
set -u
run="$1" src="$2"
fail=0
for f in "$src"/workloads/*.txt; do
    mapfile -t keys < <(awk '!/^#/ && NF == 2 {print $2}' "$f")
    n=${#keys[@]}
    out=$("$run" check "${keys[@]}" 2>&1); rc=$?
    if [ "$rc" -ne 0 ] || [ "$(wc -l <<<"$out")" -ne "$n" ]; then
        echo "FAIL: $(basename "$f"): ./run check exit $rc: $out"; fail=1
    else
        echo "ok: $(basename "$f"): $n keys"
    fi
done
rows() { awk '!/^#/ && NF == 2' "$src/workloads/$1.txt" | grep -vc "$2"; }
table=$(( $(rows pool '^$') + $(rows conv1d '^$') + $(rows conv3d '^$') + $(rows conv2d 'n128') ))
if [ "$table" -ne 120 ]; then echo "FAIL: the table's suites hold $table rows, not 120"; fail=1; else echo "ok: 120 table rows"; fi
# Every op of the table has its rows, under the table's op names (pool.txt's comment lines).
for op in AvgPool1dFwd AvgPool2dFwd AvgPool3dFwd MaxPool1dFwd MaxPool1dIndicesFwd MaxPool2dFwd MaxPool2dIndicesFwd \
          MaxPool3dFwd MaxPool3dIndicesFwd AdaptiveAvgPool2dFwd AdaptiveMaxPool2dFwd AdaptiveMaxPool2dIndicesFwd MeanPoolingFwd; do
    grep -q "^# $op\b" "$src/workloads/pool.txt" || { echo "FAIL: no $op in pool.txt"; fail=1; }
done
exit $fail
