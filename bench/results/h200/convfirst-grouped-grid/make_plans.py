"""The two grid plans of this run, one `blockfuse tune --plan-out` a grid point with every other knob held by --knob
(tools/grid_plans.py).
usage (from anywhere; REPO = the repository root with build/ made, BLOCKFUSE_KERNEL_CACHE = where the kernels go):
    python3 make_plans.py convfirst | grouped      -> PLAN (default plan_<which>.jsonl)"""

import itertools
import json
import os
import subprocess
import sys
import tempfile

WHICH = sys.argv[1]
PLAN = os.path.abspath(os.environ.get("PLAN", f"plan_{WHICH}.jsonl"))
os.chdir(os.environ.get("REPO", "."))
GRID = list(itertools.product((4, 8), ((2, 1), (2, 2)), (0, 2)))  # threads along x, tile, shared input tile


def convfirst_jobs():
    """ConvFirst's grouped layer on each row's best layer_by_layer_tc record of the H200 (the records at 1a1a04f)."""
    best = subprocess.run(
        ["build/bench/blockfuse", "records", "best", "autotune/records/h200.jsonl", "--target", "H200", "--json"],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    for line in best:
        r = json.loads(line)
        if not r["workload"].startswith("convfirst") or r["strategy"] != "layer_by_layer_tc":
            continue
        c = int(r["workload"].split("c=")[1].split(",")[0])
        for (tx, (tlx, tly), si), uc in itertools.product(GRID, (4, 8)):
            k = {a: b for a, b in r["knobs"].items() if a.startswith(("tc0_", "tc1_", "tc2_", "layer_"))}
            k.update(
                tc_grouped=0,
                max_registers=r["max_registers"],
                layer_vec_k=8,
                layer_stage_channels=1,
                layer_flat_threads=0,
                layer_unroll_reduction=1,
                layer_threads_k=c // 8,
                layer_threads_x=tx,
                layer_tile_x=tlx,
                layer_tile_y=tly,
                layer_unroll_channels=uc,
                layer_stage_input=si,
            )
            yield r["workload"], "layer_by_layer_tc", k


def grouped_jobs():
    """The stand-alone grouped 3x3 rows of workloads/grouped.txt, strategy direct."""
    for line in open("workloads/grouped.txt"):
        if not line.strip() or line.startswith("#") or "r=3" not in line:
            continue
        key = line.split()[1]
        f = dict(p.split("=") for p in key.split(":")[1].split(","))
        c, k, g = int(f["c"]), int(f["k"]), int(f["groups"])
        for tx, (tlx, tly), si in GRID:
            yield (
                key,
                "direct",
                dict(
                    vec_k=8,
                    stage_channels=1,
                    flat_threads=0,
                    unroll_reduction=1,
                    threads_k=min(k // 8, 32),
                    threads_x=tx,
                    tile_x=tlx,
                    tile_y=tly,
                    unroll_channels=8 if (c // g) % 8 == 0 else 4,
                    stage_input=si,
                ),
            )


JOBS = list(convfirst_jobs() if WHICH == "convfirst" else grouped_jobs())
with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
    for workload, strategy, knobs in JOBS:
        f.write(json.dumps({"workload": workload, "strategy": strategy, "knobs": knobs}) + "\n")
grid_plans = [sys.executable, "tools/grid_plans.py", f.name, "--out", PLAN, "--gpu", "NVIDIA H200:sm_90"]
sys.exit(subprocess.run(grid_plans).returncode)
