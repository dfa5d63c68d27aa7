#!/usr/bin/env python3
"""Registers and spills of every built CUDA kernel at the register cap its JIT gets, without a GPU.

For each CUDA variant `blockfuse info` lists (with its `regs=` cap, the rule blockfuse applies before a launch), the
PTX embedded in build/generators/NAME.o is compiled with the CUDA toolkit's ptxas for --arch at that cap, as the
driver's JIT does on the GPU. Writes a CSV: kernel, threads, cap, registers, stack frame, spill store and load bytes
per thread (the largest over the kernel's entry functions). Spilled values live in local memory, which goes through
the L1 and L2 and reaches DRAM when dirty lines are evicted: bench/ncu_compare.py --spills uses this table to say
which runs' DRAM bytes carry spill traffic the tensor machine does not count.

    python3 tools/kernel_spills.py [--build build] [--match SUBSTR ...] [--arch sm_90] --out spills.csv
"""
import argparse
import concurrent.futures
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_mix  # noqa: E402

FIELDS = ["kernel", "threads", "cap", "registers", "stack_bytes", "spill_store_bytes", "spill_load_bytes"]


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def cuda_variants(info_text):
    """`blockfuse info` lines of CUDA kernels -> [(name, threads, cap)]."""
    out = []
    for line in info_text.splitlines():
        m = re.match(r"(\S+)\s+cuda\s+\S+\s+\S+\s+threads=(\d+)\s+regs=(\d+)\s*$", line)
        if m:
            out.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return out


def survey(obj_path, cap, arch, ptxas, work):
    """The kernel's worst entry: (registers, stack, spill store, spill load)."""
    try:
        data = open(obj_path, "rb").read()
    except OSError as e:
        raise RuntimeError(f"{obj_path}: {e}")
    ptxs = sass_mix.embedded_ptx_in_object(data)
    if not ptxs:
        raise RuntimeError(f"{obj_path} holds no embedded PTX")
    worst = (0, 0, 0, 0)
    base = os.path.join(work, os.path.splitext(os.path.basename(obj_path))[0])
    for i, ptx in enumerate(ptxs):
        open(f"{base}_{i}.ptx", "w").write(ptx)
        usage = sass_mix.ptxas_usage(ptxas, f"{base}_{i}.ptx", arch, cap, f"{base}_{i}.cubin")
        for u in usage.values():
            st, ld = u.get("spill", (0, 0))
            worst = max(worst, (u.get("regs", 0), u.get("stack", 0), st, ld), key=lambda t: (t[2], t[0]))
    return worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="the build folder (bench/blockfuse, generators/*.o)")
    ap.add_argument("--match", nargs="*", default=[], help="only kernels whose names contain one of these")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    exe = os.path.join(a.build, "bench", "blockfuse")
    if not os.access(exe, os.X_OK):
        fail(f"{exe} not found: build first (./run build)")
    ptxas = shutil.which("ptxas") or ("/usr/local/cuda/bin/ptxas" if os.access("/usr/local/cuda/bin/ptxas", os.X_OK)
                                      else None)
    if not ptxas:
        fail("ptxas not found (PATH, /usr/local/cuda/bin): the CUDA toolkit is needed")
    info = subprocess.run([exe, "info"], capture_output=True, text=True)
    variants = [v for v in cuda_variants(info.stdout) if not a.match or any(m in v[0] for m in a.match)]
    if not variants:
        fail(f"no CUDA kernels{' matching ' + ' '.join(a.match) if a.match else ''} in `{exe} info`")
    rows = []
    with tempfile.TemporaryDirectory() as work, concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(survey, os.path.join(a.build, "generators", name + ".o"), cap, a.arch, ptxas, work):
                   (name, threads, cap) for name, threads, cap in variants}
        for f in concurrent.futures.as_completed(futures):
            name, threads, cap = futures[f]
            try:
                regs, stack, st, ld = f.result()
            except RuntimeError as e:
                fail(str(e))
            rows.append(dict(zip(FIELDS, [name, threads, cap, regs, stack, st, ld])))
    rows.sort(key=lambda r: r["kernel"])
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    spilling = [r for r in rows if r["spill_store_bytes"] or r["spill_load_bytes"]]
    print(f"{len(rows)} CUDA kernels ({a.arch}, each at its JIT register cap): {len(spilling)} spill; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
