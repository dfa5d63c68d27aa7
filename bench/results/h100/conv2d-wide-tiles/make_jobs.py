"""The candidates of the wide-tile runs (bench/recipes/conv2d_wide_tiles.txt and conv2d_wide_tiles_ab.txt), one JSON
line each for tools/grid_plans.py.
usage (from the repository root): python3 make_jobs.py [grid | ab] > jobs.jsonl
  grid: highres and highres-bias (workloads/conv2d.txt) on wgmma block tiles wider than the one-warpgroup 64 x 128 of
        their records, each ring depth, the epilogue staged or not; first, as the control, the records' tiling (64 x
        128, a 4-stage ring, the epilogue staged).
  ab:   two warpgroups (128 x 128) with 2-4 stages and 64 x 256 against the one-warpgroup tiling (the control) on
        highres, highres-bias and three larger shapes, written to wide.suite too."""

import itertools
import json
import sys

WHICH = sys.argv[1] if len(sys.argv) > 1 else "grid"
CONTROL = ((4, 128), 4, 1)  # warps_m (4 a warpgroup of 64 rows), warp_n; ring stages; epilogue staged
keys = {line.split()[0]: line.split()[1] for line in open("workloads/conv2d.txt") if line.strip()[:1] not in ("", "#")}
rows = [keys["highres"], keys["highres-bias"]]
if WHICH == "grid":
    tiles = [((8, 128), s) for s in (2, 3, 4)] + [((4, 256), s) for s in (2, 3, 4)] + [((8, 256), s) for s in (2, 3)]
    tiles += [((8, 64), s) for s in (3, 4)] + [((4, 128), s) for s in (5, 6)]
    points = [(row, CONTROL) for row in rows]
    points += [(row, (t, s, c)) for row, (t, s), c in itertools.product(rows, tiles, (1, 0))]
else:
    wide = {
        "wide-3x3-c256-28-n32": "conv2d:n=32,c=256,h=28,w=28,k=256,r=3,s=3,stride=1,pad=1,groups=1,dtype=f16",
        "wide-3x3-c128-28-n128": "conv2d:n=128,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1,groups=1,dtype=f16",
        "wide-3x3s2-c128-56-n64": "conv2d:n=64,c=128,h=56,w=56,k=256,r=3,s=3,stride=2,pad=1,groups=1,dtype=bf16",
    }
    with open("wide.suite", "w") as f:
        for name, key in [("highres", rows[0]), ("highres-bias", rows[1])] + list(wide.items()):
            f.write(f"{name} {key}\n")
    tilings = [CONTROL, ((8, 128), 3, 1), ((8, 128), 2, 1), ((8, 128), 4, 1), ((4, 256), 2, 1)]
    points = [(row, t) for row in rows + list(wide.values()) for t in tilings]
for row, ((warps_m, warp_n), stages, stage_c) in points:
    knobs = dict(warp_m=16, warp_n=warp_n, warps_m=warps_m, warps_n=1, k_step=64, pad=0, prefetch=0, split_k=1,
                 wgmma=1, stages=stages, stage_c=stage_c, max_registers=0)
    print(json.dumps({"workload": row, "strategy": "tensor_cores", "knobs": knobs}))
