#!/usr/bin/env python3
"""The tensor-core run's figures in one Markdown table set, from the tensor-cores recipe's folder
(bench/recipes/tensor-cores.txt): per GEMM workload the fastest passing kernel's TFLOP/s against the mma.sync
ceiling measured in the same run and PyTorch's F.linear; per conv2d row the tensor-core kernel against PyTorch eager,
torch.compile (best of the two) and the seed library's own time, with the geomean of best-PyTorch / ours. With
--blocks, the blocks-tc recipe's folder instead (bench/recipes/blocks-tc.txt): per workload the fastest passing
kernel of each strategy (layer by layer on CUDA cores and on tensor cores, fused, depth-first, the tensor-core
conv2d), the tensor-core row's share of the mma.sync ceiling and its waterline, PyTorch eager and torch.compile.

    python3 bench/tc_summary.py DIR [--seed-library CSV] [--conv2d STEP] [--torch-conv2d FILE] > summary.md
    python3 bench/tc_summary.py --blocks DIR > summary.md
"""
import argparse
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_schema  # noqa: E402


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def best_rows(results):
    """The fastest passing row per (workload name, key), and whether any row of it failed its check."""
    best, failed = {}, {}
    for r in results:
        k = (r["workload"], r["key"])
        if not r.get("check_ok"):
            failed[k] = failed.get(k, 0) + 1
            continue
        if k not in best or r["runtime_ms"] < best[k]["runtime_ms"]:
            best[k] = r
    return best, failed


TC_STRATEGIES = ("layer_by_layer_tc", "tensor_cores")


