#!/usr/bin/env bash
# The tuner end to end on the CPU, on small conv2d shapes:
#  1. a planted wrong answer, hang and crash (BLOCKFUSE_TUNE_PLANT, tune/worker.h) are each recorded with
#     their failure kind, and the tuning goes on;
#     `records best --json` gives the fastest of them;
#  2. run again, it resumes: nothing already measured is measured again (a record of the same knobs from other
#     sources is measured again);
#  3. the dispatcher runs the tuned record's kernel (bench --tuning-records);
#  4. two shards (--shard 0/2, 1/2) tuning at once into one records file split the tasks between them and
#     leave every line whole;
#  5. a plan built by one process (--plan-out) is measured by another (--measure);
#  6. --knob holds a knob where it is asked to (every record has it), and a knob the schedule does not search
#     is refused with exit 2; so is a plan that cannot be written;
#  7. a build past --build-timeout is a build failure of that candidate, and nothing of it is cached;
#  8. CUDA JIT register caps of one kernel are candidates of their own (one build, a measurement each): a plan for
#     the H200 built here, every knob but the cap held, plans each cap once.
# The knobs that make LLVM's compile of a candidate slow (unrolled channels and windows, 2-D tiles: up to two
# minutes each on 2 cores) are held with --knob, so the candidates build in seconds.
#   usage: tune_end_to_end.sh BLOCKFUSE PYTHON
set -u
bf="$1"; py="$2"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export BLOCKFUSE_KERNEL_CACHE="${BLOCKFUSE_KERNEL_CACHE:-$dir/cache}"
fail() { echo "FAIL: $*"; exit 1; }
pins=(--knob cpu_unroll_c=1 --knob cpu_window_inner=0 --knob cpu_vec_k=1 --knob cpu_tile_y=1)
quick=(--device cpu --no-seed-records --jobs 2 --min-seconds 0.02 --min-samples 5 "${pins[@]}")
w1="conv2d:n=1,c=5,h=7,w=6,k=11,r=3,s=3,pad=1,dtype=f32"
w2="conv2d:n=2,c=3,h=5,w=9,k=6,r=1,s=1,dtype=f32"
w3="conv2d:n=1,c=4,h=6,w=5,k=7,r=3,s=3,stride=2,pad=1,dtype=f32"

# 1. failures planted on parts of the CPU conv2d space (cpu_lanes, cpu_rows); random search with a fixed seed
#    proposes the same 12 candidates every run, whatever they measure (cpu_trim_window held too: the space those
#    12 were drawn from, each kind of failure among them).
plant="wrong_answer:cpu_lanes=16;timeout:cpu_rows=8;crash:cpu_rows=2"
BLOCKFUSE_TUNE_PLANT="$plant" "$bf" tune "${quick[@]}" --knob cpu_trim_window=0 --workload "$w1" --trials 12 \
    --search random --seed 4 \
    --timeout 3 --records "$dir/r.jsonl" --out "$dir/summary" > "$dir/tune1.txt" 2>&1 \
    || { cat "$dir/tune1.txt"; fail "tune exited $?"; }
grep -q "trial 12/12" "$dir/tune1.txt" || { cat "$dir/tune1.txt"; fail "no progress line of trial 12"; }
"$py" - "$dir/r.jsonl" "$dir/summary/summary.json" <<'PY' || fail "records of the planted run"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 12, len(recs)
kind = {}
for r in recs:
    k = r["knobs"]
    # the first matching item of the plant wins
    want = "wrong_answer" if k["cpu_lanes"] == 16 else "timeout" if k["cpu_rows"] == 8 else \
           "crash" if k["cpu_rows"] == 2 else ""
    assert (k["cpu_unroll_c"], k["cpu_window_inner"], k["cpu_vec_k"], k["cpu_tile_y"]) == (1, 0, 1, 1), k  # --knob
    assert r["failure"] == want, (k, r["failure"], want, r["check"])
    if want:
        assert r["median_ms"] == 0, r
    else:
        assert r["median_ms"] > 0 and r["samples"] >= 5 and "0 beyond tolerance" in r["check"], r
    assert r["version"] == 3 and r["searcher"] == "random" and r["trial"] >= 1, r
    kind[want] = kind.get(want, 0) + 1
