"""A tuning plan of exactly the given candidates: one `blockfuse tune --plan-out` a candidate, each of its knobs held
by `--knob` (the knobs not named are the shape heuristic's pick for that GPU, the tuner's first draw; it checks the
point before it builds it), the plans joined in the candidates' order. For grids the search would not draw as a
whole (tune/README.md: a plan is measured on the GPU host with `blockfuse tune --measure`).
usage: python3 tools/grid_plans.py CANDIDATES.jsonl --out PLAN.jsonl [--gpu "NVIDIA H200:sm_90"] [--jobs 2]
  CANDIDATES.jsonl: one candidate a line, {"workload": KEY, "strategy": NAME, "knobs": {NAME: VALUE, ...}}
  (BLOCKFUSE_KERNEL_CACHE: where the kernels are built; BLOCKFUSE_BUILD_DIR: the build, default build/)"""

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def plan_one(blockfuse, gpu, job, out, empty):
    args = [blockfuse, "tune", "--device", "cuda", "--gpu", gpu, "--workload", job["workload"]]
    args += ["--strategies", job["strategy"], "--trials", "1", "--batch", "1", "--jobs", "1", "--no-seed-records"]
    args += ["--records", empty, "--plan-out", out]
    for name, value in job["knobs"].items():
        args += ["--knob", f"{name}={value}"]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        return "failed: " + (p.stdout + p.stderr).strip()[-600:]
    return p.stdout.strip().splitlines()[-1][-140:] if p.stdout.strip() else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("candidates", help="candidates, one JSON object a line (workload, strategy, knobs)")
    ap.add_argument("--out", required=True, help="the plan: every candidate's plan line, in order")
    ap.add_argument("--gpu", default="NVIDIA H200:sm_90", help="the GPU the kernels are built for")
    ap.add_argument("--jobs", type=int, default=2, help="candidates built at once")
    a = ap.parse_args()
    blockfuse = os.path.join(os.environ.get("BLOCKFUSE_BUILD_DIR", os.path.join(ROOT, "build")), "bench", "blockfuse")
    jobs = [json.loads(line) for line in open(a.candidates) if line.strip()]
    for i, j in enumerate(jobs):
        missing = {"workload", "strategy", "knobs"} - set(j)
        if missing:
            sys.exit(f"error: {a.candidates} line {i + 1}: no {', '.join(sorted(missing))}")
    failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        empty = os.path.join(scratch, "none.jsonl")  # no records: each plan holds its one point
        outs = [os.path.join(scratch, f"p{i:04d}.jsonl") for i in range(len(jobs))]
        with cf.ThreadPoolExecutor(a.jobs) as ex:
            said = ex.map(lambda i: plan_one(blockfuse, a.gpu, jobs[i], outs[i], empty), range(len(jobs)))
            for i, s in enumerate(said):
                failed += s.startswith("failed")
                print(f"{i + 1}/{len(jobs)} {jobs[i]['workload'][:48]} {jobs[i]['strategy']}: {s}", flush=True)
        with open(a.out, "w") as plan:
            for o in outs:
                if os.path.exists(o):
                    plan.write(open(o).read())
    lines = sum(1 for _ in open(a.out))
    print(f"{a.out}: {lines} candidates of {len(jobs)}; {failed} not planned")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
