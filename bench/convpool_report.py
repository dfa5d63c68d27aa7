#!/usr/bin/env python3
"""One table per op (as the seed library's Conv & Pool report): our kernels (blockfuse bench results.json)
beside PyTorch eager and torch.compile (bench/torch_convpool.py) from the same run.

  python3 bench/convpool_report.py --ours A/results.json [--ours B/results.json] --torch T.json [...] --out README.md

Per workload and dtype (the fastest passing row over every --ours given, e.g. a run by the heuristics and one by
tuning records): our device time, eager's and torch.compile's, the ratio best-PyTorch / ours, our
share of the copy bandwidth measured in the run (compulsory bytes: each tensor once), the floors (memory:
bytes / copy bandwidth; compute: flops / the FFMA rate measured in the run; latency: an empty kernel timed as
PyTorch's calls are) and the bound, the largest floor. Per op the geometric mean of the ratios; at the end
the issue's targets (pooling geomean >= 1.2 and no pooling workload below 1.0; workloads whose compulsory
bytes exceed the L2 at >= 80% of copy bandwidth; conv1d/conv3d geomean >= 1.0) against the numbers.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_schema  # noqa: E402
import torch_convpool as tc  # noqa: E402

POOL_OPS = ("AvgPool1dFwd", "AvgPool2dFwd", "AvgPool3dFwd", "MaxPool1dFwd", "MaxPool1dIndicesFwd", "MaxPool2dFwd",
            "MaxPool2dIndicesFwd", "MaxPool3dFwd", "MaxPool3dIndicesFwd", "AdaptiveAvgPool2dFwd",
            "AdaptiveMaxPool2dFwd", "AdaptiveMaxPool2dIndicesFwd", "MeanPoolingFwd")
CONV_OPS = ("Conv1dFwd", "Conv3dFwd")


def load(paths):
    docs = []
    for p in paths:
        with open(p, encoding="utf-8") as fh:
            docs.append(json.load(fh))
    return docs


def rows(ours_docs, torch_docs):
    torch_rows = {}
    empty_ms = None
    for d in torch_docs:
        empty_ms = d["context"].get("empty_kernel_ms", empty_ms)
        for r in d["results"]:
            torch_rows[(r["op"], r["name"], r["dtype"])] = r
    out = []
    # (op, name, dtype) -> (row, its run's context): the dispatcher's pick, or the fastest passing strategy, over every
    # results file given (e.g. a run by the heuristics and one by tuning records); the floors from the row's own run.
    picked = {}
    ceilings = {}  # the first run's that measured them: runs with --no-ceilings borrow them (the same GPU)
    for d in ours_docs:
        ceilings = ceilings or {k: v for k, v in d["context"].get("ceilings", {}).items() if v}
    for d in ours_docs:
        for r in d["results"]:
            # The dispatcher's variant of each strategy (a conv row has direct and, dense f16/bf16, tensor_cores).
            if not r.get("default", True) and r.get("strategy") not in ("direct", "tensor_cores"):
                continue
            k = (tc.op_name(r["key"]), r["workload"], tc.dtype_label(r["key"]))
            old = picked.get(k, (None,))[0]
            faster = r.get("check_ok") and (not old or not old.get("check_ok") or r["runtime_ms"] < old["runtime_ms"])
            if not old or faster:
                picked[k] = (r, d["context"])
    for (op, name, dt), (r, context) in picked.items():
        ceil = {k: v for k, v in context.get("ceilings", {}).items() if v} or ceilings
        copy_gbps, ffma = ceil.get("copy_gbps"), ceil.get("ffma_f32_tflops")
        l2 = context.get("gpu", {}).get("l2_bytes")
        t = torch_rows.get((op, name, dt), {})
        ours = r.get("runtime_ms") if r.get("check_ok") else None
        alts = {k: t.get(f"{k}_ms") for k in ("eager", "compile")}
        best = min((v for v in alts.values() if v), default=None)
        # The compute roof of the row's kernel: mma.sync of its dtype on tensor cores, else FFMA.
        roof = ceil.get(f"mma_{dt}_tflops") if r.get("strategy") == "tensor_cores" else ffma
        floors = {"mem": r["bytes"] / (copy_gbps * 1e6) if copy_gbps else None,
                  "comp": r["flops"] / (roof * 1e9) if roof else None, "lat": empty_ms}
        bound = max((k for k in floors if floors[k]), key=lambda k: floors[k], default="?")
        out.append({"op": op, "name": name, "dtype": dt, "ours": ours, "check": r.get("check", ""),
                    "check_ok": r.get("check_ok"), "eager": alts["eager"], "compile": alts["compile"],
                    "compile_error": t.get("compile_error"), "ratio": best / ours if best and ours else None,
                    "pct_copy": r.get("pct_copy_bw") if ours else None, "floors": floors, "bound": bound,
                    "past_l2": bool(l2 and r["bytes"] > l2), "bytes": r["bytes"],
                    "strategy": r.get("strategy", "")})
    return out


def fmt(x, spec=".4f"):
    return "—" if x is None else format(x, spec)


def table(op_rows):
    lines = ["| workload | dtype | ratio best-PyTorch / ours | ours ms | strategy | eager ms | compile ms | % of copy BW | "
             "floor ms (mem / comp / lat) | bound | check |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in op_rows:
        f = r["floors"]
        lines.append(f"| {r['name']} | {r['dtype']} | {fmt(r['ratio'], '.2f')}x | {fmt(r['ours'])} | {r['strategy']} | "
                     f"{fmt(r['eager'])} | "
                     f"{fmt(r['compile'])} | {fmt(r['pct_copy'], '.0f')}% | {fmt(f['mem'])} / {fmt(f['comp'])} / "
                     f"{fmt(f['lat'])} | {r['bound']} | {'ok' if r['check_ok'] else 'FAILED'} |")
    return "\n".join(lines)


def report(rs):
    out = []
    for op in POOL_OPS + CONV_OPS:
        op_rows = [r for r in rs if r["op"] == op]
        if not op_rows:
            continue
        g = results_schema.geomean((r["ratio"] for r in op_rows), empty=None)
        out += [f"### {op}", "", table(op_rows), "", f"geomean ratio: {fmt(g, '.2f')}x", ""]
    pool = [r for r in rs if r["op"] in POOL_OPS]
    conv = [r for r in rs if r["op"] in CONV_OPS]
    gp = results_schema.geomean((r["ratio"] for r in pool), empty=None)
    gc = results_schema.geomean((r["ratio"] for r in conv), empty=None)
    below = [r for r in pool if r["ratio"] is not None and r["ratio"] < 1.0]
    past = [r for r in pool + conv if r["past_l2"] and r["ours"]]
    past_low = [r for r in past if (r["pct_copy"] or 0) < 80]
    failed = [r for r in rs if not r["check_ok"]]
    out += ["## Targets", "",
            f"- pooling geomean best-PyTorch / ours: {fmt(gp, '.2f')}x over {len(pool)} rows (target >= 1.2)",
            f"- pooling rows below 1.0: {len(below)}" + (": " + ", ".join(f"{r['op']} {r['name']} {r['dtype']} "
                                                                           f"{r['ratio']:.2f}x" for r in below) if below else ""),
            f"- rows past the L2 at >= 80% of copy bandwidth: {len(past) - len(past_low)} of {len(past)}" +
            (" (below: " + ", ".join(f"{r['op']} {r['name']} {r['dtype']} {r['pct_copy']:.0f}%" for r in past_low) + ")"
             if past_low else ""),
            f"- conv1d/conv3d geomean: {fmt(gc, '.2f')}x over {len(conv)} rows (target >= 1.0 once tensor cores are used)",
            f"- rows whose check failed or that did not run: {len(failed)}", ""]
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ours", action="append", required=True)
    p.add_argument("--torch", action="append", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--json", help="the joined rows as JSON")
    a = p.parse_args(argv)
    try:
        rs = rows(load(a.ours), load(a.torch))
    except (OSError, KeyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = report(rs)
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump(rs, fh, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