def blocks_table(folder):
    """The blocks-tc recipe's table (Markdown lines)."""
    res = load(os.path.join(folder, "blocks", "results.json"))
    ceil = res["context"].get("ceilings", {})
    torch = {}
    for r in load(os.path.join(folder, "pytorch_blocks.json"))["results"]:
        if r.get("check_ok"):
            torch[(r["workload"], r["provider"])] = r["runtime_ms"]
    best = {}  # (workload, strategy) -> fastest passing row
    order = []
    for r in res["results"]:
        if r["workload"] not in order:
            order.append(r["workload"])
        k = (r["workload"], r["strategy"])
        if r.get("check_ok") and (k not in best or r["runtime_ms"] < best[k]["runtime_ms"]):
            best[k] = r
    out = [f"Ceilings measured at the start of the bench: mma.sync f16 {ceil.get('mma_f16_tflops', float('nan')):.1f} "
           f"TFLOP/s; FFMA {ceil.get('ffma_f32_tflops', float('nan')):.1f} TFLOP/s; copy "
           f"{ceil.get('copy_gbps', float('nan')):.0f} GB/s. Times in ms (median, device time); TC = the tensor-core "
           "row (layer_by_layer_tc, or conv2d's tensor_cores); floor = its waterline (Eq. 12, the mma.sync roof for its "
           "GEMM kernels).\n",
           "| workload | layer_by_layer | fused | depth_first | TC | TC % of mma.sync | TC floor | TC / floor | "
           "eager | torch.compile | TC vs layer_by_layer | compile / TC | eager / TC |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    fmt = lambda x, d=4: f"{x:.{d}f}" if x else "-"  # noqa: E731
    for w in order:
        row = {s: best.get((w, s)) for s in ("layer_by_layer", "fused", "depth_first")}
        tc = next((best[(w, s)] for s in TC_STRATEGIES if (w, s) in best), None)
        ms = {s: r["runtime_ms"] if r else None for s, r in row.items()}
        e, c = torch.get((w, "pytorch-eager")), torch.get((w, "pytorch-compile"))
        t = tc["runtime_ms"] if tc else None
        ratio = lambda a, b: f"{a / b:.2f}" if a and b else "-"  # noqa: E731
        out.append(f"| {w} | {fmt(ms['layer_by_layer'])} | {fmt(ms['fused'])} | {fmt(ms['depth_first'])} | {fmt(t)} | "
                   f"{fmt(tc.get('pct_mma') if tc else None, 1)} | {fmt(tc.get('waterline_ms') if tc else None)} | "
                   f"{ratio(t, tc.get('waterline_ms') if tc else None)} | {fmt(e)} | {fmt(c)} | "
                   f"{ratio(ms['layer_by_layer'], t)} | {ratio(c, t)} | {ratio(e, t)} |")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--seed-library", default=None, help="CSV workload,dtype,seed_library_ms")
    ap.add_argument("--blocks", action="store_true", help="DIR is a blocks-tc run")
    ap.add_argument("--conv2d", default="conv2d_tc", help="the conv2d bench step's folder in DIR (default conv2d_tc)")
    ap.add_argument("--torch-conv2d", default="torch_conv2d.json", help="its PyTorch file in DIR")
    a = ap.parse_args(argv)
    if a.blocks:
        print("\n".join(blocks_table(a.dir)))
        return 0
    out = []
    if os.path.exists(os.path.join(a.dir, "gemm", "results.json")):  # a run without GEMMs has the conv2d table only
        out += gemm_table(a.dir)
    out += conv2d_table(a.dir, a.conv2d, a.torch_conv2d, a.seed_library)
    print("\n".join(out))
    return 0


def gemm_table(run_dir):
    out = []
    g = load(os.path.join(run_dir, "gemm", "results.json"))
    ceil = g["context"].get("ceilings", {})
    mma = {"f16": ceil.get("mma_f16_tflops"), "bf16": ceil.get("mma_bf16_tflops")}
    out.append(f"Ceilings measured at the start of the GEMM bench: mma.sync f16 {mma['f16']:.1f}, bf16 {mma['bf16']:.1f} "
               f"TFLOP/s; FFMA {ceil.get('ffma_f32_tflops', float('nan')):.1f} TFLOP/s; copy {ceil.get('copy_gbps', float('nan')):.0f} GB/s.\n")
    torch_g = {}
    tg = os.path.join(run_dir, "torch_gemm.json")
    if os.path.exists(tg):
        for r in load(tg)["results"]:
            torch_g[r["key"]] = r
    out.append("| GEMM | fastest kernel | ms | TFLOP/s | % of mma.sync | PyTorch ms | PyTorch TFLOP/s | PyTorch/ours | failed checks |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    best, failed = best_rows(g["results"])
    keys = sorted({(r["workload"], r["key"]) for r in g["results"]}, key=lambda k: k[1])
    for k in keys:
        r = best.get(k)
        t = torch_g.get(k[1], {}).get("default")
        if not r:
            out.append(f"| `{k[1]}` | none passed | | | | | | | {failed.get(k, 0)} |")
            continue
        tf = r["flops"] / (r["runtime_ms"] * 1e-3) / 1e12
        pct = 100 * tf / mma[r["dtype"]] if mma.get(r["dtype"]) else float("nan")
        out.append(f"| `{k[1]}` | {r['strategy']} | {r['runtime_ms']:.4f} | {tf:.1f} | {pct:.1f}% | "
                   + (f"{t['ms']:.4f} | {t['tflops']:.1f} | {t['ms'] / r['runtime_ms']:.2f}" if t else "n/a | n/a | n/a")
                   + f" | {failed.get(k, 0)} |")
    return out


def conv2d_table(run_dir, conv2d, torch_file, seed_library):
    out = []
    seed = {}
    if seed_library:
        with open(seed_library) as f:
            for row in csv.DictReader(f):
                seed[(row["workload"], row["dtype"])] = float(row["seed_library_ms"])
    c = load(os.path.join(run_dir, conv2d, "results.json"))
    cc = c["context"].get("ceilings", {})  # the conv2d bench's own measurement
    mma = {"f16": cc.get("mma_f16_tflops"), "bf16": cc.get("mma_bf16_tflops")}
    out.append(f"\nCeilings measured at the start of the conv2d bench: mma.sync f16 {mma['f16']:.1f}, bf16 {mma['bf16']:.1f} TFLOP/s."
               if mma["f16"] and mma["bf16"] else "\nNo ceilings measured in the conv2d bench (--no-ceilings).")
    torch_c = {}
    tc = os.path.join(run_dir, torch_file)
    if os.path.exists(tc):
        for r in results_schema.torch_records(load(tc)):  # schema'd or older files
            torch_c[(r["name"], r["dtype"])] = r
    out.append("\n| conv2d | dtype | ours ms | TFLOP/s | % of mma.sync | eager ms | torch.compile ms | best PyTorch / ours | "
               "seed library ms | seed library / ours |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    best, failed = best_rows(c["results"])
    ratios, seed_ratios = [], []
    for k in sorted(best, key=lambda k: list(x[0] for x in best).index(k[0])):
        r = best[k]
        name, dt = k[0], r["dtype"]
        tf = r["flops"] / (r["runtime_ms"] * 1e-3) / 1e12
        pct = 100 * tf / mma[dt] if mma.get(dt) else float("nan")
        t = torch_c.get((name, dt), {})
        best_ratio = results_schema.torch_ratios(t, r["runtime_ms"])[0]
        s = seed.get((name, dt))
        if best_ratio:
            ratios.append(best_ratio)
        if s:
            seed_ratios.append(s / r["runtime_ms"])
        fmt = lambda x: f"{x:.4f}" if x else "n/a"  # noqa: E731
        out.append(f"| {name} | {dt} | {r['runtime_ms']:.4f} | {tf:.1f} | {pct:.1f}% | {fmt(t.get('eager_ms'))} | "
                   f"{fmt(t.get('compile_ms'))} | {best_ratio or float('nan'):.2f} | {fmt(s)} | "
                   f"{s / r['runtime_ms'] if s else float('nan'):.2f} |")
    nfail = sum(failed.values())
    out.append(f"\nconv2d rows: {len(best)} passing, {nfail} failed checks; geomean best-PyTorch / ours "
               f"{results_schema.geomean(ratios):.2f} (lowest {min(ratios) if ratios else float('nan'):.2f}); geomean seed library / "
               f"ours {results_schema.geomean(seed_ratios):.2f}.")
    return out


if __name__ == "__main__":
    sys.exit(main())
