#!/usr/bin/env python3
"""A/B of two blockfuse results.json files, as Google Benchmark's compare.py does for its runs.

Usage:
  python3 bench/compare.py A.json B.json [--a2 A2.json] [--b2 B2.json] [--out-md FILE] [--threshold 0.15]
                           [--per-workload] [--faster 1.2]

Rows are joined on (workload key, provider, strategy), or with --per-workload on (workload key, provider), the
fastest strategy of each side standing for the workload (e.g. tuned records against every hand-written variant);
each side's time is the median of its passing row (with --a2/--b2, a repeat of the same side: its spread,
|run1 - run2| / mean, is printed beside, the noise a difference must exceed to mean something). The table gives
B / A (> 1: B is slower), marks rows where B is more than --threshold slower than A and counts those where B is
at least --faster times faster. Exits 1 if any row is marked, 2 on unreadable input.
"""
import argparse
import json
import math
import sys


def load(path, per_workload=False):
    try:
        with open(path) as f:
            doc = json.load(f)
        rows = doc["results"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"error: {path}: not a blockfuse results.json ({e})")
    out = {}
    for r in rows:
        if not r.get("check_ok") or not r.get("runtime_ms"):
            continue
        # schema'd files (bench/results.schema.json): "strategy" is the strategy, null for other providers than
        # blockfuse; before the schema it was the label and "strategy_name" the strategy
        strategy = r.get("strategy_name") or r.get("strategy") or ""
        key = (r.get("key", ""), r.get("provider", "blockfuse"), "" if per_workload else strategy)
        r = dict(r, strategy_shown=strategy)
        # several rows of one strategy (--variants all), or of one workload with per_workload: the fastest stands
        if key not in out or r["runtime_ms"] < out[key]["runtime_ms"]:
            out[key] = r
    return doc.get("context", {}), out


def spread(x, y):
    return abs(x - y) / ((x + y) / 2) if x and y else math.nan


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--a2", help="a repeat of A (for its spread)")
    p.add_argument("--b2", help="a repeat of B")
    p.add_argument("--out-md")
    p.add_argument("--threshold", type=float, default=0.15, help="B slower than A by more than this: marked")
    p.add_argument("--names", default="A,B", help="what A and B are, for the headers (default A,B)")
    p.add_argument("--per-workload", action="store_true",
                   help="join on the workload: each side's fastest strategy stands for it (named in the table)")
    p.add_argument("--faster", type=float, default=1.2, help="count the rows where B is at least this much faster")
    args = p.parse_args(argv)
    na, nb = (args.names.split(",") + ["B"])[:2]
    _, a = load(args.a, args.per_workload)
    _, b = load(args.b, args.per_workload)
    a2 = load(args.a2, args.per_workload)[1] if args.a2 else {}
    b2 = load(args.b2, args.per_workload)[1] if args.b2 else {}
    lines = [f"| workload | strategy | {na} ms | {nb} ms | {nb} / {na} | {na} spread | {nb} spread | |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    worse, faster, ratios = 0, 0, []
    for key in sorted(set(a) & set(b), key=lambda k: (a[k].get("workload", ""), k[1], k[2])):
        ta, tb = a[key]["runtime_ms"], b[key]["runtime_ms"]
        if key in a2:
            ta = (ta + a2[key]["runtime_ms"]) / 2
        if key in b2:
            tb = (tb + b2[key]["runtime_ms"]) / 2
        r = tb / ta
        ratios.append(r)
        sa = spread(a[key]["runtime_ms"], a2[key]["runtime_ms"]) if key in a2 else math.nan
        sb = spread(b[key]["runtime_ms"], b2[key]["runtime_ms"]) if key in b2 else math.nan
        mark = f"**{nb} {100 * (r - 1):.0f}% slower**" if r > 1 + args.threshold else ""
        worse += bool(mark)
        faster += r <= 1 / args.faster
        fmt = lambda s: "" if math.isnan(s) else f"{100 * s:.1f}%"
        if args.per_workload:  # each side's fastest strategy
            sa_, sb_ = a[key]["strategy_shown"], b[key]["strategy_shown"]
            who = sa_ if sa_ == sb_ else f"{sa_} / {sb_}"
        else:
            who = key[2]
        who = who if key[1] == "blockfuse" else key[1]
        lines.append(f"| {a[key].get('workload', '')} | {who} | {ta:.4g} | {tb:.4g} | {r:.2f} | {fmt(sa)} | {fmt(sb)} "
                     f"| {mark} |")
    only = sorted(set(a) ^ set(b))
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines.append(f"\n{len(ratios)} rows; geomean {nb} / {na} = {geo:.3f}; {worse} rows where {nb} is more than "
                     f"{100 * args.threshold:.0f}% slower than {na}; {faster} where {nb} is at least "
                     f"{args.faster:g}x faster.")
    if only:
        lines.append(f"{len(only)} rows in one file only: " + ", ".join(f"{k[0]} {k[2] or k[1]}" for k in only[:10]))
    text = "\n".join(lines)
    print(text)
    if args.out_md:
        with open(args.out_md, "w") as f:
            f.write(text + "\n")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
