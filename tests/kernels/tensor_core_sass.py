#!/usr/bin/env python3
"""The SASS of a tensor-core CUDA kernel, checked without a GPU.

The kernel's PTX, made now by the gemm generator with the kernel's params (as the kernel cache makes it: the
CUDA target `blockfuse info` prints), goes through the load-time rewrite (tests/mma_ptx_tool, the code
runtime/cuda_driver.cpp runs at module load), then ptxas -arch=sm_90 at the register cap the JIT gets
(`blockfuse info`'s regs=, raised to runtime/mma_ptx.h's floor of 168), then cuobjdump. Per entry (the
whole-tile specialization and the general one) it must hold exactly the HMMA and LDSM the tiling implies
per K step (warp_m/16 x warp_n/8 HMMA.16816.F32 and warp_m/16 + warp_n/16 LDSM.16.M88.4 per 16 of K, or
warp_n/8 LDSM.16.M88.2 for B when warp_n/8 is odd): whole K steps in the function and in each K loop
(ptxas may unroll the loop and peel steps off it), no call left in the PTX nor a CALL in a K loop, no
spill, no 64-bit register stored as a narrower value. Prints registers, spills and each K loop's length and instruction mix.

    tensor_core_sass.py MMA_PTX_TOOL BLOCKFUSE_CLI GEMM_GENERATOR KERNEL

KERNEL: a CUDA variant of schedules/variants/gemm.json (its knobs and dtype are read there).
Exit 0: as expected; 1: not; 77: no ptxas here (ctest reports it skipped); 2: bad usage.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import sass_mix  # noqa: E402  (ptxas -v parsing, SASS instructions and loops)

MIN_REGISTERS = 168  # runtime/mma_ptx.h kMinRegisters


def tool(name, install=None):
    """A CUDA tool from PATH, the toolkit, or the project's .venv (where tools/sass.sh installs cuobjdump)."""
    found = shutil.which(name) or next(iter(glob.glob(f"/usr/local/cuda/bin/{name}")), None)
    venv_bin = glob.glob(os.path.join(ROOT, ".venv/lib/python3*/site-packages/nvidia/cu13/bin"))
    if not found and venv_bin and os.path.exists(os.path.join(venv_bin[0], name)):
        found = os.path.join(venv_bin[0], name)
    if not found and install:
        print(f"[install] {install} from PyPI into .venv (as tools/sass.sh does)", flush=True)
        subprocess.run([os.path.join(ROOT, ".venv/bin/pip"), "install", "-q", install], check=True)
        return tool(name)
    if found:
        os.chmod(found, os.stat(found).st_mode | 0o111)
    return found


