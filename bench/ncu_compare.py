#!/usr/bin/env python3
"""Modelled compulsory DRAM bytes against Nsight Compute's measured DRAM bytes, per kernel.

Inputs: the results.json of `blockfuse bench --single-run --out DIR` (rows in launch order, each
with its modelled kernels) and the CSV of `ncu --csv --print-units base --metrics
dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum -k regex:_kernel` over the same
command. --single-run runs each candidate twice (a warm-up with the host-to-device copies, then
the profiled run on a cold L2): the second of each pair of launch groups is the one compared.

If the CSV also has lts__t_sectors_op_write.sum (32-byte sectors written into L2), a second
measure is reported: DRAM read + L2 writes. The H200's L2 is write-back, so an output that fits in
it is not in DRAM when the kernel ends and dram__bytes_write misses it; every byte the kernel
stores passes through L2, so L2 writes count it (and also re-writes of a sector, e.g. spills).

    python3 bench/ncu_compare.py RESULTS.json NCU.csv [--out TABLE.md]
"""
import argparse
import csv
import json
import sys


def read_ncu(path):
    """Kernel launches in order: {name, read, write, ns}."""
    launches = {}
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own log lines before the CSV
    for row in csv.DictReader(lines):
        if not row.get("Kernel Name", "").startswith("_kernel"):
            continue
        lid = int(row["ID"])
        k = launches.setdefault(lid, {"name": row["Kernel Name"], "read": 0.0, "write": 0.0, "ns": 0.0, "l2_write": None})
        value = float(row["Metric Value"].replace(",", ""))
        metric = row["Metric Name"]
        if metric == "dram__bytes_read.sum":
            k["read"] = value
        elif metric == "dram__bytes_write.sum":
            k["write"] = value
        elif metric == "gpu__time_duration.sum":
            k["ns"] = value
        elif metric == "lts__t_sectors_op_write.sum":
            k["l2_write"] = 32.0 * value
    return [launches[i] for i in sorted(launches)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("ncu_csv")
    ap.add_argument("--out")
    ap.add_argument("--tolerance", type=float, default=0.15)
    a = ap.parse_args()
    try:
        rows = json.load(open(a.results))["results"]
        launches = read_ncu(a.ncu_csv)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    modelled = [(r["workload"], r["strategy"], k) for r in rows for k in r.get("kernels", [])]
    if len(launches) != 2 * len(modelled):
        print(f"error: {len(modelled)} modelled kernels need {2 * len(modelled)} profiled launches (warm-up + run), "
              f"{a.ncu_csv} has {len(launches)}", file=sys.stderr)
        return 2
    measured, i = [], 0
    for r in rows:  # per candidate: warm-up launches, then the profiled ones
        k = len(r.get("kernels", []))
        measured += launches[i + k:i + 2 * k]
        i += 2 * k
    launches = measured
    tol = f"±{a.tolerance:.0%}"
    has_l2 = any(l["l2_write"] is not None for l in launches)
    head = f"| workload | strategy | kernel | modelled bytes | ncu DRAM read | ncu DRAM write | measured / modelled | within {tol} |"
    rule = "|---|---|---|---:|---:|---:|---:|---|"
    if has_l2:
        head += f" L2 writes | (read + L2 writes) / modelled | within {tol} |"
        rule += "---:|---:|---|"
    out = [head + " ncu time µs |", rule + "---:|"]

    def ratio_of(measured, modelled_bytes):
        r = measured / modelled_bytes if modelled_bytes else float("inf")
        return r, abs(r - 1) <= a.tolerance

    within = within_l2 = 0
    for (w, s, k), l in zip(modelled, launches):
        ratio, ok = ratio_of(l["read"] + l["write"], k["bytes"])
        within += ok
        line = (f"| {w} | {s} | {k['name']} | {k['bytes']:.4g} | {l['read']:.4g} | {l['write']:.4g} | "
                f"{ratio:.2f} | {'yes' if ok else 'no'} |")
        if has_l2:
            if l["l2_write"] is None:
                line += " n/a | n/a | n/a |"
            else:
                r2, ok2 = ratio_of(l["read"] + l["l2_write"], k["bytes"])
                within_l2 += ok2
                line += f" {l['l2_write']:.4g} | {r2:.2f} | {'yes' if ok2 else 'no'} |"
        out.append(line + f" {l['ns'] / 1e3:.1f} |")
    out.append(f"\n{within} of {len(modelled)} kernels within {tol} of the model (DRAM read + DRAM write).")
    if has_l2:
        out.append(f"{within_l2} of {len(modelled)} kernels within {tol} of the model (DRAM read + L2 writes).")
    text = "\n".join(out) + "\n"
    if a.out:
        open(a.out, "w").write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