assert all(kind.get(k, 0) >= 1 for k in ("crash", "timeout", "wrong_answer", "")), kind
s = json.load(open(sys.argv[2]))
assert s["schema"] == "blockfuse.tune.v1", s
t = s["tasks"][0]
failed = {k: v for k, v in kind.items() if k}
assert t["trials"] == 12 and t["failed"] == sum(failed.values()) and t["failures"] == failed, (t, kind)
best = min(r["median_ms"] for r in recs if not r["failure"])
assert abs(t["best_ms"] - best) < 1e-9, (t, best)
print("planted failures recorded:", kind)
PY
# `records best --json`: the pick is the fastest passing record, one JSON line.
"$bf" records best "$dir/r.jsonl" --json > "$dir/best.jsonl" || fail "records best --json exited $?"
"$py" -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
best = [json.loads(l) for l in open(sys.argv[2])]
fastest = min((r for r in recs if not r["failure"]), key=lambda r: r["median_ms"])
assert len(best) == 1 and best[0]["knobs"] == fastest["knobs"] and best[0]["median_ms"] == fastest["median_ms"], best' \
    "$dir/r.jsonl" "$dir/best.jsonl" || fail "records best --json"

# 2. resume: every candidate is in the records already.
"$bf" tune "${quick[@]}" --workload "$w1" --trials 12 --records "$dir/r.jsonl" > "$dir/tune2.txt" 2>&1 \
    || { cat "$dir/tune2.txt"; fail "resumed tune exited $?"; }
