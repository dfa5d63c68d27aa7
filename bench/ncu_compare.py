#!/usr/bin/env python3
"""Modelled compulsory DRAM bytes against Nsight Compute's measured DRAM bytes, per kernel and per run.

Inputs: the results.json of `blockfuse bench --single-run --out DIR` (rows in launch order, each
with its modelled kernels) and the CSV of
    ncu --cache-control none --replay-mode application --csv --print-units base
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
        -k regex:"_kernel|l2_evict_read"
over the same command. --single-run runs each candidate twice: a warm-up (host-to-device copies),
a read-only L2 eviction (kernel l2_evict_read), the profiled run, and a second eviction.

Why the evictions: the H200's L2 (60 MB) is write-back. Part of a kernel's output is still dirty in
it when the kernel ends and reaches DRAM later, during whatever runs next. The second eviction
reads 2x the L2 and writes nothing itself, so its DRAM writes are what the profiled run left dirty:
they are added to the run's last kernel. Inside a run of several kernels (layer by layer), kernel
i's leftovers are written back during kernel i+1, so per-kernel figures move bytes between
neighbours; the per-run table (sum over the run's kernels, plus the eviction) has no such shift.

A CSV without l2_evict_read launches (ncu_compare of earlier versions: warm-up and profiled run
only) is compared kernel by kernel as it stands, without the write-back term.

L2-aware model (when the kernels list their "rereads", blockfuse runtime/block.h): the tensor
machine charges every tensor a kernel reads to DRAM, also one an earlier kernel of the same run
wrote or read. On the GPU such a tensor may still be in the L2. The L2-aware model takes a kernel's
re-reads from the L2 when its whole compulsory traffic fits in --l2-fit x the L2 (size from
RESULTS' GPU context, or --l2-bytes): then nothing the kernel streams evicts them first.
The fraction is fitted, not derived. On the H200 (60 MiB L2):
- kernels moving up to 39 MB found their re-reads in the L2;
- one moving 48 MB (mbconv c=80's depthwise layer) found about half of them;
- those moving 128 MB or more found none (convfirst c=128: its 26 MB input re-read by a layer that
  writes 102 MB).
Fractions from 0.62 to 0.76 separate these; 0.7 is the default. A smaller tensor alone is not
enough: the size rule "re-read tensor <= half the L2" missed the convfirst case.

Spills (--spills, the CSV of tools/kernel_spills.py: each kernel's spill bytes per thread at its JIT register
cap, from ptxas): spilled values go to local memory, through the L1 and L2, and reach DRAM as dirty lines are
evicted; the tensor machine does not count them. The per-run table then shows each run's spill bytes per thread,
and a line counts how many runs outside the tolerance spill at least --spill-min bytes per thread.

    python3 bench/ncu_compare.py RESULTS.json NCU.csv [--out TABLE.md] [--tolerance 0.15]
                                 [--l2-bytes N] [--l2-fit 0.7] [--spills SPILLS.csv] [--spill-min 64]
"""
import argparse
import csv
import json
import sys

EVICT = "l2_evict_read"


def read_ncu(path):
    """Profiled launches in order: {name, read, write, ns}."""
    launches = {}
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # ncu prints its own log lines before the CSV
    for row in csv.DictReader(lines):
        name = row.get("Kernel Name", "")
        if not (name.startswith("_kernel") or name.startswith(EVICT)):
            continue
        k = launches.setdefault(int(row["ID"]), {"name": name, "read": 0.0, "write": 0.0, "ns": 0.0})
        value = float(row["Metric Value"].replace(",", ""))
        key = {"dram__bytes_read.sum": "read", "dram__bytes_write.sum": "write", "gpu__time_duration.sum": "ns"}
        if row["Metric Name"] in key:
            k[key[row["Metric Name"]]] = value
    return [launches[i] for i in sorted(launches)]


def is_evict(launch):
    return launch["name"].startswith(EVICT)


def split_runs(rows, launches):
    """Per result row: (its profiled kernel launches, the write-back bytes after them or None).

    Layout per row with k kernels: k warm-up launches, [evict], k profiled launches, [evict]."""
    with_evict = any(is_evict(l) for l in launches)
    step = 1 if with_evict else 0
    per_row = [len(r.get("kernels", [])) for r in rows]
    need = sum(2 * k + 2 * step for k in per_row)
    if len(launches) != need:
        raise ValueError(f"{sum(per_row)} modelled kernels in {len(rows)} runs need {need} profiled launches (warm-up + run"
                         f"{' + 2 evictions per run' if with_evict else ''}), the CSV has {len(launches)}")
    runs, i = [], 0
    for k in per_row:
        profiled = launches[i + k + step:i + 2 * k + step]
        tail = launches[i + 2 * k + step] if with_evict else None
        if with_evict and not (is_evict(launches[i + k]) and is_evict(tail)):
            raise ValueError(f"launch {i + k}: expected the {EVICT} launches around a run of {k} kernels")
        if any(is_evict(l) for l in profiled):
            raise ValueError(f"launches {i + k + step}..{i + 2 * k + step - 1}: an {EVICT} launch where kernels were expected")
        runs.append((profiled, tail["write"] if tail else None))
        i += 2 * k + 2 * step
    return runs


