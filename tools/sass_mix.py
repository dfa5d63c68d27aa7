#!/usr/bin/env python3
"""The SASS of a Halide CUDA kernel, for reading codegen: registers, spills and inner-loop mix.

Input: the assembly Halide writes for a CUDA target (`-e assembly`, or BLOCKFUSE_EMIT_STMT=ON). Its
PTX is embedded as a string. That PTX is compiled with the CUDA toolkit's ptxas for --arch, at
--maxrregcount, which is what the driver's JIT does on the GPU with blockfuse's register cap. Then
it is disassembled with cuobjdump (nvdisasm); tools/sass.sh installs both into .venv from PyPI.

Per kernel it prints registers and spill bytes (ptxas -v), then for every loop (a backward
branch) with at least --min-ffma FFMA: its length in instructions, the FFMA share and the most
frequent opcodes. This is a static count: one pass through the loop body.

    python3 tools/sass_mix.py KERNEL.s [--arch sm_90] [--maxrregcount 255] [--keep DIR]
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile


def embedded_ptx(asm_text):
    """The PTX string(s) Halide embeds in the host assembly of a CUDA kernel."""
    out = []
    for m in re.finditer(r'\.asciz\s+"(.*?)"\n', asm_text, re.S):
        t = m.group(1)
        if ".target" in t or "NVPTX" in t:
            out.append(t.encode().decode("unicode_escape"))
    return out


def loops(sass_function):
    """(start, end, opcodes) of each backward branch's loop body in one disassembled function."""
    ins = [(int(a, 16), op, rest) for a, op, rest in
           re.findall(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", sass_function)]
    for addr, op, rest in ins:
        m = re.search(r"0x([0-9a-f]+)", rest) if op == "BRA" else None
        if m and int(m.group(1), 16) < addr:
            start = int(m.group(1), 16)
            yield start, addr, [o for x, o, _ in ins if start <= x <= addr]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("asm", help="Halide assembly output (.s) of a CUDA kernel")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--maxrregcount", type=int, default=255)
    ap.add_argument("--min-ffma", type=int, default=16, help="report loops with at least this many FFMA")
    ap.add_argument("--keep", help="write the .ptx, .cubin and .sass here")
    a = ap.parse_args(argv)
    tools = {t: shutil.which(t) for t in ("ptxas", "cuobjdump", "nvdisasm")}
    missing = [t for t, p in tools.items() if not p]
    if missing:
        print(f"error: {', '.join(missing)} not on PATH (tools/sass.sh sets it up)", file=sys.stderr)
        return 2
    try:
        text = open(a.asm, errors="replace").read()
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ptxs = embedded_ptx(text)
    if not ptxs:
        print(f"error: {a.asm} holds no embedded PTX: not the assembly of a CUDA-target Halide kernel", file=sys.stderr)
        return 2
    work = a.keep or tempfile.mkdtemp()
    os.makedirs(work, exist_ok=True)
    for i, ptx in enumerate(ptxs):
        base = os.path.join(work, f"{os.path.splitext(os.path.basename(a.asm))[0]}_{i}")
        open(base + ".ptx", "w").write(ptx)
        r = subprocess.run([tools["ptxas"], f"-arch={a.arch}", "-v", f"--maxrregcount={a.maxrregcount}",
                            "-o", base + ".cubin", base + ".ptx"], capture_output=True, text=True)
        if r.returncode:
            print(f"error: ptxas failed:\n{r.stderr}", file=sys.stderr)
            return 1
        usage = {}
        current = None
        for line in r.stderr.splitlines():
            m = re.search(r"Compiling entry function '(\w+)'", line)
            if m:
                current = m.group(1)
            m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m and current:
                usage.setdefault(current, {})["spill"] = (int(m.group(1)), int(m.group(2)))
            m = re.search(r"Used (\d+) registers", line)
            if m and current:
                usage.setdefault(current, {})["regs"] = int(m.group(1))
        sass = subprocess.run([tools["cuobjdump"], "-sass", base + ".cubin"], capture_output=True, text=True).stdout
        open(base + ".sass", "w").write(sass)
        for func in re.split(r"\n\s*Function : ", sass)[1:]:
            name = func.split("\n")[0].strip()
            u = usage.get(name, {})
            st, ld = u.get("spill", (0, 0))
            print(f"{name}: {u.get('regs', '?')} registers, spill stores {st} B, spill loads {ld} B "
                  f"({a.arch}, --maxrregcount {a.maxrregcount})")
            for start, end, ops in loops(func):
                c = collections.Counter(o.split(".")[0] for o in ops)
                if c.get("FFMA", 0) < a.min_ffma:
                    continue
                mix = ", ".join(f"{k} {v}" for k, v in c.most_common(8))
                print(f"  loop 0x{start:04x}-0x{end:04x}: {len(ops)} instructions, FFMA {c['FFMA']} "
                      f"({c['FFMA'] / len(ops):.0%}); {mix}")
    if a.keep:
        print(f"(PTX, cubin and SASS in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