grep -q "resumed: 12 candidates" "$dir/tune2.txt" || { cat "$dir/tune2.txt"; fail "no resume"; }
[ "$(wc -l < "$dir/r.jsonl")" -eq 12 ] || fail "the resumed run measured again: $(wc -l < "$dir/r.jsonl") records"
# ...but a record of the same knobs whose kernel was built from other sources (its name's hash differs) is no
# measurement of this kernel: a seed only, its trial run again.
"$py" - "$dir/r.jsonl" "$dir/stale.jsonl" <<'PY' || fail "writing the stale record"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ok = next(r for r in recs if not r["failure"])
ok["variant"] = ok["variant"].split("@")[0] + "@00000000"
with open(sys.argv[2], "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in recs)
PY
"$bf" tune "${quick[@]}" --workload "$w1" --trials 12 --records "$dir/stale.jsonl" > "$dir/tune2s.txt" 2>&1 \
    || { cat "$dir/tune2s.txt"; fail "tune over a stale record exited $?"; }
grep -q "resumed: 11 candidates" "$dir/tune2s.txt" || { cat "$dir/tune2s.txt"; fail "a stale record resumed"; }
[ "$(wc -l < "$dir/stale.jsonl")" -eq 13 ] || fail "after a stale record: $(wc -l < "$dir/stale.jsonl") records, not 13"

# 3. the dispatcher picks the tuned record (the fastest passing one) for this workload.
"$bf" bench --device cpu --workload "$w1" --tuning-records "$dir/r.jsonl" --variants default \
    --min-seconds 0 --min-samples 1 > "$dir/bench.txt" 2>&1 || { cat "$dir/bench.txt"; fail "bench exited $?"; }
grep -q "tuning record (blockfuse tune" "$dir/bench.txt" || { cat "$dir/bench.txt"; fail "the tuned record was not used"; }
# A record whose kernel was built from other sources (the stale one above, made the fastest) still dispatches, and
# says that its time is not this kernel's.
"$py" - "$dir/stale.jsonl" "$dir/stale_best.jsonl" <<'PY' || fail "writing the fastest stale record"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
stale = next(r for r in recs if r["variant"].endswith("@00000000"))
stale["median_ms"] = 1e-6
with open(sys.argv[2], "w") as f:
    f.write(json.dumps(stale) + "\n")
PY
"$bf" bench --device cpu --workload "$w1" --tuning-records "$dir/stale_best.jsonl" --variants default \
    --min-seconds 0 --min-samples 1 > "$dir/bench_stale.txt" 2>&1 || { cat "$dir/bench_stale.txt"; fail "bench exited $?"; }
grep -q "@00000000 (commit .*); its sources changed since (now .*): the time is not this kernel's" \
    "$dir/bench_stale.txt" || { cat "$dir/bench_stale.txt"; fail "a stale record applied without a word"; }
! grep -q "its sources changed since" "$dir/bench.txt" || { cat "$dir/bench.txt"; fail "a fresh record called stale"; }
# records best names the fastest passing record's knobs, as the kernel line of bench does.
"$bf" records best "$dir/r.jsonl" > "$dir/best.txt" 2>&1 || { cat "$dir/best.txt"; fail "records best exited $?"; }
knobs=$(sed -n 's/^conv2d direct: [^[]*\[\(.*\)\] (tuning record.*/\1/p' "$dir/bench.txt")
# shellcheck disable=SC2015  # fail exits: the || part runs only when a check fails
[ -n "$knobs" ] && grep -q "12 records ([0-9]* failed) *$knobs\$" "$dir/best.txt" \
    || { cat "$dir/bench.txt" "$dir/best.txt"; fail "records best and the dispatched kernel disagree ('$knobs')"; }

# 4. two shards at once into one file: tasks split, every line whole.
for i in 0 1; do
    "$bf" tune "${quick[@]}" --workload "$w2" "$w3" --trials 3 --shard "$i/2" --records "$dir/shared.jsonl" \
        > "$dir/shard$i.txt" 2>&1 &
done
wait -n; r1=$?; wait -n; r2=$?
# shellcheck disable=SC2015  # fail exits: the || part runs only when a check fails
[ "$r1" -eq 0 ] && [ "$r2" -eq 0 ] || { cat "$dir"/shard*.txt; fail "a shard exited non-zero"; }
"$py" - "$dir/shared.jsonl" "$w2" "$w3" <<'PY' || { cat "$dir"/shard*.txt; fail "sharded records"; }
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in recs:
    by.setdefault(r["workload"], []).append(r)
assert len(by) == 2 and all(len(v) == 3 for v in by.values()), {k: len(v) for k, v in by.items()}
print("shards:", {k: len(v) for k, v in by.items()})
PY
# shellcheck disable=SC2015  # fail exits: the || part runs only when a check fails
grep -q "1 tasks" "$dir/shard0.txt" && grep -q "1 tasks" "$dir/shard1.txt" || { cat "$dir"/shard*.txt; fail "shards not one task each"; }

# 5. plan here, measure there (here the same machine): the plan's candidates land in the records.
"$bf" tune "${quick[@]}" --workload "$w2" --trials 2 --plan-out "$dir/plan.jsonl" --records "$dir/p.jsonl" \
    > "$dir/plan.txt" 2>&1 || { cat "$dir/plan.txt"; fail "plan exited $?"; }
[ "$(wc -l < "$dir/plan.jsonl")" -eq 2 ] || { cat "$dir/plan.txt"; fail "plan of $(wc -l < "$dir/plan.jsonl") lines"; }
[ ! -s "$dir/p.jsonl" ] || fail "planning measured something"
"$bf" tune --device cpu --measure "$dir/plan.jsonl" --records "$dir/p.jsonl" --min-seconds 0.02 \
    > "$dir/measure.txt" 2>&1 || { cat "$dir/measure.txt"; fail "measure exited $?"; }
"$py" -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 2 and all(not r["failure"] and r["median_ms"] > 0 and "--measure" in r["source"] for r in recs), recs' \
    "$dir/p.jsonl" || fail "measured plan"
# 6. a knob the schedule does not search: one line naming it, exit 2, nothing measured.
"$bf" tune --device cpu --workload "$w2" --knob chunk=8 --records "$dir/bad.jsonl" > "$dir/bad.txt" 2>&1
rc=$?
# shellcheck disable=SC2015  # fail exits: the || part runs only when a check fails
[ "$rc" -eq 2 ] && grep -q "knob chunk: the conv2d direct schedule on cpu searches no knob of that name" "$dir/bad.txt" \
    && [ ! -s "$dir/bad.jsonl" ] || { cat "$dir/bad.txt"; fail "--knob chunk=8 on conv2d: exit $rc"; }
# 6b. a plan that cannot be written (its folder does not exist): that said, exit 2, nothing built or measured.
"$bf" tune --device cpu --workload "$w2" --trials 2 --plan-out "$dir/no/such/plan.jsonl" --records "$dir/np.jsonl" \
    > "$dir/np.txt" 2>&1
rc=$?
# shellcheck disable=SC2015  # fail exits: the || part runs only when a check fails
[ "$rc" -eq 2 ] && grep -q "plan-out '$dir/no/such/plan.jsonl': cannot write to it" "$dir/np.txt" \
    && [ ! -s "$dir/np.jsonl" ] || { cat "$dir/np.txt"; fail "--plan-out into a missing folder: exit $rc"; }
# 7. no build finishes in 0.2 s: both candidates are build failures, and the cache holds no failure for them
#    (a cache of its own: the shards above built this workload's first candidates already).
export BLOCKFUSE_KERNEL_CACHE="$dir/cache7"
"$bf" tune "${quick[@]}" --workload "$w3" --trials 2 --build-timeout 0.2 --records "$dir/slow.jsonl" --out "$dir/slow" \
    > "$dir/slow.txt" 2>&1 || { cat "$dir/slow.txt"; fail "tune --build-timeout exited $?"; }
"$py" -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
assert len(recs) == 2 and all(r["failure"] == "build" and "build limit of 0.2 s" in r["check"] for r in recs), recs' \
    "$dir/slow.jsonl" || { cat "$dir/slow.txt"; fail "records of builds past the limit"; }
"$bf" cache list > "$dir/cache.txt" 2>&1 || { cat "$dir/cache.txt"; fail "cache list exited $?"; }
! grep -qi "failed" "$dir/cache.txt" || { cat "$dir/cache.txt"; fail "a build stopped at the limit was cached as failed"; }
# 8. the heuristic's tiling of a small fused tensor-core MBConv held (its first plan's one candidate), then a plan
#    of every register cap of that one kernel: each cap its module JITs at once, those below the rule's mma.sync
#    floor (168) among them, and the rule's cap (0) only where it differs from an explicit one.
w4="mbconv:n=1,c=16,h=9,w=7,e=4,k=3,stride=1,act=relu6,dtype=f16"
cuda=(--device cuda --gpu "NVIDIA H200:sm_90" --no-seed-records --workload "$w4" --strategies fused_tc)
"$bf" tune "${cuda[@]}" --trials 1 --records "$dir/c1.jsonl" --plan-out "$dir/c1.plan" > "$dir/c1.txt" 2>&1 \
    || { cat "$dir/c1.txt"; fail "CUDA plan exited $?"; }
mapfile -t held < <("$py" -c '
import json, sys
r = json.loads(open(sys.argv[1]).readline())
for k in ("chunk", "tc_warps", "tile_x", "tile_y"): print("--knob\n%s=%d" % (k, r["knobs"][k]))' "$dir/c1.plan")
"$bf" tune "${cuda[@]}" "${held[@]}" --search random --batch 12 --records "$dir/c2.jsonl" --plan-out "$dir/c2.plan" \
    > "$dir/c2.txt" 2>&1 || { cat "$dir/c2.txt"; fail "CUDA plan of register caps exited $?"; }
"$py" -c '
import json, sys
plan = [json.loads(l) for l in open(sys.argv[1])]
caps = sorted(r["max_registers"] for r in plan)
assert len(caps) == len(set(caps)) >= 4 and {64, 96, 128, 168} <= set(caps), caps
assert len({json.dumps(r["knobs"], sort_keys=True) for r in plan}) == 1, plan
print("register caps planned:", caps)' "$dir/c2.plan" || { cat "$dir/c2.txt"; fail "register caps not each planned"; }
# 9. seeds from another GPU of the same architecture: this workload's record on another sm_90 card is among the first
#    candidates planned (after the heuristic's), one of an sm_80 card is not.
"$py" -c '
import json, sys
base = {"workload": sys.argv[1], "strategy": "fused_tc", "family": "block", "halide_version": "21.0.0",
        "failure": "", "median_ms": 0.01, "version": 3}
with open(sys.argv[2], "w") as f:
    for target, knobs in (("cuda:ANOTHER SM90 GPU:sm_90", {"chunk": 32, "tc_warps": 2, "tile_x": 3, "tile_y": 5}),
                          ("cuda:AN SM80 GPU:sm_80", {"chunk": 16, "tc_warps": 1, "tile_x": 2, "tile_y": 6})):
        f.write(json.dumps(dict(base, target=target, knobs=knobs)) + "\n")' "$w4" "$dir/siblings.jsonl"
"$bf" tune --device cuda --gpu "NVIDIA H200:sm_90" --seed-records "$dir/siblings.jsonl" --workload "$w4" \
    --strategies fused_tc --trials 2 --batch 2 --records "$dir/s1.jsonl" --plan-out "$dir/s1.plan" > "$dir/s1.txt" 2>&1 \
    || { cat "$dir/s1.txt"; fail "plan seeded from siblings exited $?"; }
"$py" -c '
import json, sys
plan = [{k: r["knobs"][k] for k in ("chunk", "tc_warps", "tile_x", "tile_y")} for r in map(json.loads, open(sys.argv[1]))]
assert {"chunk": 32, "tc_warps": 2, "tile_x": 3, "tile_y": 5} in plan, plan
assert {"chunk": 16, "tc_warps": 1, "tile_x": 2, "tile_y": 6} not in plan, plan' "$dir/s1.plan" \
    || { cat "$dir/s1.txt"; fail "the sm_90 sibling record was not planned first (or the sm_80 one was)"; }
echo "ok: planted failures isolated, resume, dispatch, shards, plan/measure, held knobs, build limit, register caps, \
sibling seeds"