def variant(kernel):
    """(knobs, storage) of a named CUDA gemm variant."""
    with open(os.path.join(ROOT, "schedules/variants/gemm.json")) as f:
        for v in json.load(f):
            if v["name"] == kernel and v["device"] == "cuda":
                return v["knobs"], {"f16": "float16", "bf16": "bfloat16"}[v["dtype"]]
    raise KeyError(kernel)


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    rewriter, cli, generator, kernel = argv[1:]
    try:
        given, storage = variant(kernel)
    except KeyError:
        print(f"error: {kernel} is not a CUDA variant of schedules/variants/gemm.json", file=sys.stderr)
        return 2
    knobs = given  # the rest at the generator's defaults, which are the knob declaration's (schedules/gemm_knobs.h)
    if not all(k in knobs for k in ("warp_m", "warp_n", "k_step")):
        print(f"error: {kernel} must give warp_m, warp_n and k_step (the counts expected follow them)", file=sys.stderr)
        return 2
    mt, nt, kt = int(knobs["warp_m"]) // 16, int(knobs["warp_n"]) // 8, int(knobs["k_step"]) // 16
    want_hmma = kt * mt * nt
    want_x4 = kt * (mt + (nt // 2 if nt % 2 == 0 else 0))
    want_x2 = kt * (nt if nt % 2 else 0)
    ptxas = tool("ptxas")
    if not ptxas:
        print("SKIP: ptxas not found (PATH, /usr/local/cuda/bin): the tensor-core SASS is not checked")
        return 77
    # cuobjdump -sass runs nvdisasm: without it the listing is empty
    if not tool("nvdisasm", install="nvidia-cuda-nvdisasm"):
        print("error: nvdisasm not found and not installable (cuobjdump -sass needs it)", file=sys.stderr)
        return 1
    cuobjdump = tool("cuobjdump", install="nvidia-cuda-cuobjdump")
    info = subprocess.run([cli, "info"], capture_output=True, text=True).stdout
    m = re.search(rf"^{re.escape(kernel)}\s.*regs=(\d+)", info, re.M)
    target = re.search(r"^CUDA target: (\S+)", info, re.M)
    if not m or not target:
        print(f"error: {kernel} (or the CUDA target) is not in `blockfuse info`", file=sys.stderr)
        return 1
    cap = max(int(m.group(1)), MIN_REGISTERS)
    work = tempfile.mkdtemp(prefix="tc_sass_")
    params = [f"{k}={v}" for k, v in sorted(knobs.items())] + [f"storage={storage}"]
    g = subprocess.run([generator, "-g", "gemm", "-e", "device_code", "-o", work, "-n", kernel, "-f", kernel,
                        f"target={target.group(1)}-no_runtime"] + params, capture_output=True, text=True)
    code = os.path.join(work, kernel + ".device_code")
    if g.returncode or not os.path.exists(code):
        print(f"error: generating {kernel}: {g.stderr.strip()[-2000:]}", file=sys.stderr)
        return 1
    r = subprocess.run([rewriter, code, work], capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode or not os.path.exists(os.path.join(work, "module0.ptx")):
        print(f"error: the rewrite of {code} failed: {r.stderr.strip()}", file=sys.stderr)
        return 1
    ptx = os.path.join(work, "module0.ptx")
    try:
        usage = sass_mix.ptxas_usage(ptxas, ptx, "sm_90", cap, os.path.join(work, "k.cubin"))
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    sass = subprocess.run([cuobjdump, "-sass", os.path.join(work, "k.cubin")], capture_output=True, text=True).stdout
    funcs = re.split(r"\n\s*Function : ", sass)[1:]
    ok = len(funcs) == 2
    if not ok:
        print(f"FAIL: {len(funcs)} entries (expected 2: whole tiles and the general one)")
    for func in funcs:
        name = func.split("\n")[0].strip()
        u = usage.get(name, {})
        spill = u.get("spill", (0, 0))
        ops = [op for _, op, _ in sass_mix.instructions(func)]
        hmma = sum(op.startswith("HMMA.16816.F32") for op in ops)
        x4 = sum(op.startswith("LDSM.16.M88.4") for op in ops)
        x2 = sum(op.startswith("LDSM.16.M88.2") for op in ops)
        calls = sum(op.startswith("CALL") for op in ops)
        k_loops = [(s, e, o) for s, e, o in sass_mix.loops(func) if any(x.startswith("HMMA") for x in o)]
        print(f"{name}: {u.get('regs', '?')} registers (cap {cap}), spill {spill[0]}/{spill[1]} B, stack "
              f"{u.get('stack', '?')} B; per function HMMA {hmma}, LDSM.x4 {x4}, LDSM.x2 {x2}, CALL {calls} "
              f"(ptxas' own subroutines: the epilogue's IEEE division slow path)")
        bad = []
        for s, e, o in k_loops:
            c, mix = sass_mix.opcode_mix(o, 12)
            n = [sum(x.startswith(p) for x in o) for p in ("HMMA.16816.F32", "LDSM.16.M88.4", "LDSM.16.M88.2")]
            steps = n[0] // want_hmma if want_hmma else 0
            print(f"  K loop 0x{s:04x}-0x{e:04x}: {len(o)} instructions for {steps} K step(s) of "
                  f"{int(knobs['k_step'])}: {mix}")
            if steps < 1 or n != [steps * want_hmma, steps * want_x4, steps * want_x2]:
                bad.append(f"K loop HMMA/LDSM.x4/LDSM.x2 {n}, not a multiple of ({want_hmma}, {want_x4}, {want_x2}) per K step")
            if c.get("CALL", 0):
                bad.append("a CALL in the K loop")
        if spill != (0, 0) or u.get("stack", 0):
            bad.append("spills")
        if not k_loops:
            bad.append("no K loop with HMMA")
        # ptxas may unroll the K loop and peel steps off it: the function holds whole K steps.
        steps = hmma // want_hmma if want_hmma else 0
        if steps < 1 or [hmma, x4, x2] != [steps * want_hmma, steps * want_x4, steps * want_x2]:
            bad.append(f"HMMA/LDSM.x4/LDSM.x2 ({hmma}, {x4}, {x2}) not whole K steps of "
                       f"({want_hmma}, {want_x4}, {want_x2})")
        if bad:
            print(f"FAIL: {name}: {'; '.join(bad)}")
            ok = False
    text = open(ptx).read()
    # No call at all in the rewritten PTX: every extern became an instruction.
    if re.search(r"^\s*call", text, re.M):
        print("FAIL: a call is left in the rewritten PTX")
        ok = False
    # A store narrower than the 64-bit register it stores: the trap of a native vector f16 cast in Halide 21's
    # CUDA backend (generators/b16_bits.h): two f32 packed in a %rd register, its low 32 bits stored as C.
    narrow = re.findall(r"^\s*st\.\S*\.b(?:8|16|32)\s+\[[^]]*\],\s*%rd\d+;", text, re.M)
    if narrow:
        print(f"FAIL: {len(narrow)} stores of a 64-bit register as a narrower value, e.g. {narrow[0].strip()}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
