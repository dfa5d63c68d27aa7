#!/usr/bin/env python3
"""Best-so-far time against trial from tuning records, one line per searcher, one panel per workload and strategy.

    tools/plot_tuning.py RECORDS.jsonl [MORE.jsonl ...] --out DIR [--target SUBSTRING]

Reads the records `blockfuse tune` appends (runtime/tuning_records.h): each line's `searcher`, `trial` and the seed in
its `source` place it; failed candidates count as trials without improving the best. One thin line per seed, the
geometric mean over seeds bold. Writes DIR/tuning.svg and .png, and DIR/tuning.csv (workload, strategy, searcher,
seed, trial, best_ms) with the same numbers.
"""
import argparse
import csv
import json
import math
import os
import re
import sys


def load(paths, target):
    runs = {}
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"error: {path}:{n}: not JSON ({e})")
                if "searcher" not in r or "trial" not in r or not r.get("searcher"):
                    continue  # a record from bench --record or records --from: no search behind it
                if target and target not in r.get("target", ""):
                    continue
                m = re.search(r"--seed (\d+)", r.get("source", ""))
                key = (r["workload"], r["strategy"], r["searcher"], int(m.group(1)) if m else 0)
                runs.setdefault(key, []).append((int(r["trial"]), None if r.get("failure") else float(r["median_ms"])))
    if not runs:
        sys.exit("error: no tuner records (with searcher and trial) in " + ", ".join(paths))
    return runs


def best_so_far(trials):
    out, best = [], None
    for t, ms in sorted(trials):
        if ms is not None and (best is None or ms < best):
            best = ms
        out.append((t, best))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--target", default="", help="only records whose target contains this")
    a = ap.parse_args()
    runs = load(a.records, a.target)
    os.makedirs(a.out, exist_ok=True)
    panels = sorted({(w, s) for w, s, _, _ in runs})
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 3.2 * len(panels)), squeeze=False)
    with open(os.path.join(a.out, "tuning.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "strategy", "searcher", "seed", "trial", "best_ms"])
        for ax, (workload, strategy) in zip(axes[:, 0], panels):
            for i, searcher in enumerate(sorted({k[2] for k in runs if k[:2] == (workload, strategy)})):
                color = f"C{i}"
                curves = []
                for (wk, st, se, seed), trials in sorted(runs.items()):
                    if (wk, st, se) != (workload, strategy, searcher):
                        continue
                    curve = best_so_far(trials)
                    for t, b in curve:
                        w.writerow([wk, st, se, seed, t, "" if b is None else f"{b:.6g}"])
                    pts = [(t, b) for t, b in curve if b is not None]
                    if pts:
                        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", color=color, lw=0.6, alpha=0.5)
                        curves.append(dict(pts))
                # the geometric mean over seeds, at every trial each seed has a best by
                trials_all = sorted(set.intersection(*[set(c) for c in curves])) if curves else []
                if trials_all:
                    gm = [math.exp(sum(math.log(c[t]) for c in curves) / len(curves)) for t in trials_all]
                    ax.step(trials_all, gm, where="post", color=color, lw=2,
                            label=f"{searcher} (geomean of {len(curves)} seeds)")
            ax.set_title(f"{workload} — {strategy}", fontsize=8)
            ax.set_xlabel("trial")
            ax.set_ylabel("best so far (ms)")
            ax.grid(alpha=0.3)
            ax.legend()
    fig.tight_layout()
    for ext in ("svg", "png"):
        fig.savefig(os.path.join(a.out, f"tuning.{ext}"), dpi=120)
    print(f"wrote {a.out}/tuning.{{svg,png,csv}}: {len(panels)} panels, {len(runs)} curves")


if __name__ == "__main__":
    main()
