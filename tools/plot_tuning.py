#!/usr/bin/env python3
"""Best-so-far time against trial from tuning records, one line per searcher, one panel per workload and strategy.

    tools/plot_tuning.py RECORDS.jsonl [MORE.jsonl ...] --out DIR [--target SUBSTRING]

Reads the records `blockfuse tune` appends (runtime/tuning_records.h): each line's `searcher` and `trial` place it;
failed candidates count as trials without improving the best. Writes DIR/tuning.svg and .png, and DIR/tuning.csv
(workload, strategy, searcher, trial, best_ms) with the same numbers.
"""
import argparse
import csv
import json
import os
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
                key = (r["workload"], r["strategy"], r["searcher"])
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
    panels = sorted({(w, s) for w, s, _ in runs})
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 3.2 * len(panels)), squeeze=False)
    with open(os.path.join(a.out, "tuning.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "strategy", "searcher", "trial", "best_ms"])
        for ax, (workload, strategy) in zip(axes[:, 0], panels):
            for (wk, st, searcher), trials in sorted(runs.items()):
                if (wk, st) != (workload, strategy):
                    continue
                curve = best_so_far(trials)
                for t, b in curve:
                    w.writerow([wk, st, searcher, t, "" if b is None else f"{b:.6g}"])
                pts = [(t, b) for t, b in curve if b is not None]
                if pts:
                    ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", label=searcher)
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
