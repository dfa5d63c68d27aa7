#!/usr/bin/env python3
"""The SASS of the CUDA kernels in a kernel cache, without a GPU: per kernel its registers and spills at
its JIT register cap, its static instruction count and, per output a thread computes (the tile knobs),
the instructions and the global loads and stores by width. What a schedule does to the code, read before
the kernels reach the GPU (the PTX embedded in each kernel.so, compiled by the toolkit's ptxas as the
driver's JIT does, disassembled by cuobjdump: tools/sass.sh installs both).

    tools/sass.sh is the entry for one kernel; this one reads a cache:
    PATH=.venv/lib/python3.11/site-packages/nvidia/cu13/bin:$PATH \\
        python3 tools/cache_sass.py [--cache DIR] [--match SUBSTR ...] [--arch sm_90] [--csv OUT.csv]
"""
import argparse
import collections
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_mix  # noqa: E402

FIELDS = ["kernel", "threads", "cap", "registers", "spill_bytes", "instructions", "outputs_per_thread",
          "instructions_per_output", "loops", "loads", "stores"]


def memory_ops(ops):
    """'LDG.E.64 x4, LDG.E.U16 x2' style counts of the global loads and stores by width."""
    loads = collections.Counter(o for o in ops if o.startswith("LDG"))
    stores = collections.Counter(o for o in ops if o.startswith("STG"))
    fmt = lambda c: " ".join(f"{k.replace('.CONSTANT', '').replace('.E', '')}x{v}" for k, v in sorted(c.items()))
    return fmt(loads), fmt(stores)


def outputs_per_thread(desc):
    k = desc.get("knobs", {})
    return max(1, int(k.get("tile_x", 1)) * int(k.get("tile_y", 1)))


def survey(entry, ptxas, cuobjdump, arch, work):
    desc = json.load(open(os.path.join(entry, "description.json")))
    data = open(os.path.join(entry, "kernel.so"), "rb").read()
    ptxs = sass_mix.embedded_ptx_in_object(data)
    cap = desc.get("cap") or 255
    threads = desc.get("threads_per_block", 0)
    if threads:  # the register policy's rule (runtime/kernel_registry.h) where the kernel has no cap of its own
        warps = (threads + 31) // 32
        cap = desc.get("max_registers") or min(255, max(16, 65536 // (((warps + 3) // 4 * 4) * 32) // 8 * 8))
    rows = []
    for i, ptx in enumerate(ptxs):
        base = os.path.join(work, f"{os.path.basename(entry)}_{i}")
        open(base + ".ptx", "w").write(ptx)
        usage = sass_mix.ptxas_usage(ptxas, base + ".ptx", arch, cap, base + ".cubin")
        sass = subprocess.run([cuobjdump, "-sass", base + ".cubin"], capture_output=True, text=True).stdout
        for func in re.split(r"\n\s*Function : ", sass)[1:]:
            name = func.split("\n")[0].strip()
            ops = [op for _, op, _ in sass_mix.instructions(func)]
            u = usage.get(name, {})
            loads, stores = memory_ops(ops)
            per = outputs_per_thread(desc)
            rows.append({"kernel": desc.get("name", os.path.basename(entry)), "threads": threads, "cap": cap,
                         "registers": u.get("regs", 0), "spill_bytes": sum(u.get("spill", (0, 0))),
                         "instructions": len(ops), "outputs_per_thread": per,
                         "instructions_per_output": round(len(ops) / per, 1),
                         "loops": sum(1 for _ in sass_mix.loops(func)), "loads": loads, "stores": stores})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=os.environ.get("BLOCKFUSE_KERNEL_CACHE",
                                                      os.path.expanduser("~/.cache/blockfuse/kernels")))
    ap.add_argument("--match", nargs="*", default=[], help="only kernels whose names contain one of these")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--csv", help="write the table here too")
    a = ap.parse_args(argv)
    tools = {t: shutil.which(t) or (f"/usr/local/cuda/bin/{t}" if os.access(f"/usr/local/cuda/bin/{t}", os.X_OK) else None)
             for t in ("ptxas", "cuobjdump")}
    if not all(tools.values()):
        print("error: ptxas and cuobjdump are needed (tools/sass.sh installs cuobjdump into .venv)", file=sys.stderr)
        return 2
    entries = []
    for d in sorted(os.listdir(a.cache)) if os.path.isdir(a.cache) else []:
        p = os.path.join(a.cache, d)
        try:
            desc = json.load(open(os.path.join(p, "description.json")))
        except (OSError, ValueError):
            continue
        if desc.get("device") != "cuda" or desc.get("status") != "ok":
            continue
        if a.match and not any(m in desc.get("name", "") for m in a.match):
            continue
        entries.append(p)
    if not entries:
        print(f"error: no CUDA kernels{' matching ' + ' '.join(a.match) if a.match else ''} in {a.cache}",
              file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for e in entries:
            rows += survey(e, tools["ptxas"], tools["cuobjdump"], a.arch, work)
    rows.sort(key=lambda r: r["kernel"])
    w = max(len(r["kernel"]) for r in rows)
    print(f"{'kernel':<{w}} {'thr':>4} {'regs':>4} {'spill':>5} {'instr':>6} {'/out':>6}  loads; stores")
    for r in rows:
        print(f"{r['kernel']:<{w}} {r['threads']:>4} {r['registers']:>4} {r['spill_bytes']:>5} {r['instructions']:>6} "
              f"{r['instructions_per_output']:>6}  {r['loads']}; {r['stores']}" + (f" ({r['loops']} loops)" if r["loops"] else ""))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            cw = csv.DictWriter(f, fieldnames=FIELDS)
            cw.writeheader()
            cw.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