def read_spills(path):
    """tools/kernel_spills.py CSV -> {kernel: {"spill": spill store B/thread, "stack": stack frame B/thread,
    "threads": threads per block, "registers": registers per thread}}."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    need = ("kernel", "threads", "registers", "stack_bytes", "spill_store_bytes")
    if not rows or any(k not in rows[0] for k in need):
        raise ValueError(f"{path}: not a tools/kernel_spills.py table ({', '.join(need)} columns)")
    try:
        return {r["kernel"]: {"spill": int(r["spill_store_bytes"]), "stack": int(r["stack_bytes"]),
                              "threads": int(r["threads"]), "registers": int(r["registers"])} for r in rows}
    except ValueError as e:
        raise ValueError(f"{path}: a non-integer entry ({e})") from None


REGISTERS_PER_SM, THREADS_PER_SM = 65536, 2048  # compute capability 9.0 (and 8.x)


def local_memory_bound(k, sm_count):
    """Bytes of local memory (spilled registers, local arrays) a kernel can leave dirty in the L2: its stack frame
    per thread times the threads resident at once (registers and the thread limit; shared memory, ignored, can only
    lower it). Each resident thread slot has its own local memory, reused by the blocks that follow, so this bounds
    the local lines the L2 writes back at most once; a kernel that spills inside loops under cache pressure writes
    them back many times and exceeds it."""
    if k["stack"] <= 0 or k["threads"] <= 0:
        return 0.0
    regs = max(8, -(-k["registers"] // 8) * 8)
    warps = -(-k["threads"] // 32)
    blocks = REGISTERS_PER_SM // (regs * warps * 32)
    return float(k["stack"] * min(THREADS_PER_SM, blocks * k["threads"]) * sm_count)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("ncu_csv")
    ap.add_argument("--out")
    ap.add_argument("--tolerance", type=float, default=0.15)
    ap.add_argument("--l2-bytes", type=float, help="L2 size for the L2-aware model (default: RESULTS' GPU context)")
    ap.add_argument("--l2-fit", type=float, default=0.7,
                    help="a kernel whose compulsory bytes fit in this share of the L2 reads its re-reads from the L2")
    ap.add_argument("--spills", help="tools/kernel_spills.py CSV: a spill column and the count of spilling runs")
    ap.add_argument("--spill-min", type=int, default=64, help="bytes per thread counted as spilling")
    a = ap.parse_args(argv)
    try:
        doc = json.load(open(a.results))
        rows = doc["results"]
        runs = split_runs(rows, read_ncu(a.ncu_csv))
        spills = read_spills(a.spills) if a.spills else None
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    l2 = a.l2_bytes or doc.get("context", {}).get("gpu", {}).get("l2_bytes")
    l2_aware = l2 and any("rereads" in k for r in rows for k in r.get("kernels", []))

    def l2_model(k):  # the kernel's bytes, without its re-reads where its traffic fits in the L2
        return k["bytes"] - (sum(k.get("rereads", [])) if k["bytes"] <= a.l2_fit * l2 else 0.0)

    tol = f"±{a.tolerance:.0%}"

    def verdict(measured, modelled):
        r = measured / modelled if modelled else float("inf")
        return r, abs(r - 1) <= a.tolerance

    has_wb = any(wb is not None for _, wb in runs)
    l2_head = f" L2-aware model | measured / L2-aware | within {tol} |" if l2_aware else ""
    l2_rule = "---:|---:|---|" if l2_aware else ""
    out = ["## Per kernel", "",
           f"| workload | strategy | kernel | modelled bytes | ncu DRAM read | ncu DRAM write |"
           f"{' written back after the run |' if has_wb else ''} measured / modelled | within {tol} |{l2_head} ncu time µs |",
           "|---|---|---|---:|---:|---:|" + ("---:|" if has_wb else "") + "---:|---|" + l2_rule + "---:|"]
    run_lines = []
    n_k = within_k = n_r = within_r = within_k_l2 = within_r_l2 = 0
    outside_spilling = outside = inside_spilling = 0  # runs against the L2-aware model (else the tensor machine)
    sm_count = doc.get("context", {}).get("gpu", {}).get("sm_count")
    bound_col = spills is not None and bool(sm_count)
    within_bound = 0  # runs outside the tolerance whose excess the local-memory bound covers
    for r, (launches, wb) in zip(rows, runs):
        kernels = r.get("kernels", [])
        for j, (k, l) in enumerate(zip(kernels, launches)):
            last_wb = wb if (wb is not None and j == len(kernels) - 1) else 0.0
            ratio, ok = verdict(l["read"] + l["write"] + last_wb, k["bytes"])
            n_k += 1
            within_k += ok
            wb_cell = (f" {last_wb:.4g} |" if j == len(kernels) - 1 else " |") if has_wb else ""
            l2_cell = ""
            if l2_aware:
                r2, ok2 = verdict(l["read"] + l["write"] + last_wb, l2_model(k))
                within_k_l2 += ok2
                l2_cell = f" {l2_model(k):.4g} | {r2:.2f} | {'yes' if ok2 else 'no'} |"
            out.append(f"| {r['workload']} | {r['strategy']} | {k['name']} | {k['bytes']:.4g} | {l['read']:.4g} | "
                       f"{l['write']:.4g} |{wb_cell} {ratio:.2f} | {'yes' if ok else 'no'} |{l2_cell} {l['ns'] / 1e3:.1f} |")
        if kernels:
            modelled = sum(k["bytes"] for k in kernels)
            measured = sum(l["read"] + l["write"] for l in launches) + (wb or 0.0)
            ratio, ok = verdict(measured, modelled)
            n_r += 1
            within_r += ok
            l2_cell = ""
            final_ok = ok
            if l2_aware:
                m2 = sum(l2_model(k) for k in kernels)
                r2, ok2 = verdict(measured, m2)
                within_r_l2 += ok2
                final_ok = ok2
                l2_cell = f" {m2:.4g} | {r2:.2f} | {'yes' if ok2 else 'no'} |"
            spill_cell = ""
            if spills is not None:
                k_sp = spills.get(r.get("variant", ""))
                sp = k_sp["spill"] if k_sp else None
                spill_cell = f" {sp if sp is not None else '?'} |"
                spilling = sp is not None and sp >= a.spill_min
                outside += not final_ok
                outside_spilling += spilling and not final_ok
                inside_spilling += spilling and final_ok
                if bound_col:
                    model = m2 if l2_aware else modelled
                    excess = measured - model
                    if final_ok:
                        spill_cell += " |"
                    elif k_sp is None:
                        spill_cell += " ? |"
                    else:
                        bound = local_memory_bound(k_sp, sm_count)
                        covered = 0 < excess <= (1 + a.tolerance) * bound
                        within_bound += covered
                        spill_cell += f" {'yes' if covered else 'no'}: {excess / 1e6:+.2f} MB, bound {bound / 1e6:.2f} MB |"
            run_lines.append(f"| {r['workload']} | {r['strategy']} | {len(kernels)} | {modelled:.4g} | {measured:.4g} | "
                             f"{ratio:.2f} | {'yes' if ok else 'no'} |{l2_cell}{spill_cell}")
    wb_note = " + written back after the run" if has_wb else ""
    l2_note = (f" (L2-aware: a kernel moving at most {a.l2_fit:g} x {l2 / 2**20:.0f} MiB reads its re-reads from the L2)"
               if l2_aware else "")
    out.append(f"\n{within_k} of {n_k} kernels within {tol} of the model (DRAM read + DRAM write{wb_note}).")
    if l2_aware:
        out.append(f"{within_k_l2} of {n_k} kernels within {tol} of the L2-aware model{l2_note}.")
    out += ["", "## Per run (the candidate's kernels together)", "",
            f"| workload | strategy | kernels | modelled bytes | measured bytes | measured / modelled | within {tol} |"
            + l2_head + (" spill B/thread (ptxas) |" if spills is not None else "")
            + (" outside: excess within the local-memory bound? |" if bound_col else ""),
            "|---|---|---:|---:|---:|---:|---|" + l2_rule + ("---:|" if spills is not None else "")
            + ("---|" if bound_col else "")] + run_lines
    out.append(f"\n{within_r} of {n_r} runs within {tol} of the model (DRAM read + DRAM write{wb_note}).")
    if l2_aware:
        out.append(f"{within_r_l2} of {n_r} runs within {tol} of the L2-aware model{l2_note}.")
    if spills is not None:
        which = "the L2-aware model" if l2_aware else "the model"
        out.append(f"Spills (ptxas at each kernel's JIT register cap, >= {a.spill_min} B per thread): {outside_spilling} "
                   f"of the {outside} runs outside {tol} of {which} spill; {inside_spilling} of the {n_r - outside} "
                   f"within it do.")
        if bound_col:
            out.append(f"Local memory: {within_bound} of the {outside} runs outside ±{a.tolerance:.0%} of {which} move "
                       f"more than it by at most the local-memory bound (each kernel's stack frame per thread x the "
                       f"threads resident at once x {sm_count} SMs, +{a.tolerance:.0%}): what spilled registers and "
                       "local arrays can leave dirty in the L2 once. The rest are spills written back many times "
                       "(beyond the bound) or traffic the model does not count (tensors kept in the L2 between "
                       "kernels).")
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
