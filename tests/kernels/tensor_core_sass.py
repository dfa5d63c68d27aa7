#!/usr/bin/env python3
"""The SASS of a tensor-core CUDA kernel, checked without a GPU.

The kernel's PTX, made now by the gemm generator with the kernel's params (as the kernel cache makes it: the
CUDA target `blockfuse info` prints), goes through the load-time rewrite (tests/mma_ptx_tool, the code
runtime/cuda_driver.cpp runs at module load), then ptxas -arch=sm_90 at the register cap the JIT gets
(`blockfuse info`'s regs=: a cap set on purpose as it is, the rule's raised to runtime/mma_ptx.h's floor of 168),
then cuobjdump. Per entry (the
whole-tile specialization and the general one) it must hold exactly the HMMA and LDSM the tiling implies
per K step (warp_m/16 x warp_n/8 HMMA.16816.F32 and warp_m/16 + warp_n/16 LDSM.16.M88.4 per 16 of K, or
warp_n/8 LDSM.16.M88.2 for B when warp_n/8 is odd; a grouped convolution's A once per window of the warp): whole K steps in the function and in each K loop
(ptxas may unroll the loop and peel steps off it), no call left in the PTX nor a CALL in a K loop, no
spill, no 64-bit register stored as a narrower value, no f32 stored as 16 bits unconverted. Prints registers, spills and each K loop's length and instruction mix.

    tensor_core_sass.py MMA_PTX_TOOL BLOCKFUSE_CLI GEMM_GENERATOR KERNEL
    tensor_core_sass.py MMA_PTX_TOOL BLOCKFUSE_CLI --workload KEY --strategy STRATEGY

KERNEL: a CUDA variant of schedules/variants/gemm.json (its knobs and dtype are read there). --workload: the
kernel the dispatcher generates for KEY with STRATEGY (`blockfuse generate`, e.g. a block on layer_by_layer_tc):
each of its GEMM entries (b<blk>_layer<i>_gemm) is held to layer i's tiling (its tc<i>_ knobs), the module's
other kernels (CUDA cores) to having no HMMA; a convolution's implicit GEMM (conv2d, conv3d on tensor_cores) to its
tiling (split K: the accumulators' kernel; the epilogue's, which sums the splits, to no HMMA); the JIT cap is
runtime/kernel_registry.cpp's for its threads.
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


def f32_stored_as_16_bits(ptx):
    """16-bit stores whose 32-bit register was last written by an f32 instruction: the two-lane trap of a native
    vector f16 cast (tests/scripts/cuda_f16_stores.sh), an f32 stored as f16 without a conversion. Converted values
    are %rs registers, or pairs packed by cvt.rn.f16x2.f32 and stored as b32; the integer rounding of
    generators/b16_bits.h stores the low half of an integer register, which is its value."""
    writer = {}  # register -> opcode of the last instruction that wrote it, in program order
    bad = []
    for line in ptx.splitlines():
        m = re.match(r"\s*(st\.\S*\.b16)\s+\[[^]]*\],\s*(.*);", line)
        if m:
            for reg in re.findall(r"%r\d+\b", m.group(2)):
                op = writer.get(reg, "")
                dest_type = re.search(r"\.(f16x2|f16|bf16|f32|[sub]\d+)\b", op)
                if dest_type and dest_type.group(1) == "f32":
                    bad.append(f"{line.strip()} ({reg} from {op})")
            continue
        m = re.match(r"\s*(?:@!?%p\d+\s+)?([a-z][\w.]*)\s+(%r\d+)\s*,", line)
        if m:
            writer[m.group(2)] = m.group(1)
    return bad


def variant(kernel):
    """(knobs, storage) of a named CUDA gemm variant."""
    with open(os.path.join(ROOT, "schedules/variants/gemm.json")) as f:
        for v in json.load(f):
            if v["name"] == kernel and v["device"] == "cuda":
                return v["knobs"], {"f16": "float16", "bf16": "bfloat16"}[v["dtype"]]
    raise KeyError(kernel)


def expected_counts(knobs, n=None, window_n=0):
    """(HMMA, LDSM.x4, LDSM.x2) per K step of a tiling, and the K step. n: the GEMM's N where it is static (a block's
    layer): with one warp along N and one block tile covering N, the n-tiles past N are stored by no lane, and ptxas
    drops their HMMA and the B ldmatrix that feed only them (their results are dead). window_n: a grouped
    convolution's window of output channels (generators/conv_windows.h), each window of a warp its own A fragments."""
    mt, nt, kt = int(knobs["warp_m"]) // 16, int(knobs["warp_n"]) // 8, int(knobs["k_step"]) // 16
    if int(knobs.get("wgmma", 0)):  # one HGMMA (counted as HMMA) a 16 of K for the warpgroup, no ldmatrix
        return (kt, 0, 0), int(knobs["k_step"])
    live = nt
    if n is not None and int(knobs["warps_n"]) == 1 and n <= int(knobs["warp_n"]):
        live = -(-n // 8)
    b_x4 = -(-live // 2) if nt % 2 == 0 else 0
    a_x4 = mt * (-(-(live * 8) // window_n) if window_n else 1)
    return (kt * mt * live, kt * (a_x4 + b_x4), kt * (live if nt % 2 else 0)), int(knobs["k_step"])


def steps_of(counts, want):
    """K steps a (HMMA, LDSM.x4, LDSM.x2) count holds, or 0 if it is not whole K steps of `want`."""
    steps = counts[0] // want[0] if want[0] else 0
    return steps if steps >= 1 and list(counts) == [steps * w for w in want] else 0


def gemm_expectation(knobs, n=None, window_n=0):
    """What a GEMM entry of this tiling holds: (HMMA, LDSM.x4, LDSM.x2) per K step, the step's name, whether its
    loop may be gone (n: a generated kernel's layer, whose N and K are static: one K step needs no loop), and its
    panel pipeline: (stages, 16-byte panel vectors a thread copies per K step; grouped: an A panel per window)."""
    want, k_step = expected_counts(knobs, n, window_n)
    bm = int(knobs["warp_m"]) * int(knobs.get("warps_m", 2))
    bn = int(knobs["warp_n"]) * int(knobs.get("warps_n", 2))
    threads = 32 * int(knobs.get("warps_m", 2)) * int(knobs.get("warps_n", 2))
    vectors = -(-(bm * (max(1, bn // window_n) if window_n else 1) + bn) * (k_step // 8) // threads)
    return want, f"K step(s) of {k_step}", n is not None, (int(knobs.get("stages", 1)), vectors)


def fused_tc_expectation(params, knobs):
    """The same for the FFN fused on tensor cores (generators/ffn_tc_algorithm.h), per hidden chunk: the expand's
    mt x chunk/8 HMMA and mt + chunk/16 LDSM.x4 per 16 of its K (C; FusedMBConv's k x k C), the project's mt x C'/8
    HMMA and C'/16 LDSM.x4 per 16 of the chunk; one chunk (the whole hidden width) needs no loop."""
    c = int(params["channels"])
    e = c * int(params["expansion"])
    chunk = max(d for d in range(1, int(knobs.get("chunk", 8)) + 1) if e % d == 0)  # effective_chunk
    mt = int(knobs.get("tc_warp_m", 16)) // 16
    window = int(params.get("kernel_size", 1)) if params.get("family") == "fused_mbconv" else 1
    ks = window * window * c // 16
    want = (mt * chunk // 8 * ks + mt * c // 8 * (chunk // 16), (mt + chunk // 16) * ks + c // 16 * (chunk // 16), 0)
    if params.get("family") == "convfirst" and int(knobs.get("tc_grouped", 0)):
        # its grouped layer on mma first: per group (a loop over C/8 groups) mt x ceil(k k 8 / 16) HMMA, A and B read
        # from global memory (no LDSM)
        k = int(params["kernel_size"])
        return want, f"hidden chunk(s) of {chunk}", e == chunk, (None, 0), (mt * -(-k * k * 8 // 16), 0, 0)
    return want, f"hidden chunk(s) of {chunk}", e == chunk


def mbconv_tc_expectation(params, knobs, expand_only=False):
    """The same for MBConv fused on tensor cores (generators/mbconv_tc_geometry.h), per hidden chunk: the expand's
    mte x chunk/8 HMMA and mte + chunk/16 LDSM.x4 per 16 of the padded C over the halo's m-tiles, the project's mtp x
    C'/8 HMMA (the n-tiles past C', padding, are stored by no lane: ptxas drops their HMMA) and mtp + C'p/16 LDSM.x4
    per 16 of the chunk."""
    c, ks, stride = int(params["channels"]), int(params["kernel_size"]), int(params["stride"])
    e = c * int(params["expansion"])
    chunk = max(d for d in range(1, int(knobs.get("chunk", 8)) + 1) if e % d == 0)  # effective_chunk
    warps, tx, ty = int(knobs["tc_warps"]), int(knobs["tile_x"]), int(knobs["tile_y"])
    def ceil(a, b):
        return -(-a // b)

    halo = ((tx - 1) * stride + ks) * ((ty - 1) * stride + ks)
    mte, mtp = ceil(ceil(halo, 16), warps), ceil(ceil(tx * ty, 16), warps)  # m-tiles a warp: expand, project
    kp, np_ = ceil(c, 16), ceil(c, 16) * 2  # K steps of the padded input, n-tiles of the padded output (C' = C)
    want = (mte * chunk // 8 * kp + mtp * c // 8 * (chunk // 16), (mte + chunk // 16) * kp + (mtp + np_ // 2) *
            (chunk // 16), 0)
    if expand_only:  # Squeeze-Excitation's pooling kernel: the expand and the depthwise rows, no project
        want = (mte * chunk // 8 * kp, (mte + chunk // 16) * kp, 0)
    return want, f"hidden chunk(s) of {chunk}", e == chunk


def check_entry(name, func, usage, cap, expect):
    """Prints one entry's registers and K loops; returns what is wrong with it (expect None: no HMMA expected;
    else gemm_expectation's or fused_tc_expectation's)."""
    u = usage.get(name, {})
    spill = u.get("spill", (0, 0))
    ops = [op for _, op, _ in sass_mix.instructions(func)]
    hmma = sum(op.startswith("HMMA.16816.F32") or op.startswith("HGMMA.") for op in ops)
    x4 = sum(op.startswith("LDSM.16.M88.4") for op in ops)
    x2 = sum(op.startswith("LDSM.16.M88.2") for op in ops)
    calls = sum(op.startswith("CALL") for op in ops)
    copies = sum(op.startswith("LDGSTS") for op in ops)
    print(f"{name}: {u.get('regs', '?')} registers (cap {cap}), spill {spill[0]}/{spill[1]} B, stack "
          f"{u.get('stack', '?')} B; per function {len(ops)} instructions, HMMA {hmma}, LDSM.x4 {x4}, LDSM.x2 {x2}, "
          f"LDGSTS {copies}, CALL {calls} "
          f"(ptxas' own subroutines: the epilogue's IEEE division slow path)")
    if expect is None:
        return [f"{hmma} HMMA in a kernel without tensor-core layers"] if hmma or x4 or x2 else []
    want, step_name, static = expect[:3]
    stages, vectors = expect[3] if len(expect) > 3 else (None, 0)
    # a prologue of the kernel on mma before its K loops (fused ConvFirst's grouped layer): its HMMA/LDSM per
    # iteration of its own loop, which holds whole iterations
    prologue = expect[4] if len(expect) > 4 else None
    bad = []
    k_loops = [(s, e, o) for s, e, o in sass_mix.loops(func) if any(x.startswith(("HMMA", "HGMMA")) for x in o)]
    # wgmma: ptxas must not have waited for or serialized any (the rewrite chains a K step's on one accumulator), and
    # every HGMMA in a K loop accumulates (!UPT: D = A B, the accumulator dropped)
    bad_wgmma = list(u.get("wgmma_notes", []))
    for s, e, _ in k_loops:
        for addr, op, rest in sass_mix.instructions(func):
            if s <= addr <= e and op.startswith("HGMMA") and "!UPT" in rest:
                bad_wgmma.append(f"HGMMA at 0x{addr:04x} in a K loop does not accumulate: {op}{rest}")
    prologue_counts = [0, 0, 0]
    for s, e, o in k_loops:
        c, mix = sass_mix.opcode_mix(o, 12)
        cnt = [sum(x.startswith(p) for x in o) for p in (("HMMA.16816.F32", "HGMMA."), "LDSM.16.M88.4", "LDSM.16.M88.2")]
        if prologue and steps_of(cnt, prologue):
            print(f"  grouped-layer loop 0x{s:04x}-0x{e:04x}: {len(o)} instructions for {steps_of(cnt, prologue)} "
                  f"group(s): {mix}")
            prologue_counts = [a + b for a, b in zip(prologue_counts, cnt)]
            continue
        steps = steps_of(cnt, want)
        print(f"  K loop 0x{s:04x}-0x{e:04x}: {len(o)} instructions for {steps} {step_name}: {mix}")
        if not steps:
            bad.append(f"K loop HMMA/LDSM.x4/LDSM.x2 {cnt}, not whole {step_name} of {want}")
        # wgmma: one WARPGROUP.ARRIVE (wgmma.fence) a K step's chain, not one an HGMMA (each then waits its turn)
        arrives = sum(x.startswith("WARPGROUP.ARRIVE") for x in o)
        if steps and cnt[0] and any(x.startswith("HGMMA") for x in o) and arrives > steps:
            bad.append(f"K loop: {arrives} WARPGROUP.ARRIVE for {steps} K step(s) of wgmma (one fence a chain)")
        loop_copies = sum(x.startswith("LDGSTS") for x in o)
        if stages is not None and stages > 1:
            # The cp.async ring (schedules/panel_prefetch.h): each step's copies without registers, one wait and
            # one barrier a step, no shared store.
            barriers = sum(x.startswith("BAR.SYNC") for x in o)
            waits = sum(x.startswith("DEPBAR") for x in o)
            stores = sum(x.startswith("STS") for x in o)
            if steps and (loop_copies != steps * vectors or barriers != steps or waits != steps or stores):
                bad.append(f"K loop of a {stages}-stage ring: LDGSTS {loop_copies}, BAR {barriers}, DEPBAR {waits}, STS "
                           f"{stores} (expected {vectors}, 1, 1, 0 per step)")
        elif stages is not None and loop_copies:
            bad.append(f"{loop_copies} LDGSTS in the K loop of a one-stage tiling")
        if c.get("CALL", 0):
            bad.append("a CALL in the K loop")
    if spill != (0, 0) or u.get("stack", 0):
        bad.append("spills")
    bad += bad_wgmma
    if prologue and not prologue_counts[0]:
        bad.append(f"no loop of the grouped layer's groups ({prologue} HMMA/LDSM.x4/LDSM.x2 each)")
    hmma, x4, x2 = hmma - prologue_counts[0], x4 - prologue_counts[1], x2 - prologue_counts[2]
    # ptxas may unroll the K loop and peel steps off it: the function holds whole K steps.
    steps = steps_of((hmma, x4, x2), want)
    if not k_loops and not static:  # a static K may be unrolled whole by ptxas (one step, or a few per split)
        bad.append("no K loop with HMMA")
    if not steps:
        bad.append(f"HMMA/LDSM.x4/LDSM.x2 ({hmma}, {x4}, {x2}) not whole {step_name} of {want}")
    # A static K unrolled whole has no K loop to look in (the checks above): then the function's copies (not a count
    # for a ring: rows the simplifier proved zero, past K or in the padding, stay plain stores).
    if not k_loops and stages is not None and stages > 1 and steps and not copies:
        bad.append(f"a {stages}-stage ring without LDGSTS ({steps} {step_name}, no K loop)")
    elif not k_loops and stages == 1 and copies:
        bad.append(f"{copies} LDGSTS in a one-stage tiling (no K loop)")
    return bad


def gemm_kernel_ptx(cli, generator, kernel, work):
    """(PTX file, JIT cap, entry -> tiling knobs, expected entries) of a named gemm variant, or an error."""
    try:
        knobs, storage = variant(kernel)  # the rest at the generator's defaults (schedules/gemm_knobs.h)
    except KeyError:
        return f"{kernel} is not a CUDA variant of schedules/variants/gemm.json"
    if not all(k in knobs for k in ("warp_m", "warp_n", "k_step")):
        return f"{kernel} must give warp_m, warp_n and k_step (the counts expected follow them)"
    info = subprocess.run([cli, "info"], capture_output=True, text=True).stdout
    m = re.search(rf"^{re.escape(kernel)}\s.*regs=(\d+)", info, re.M)
    target = re.search(r"^CUDA target: (\S+)", info, re.M)
    if not m or not target:
        return f"{kernel} (or the CUDA target) is not in `blockfuse info`"
    params = [f"{k}={v}" for k, v in sorted(knobs.items())] + [f"storage={storage}"]
    g = subprocess.run([generator, "-g", "gemm", "-e", "device_code", "-o", work, "-n", kernel, "-f", kernel,
                        f"target={target.group(1)}-no_runtime"] + params, capture_output=True, text=True)
    code = os.path.join(work, kernel + ".device_code")
    if g.returncode or not os.path.exists(code):
        return f"generating {kernel}: {g.stderr.strip()[-2000:]}"
    # split K: two kernels (the accumulators' and the epilogue's), each whole tiles and general
    entries = 4 if split_k(knobs) else 2
    return (code, int(m.group(1)),
            lambda name: None if split_epilogue(name, knobs) else gemm_expectation(knobs), entries)


def split_k(knobs):
    """Whether a tiling splits K over blocks (schedules/gemm_knobs.h split_k)."""
    return int(knobs.get("split_k", 1)) > 1


def split_epilogue(name, knobs):
    """Split K's second kernel: the epilogue's, which sums the splits and holds no mma (the accumulators' kernel is
    the `partial` stage's)."""
    return split_k(knobs) and "_partial_" not in name


def generated_kernel_ptx(cli, key, strategy, work, knobs=()):
    """The same for the kernel `blockfuse generate` makes for a workload and strategy (knobs: name=value over the
    dispatcher's pick)."""
    g = subprocess.run([cli, "generate", key, "--strategy", strategy, "--device", "cuda", "--out", work] +
                       [a for k in knobs for a in ("--knob", k)], capture_output=True, text=True)
    ptx = glob.glob(os.path.join(work, "*", "*.ptx"))
    desc = glob.glob(os.path.join(work, "*", "*.json"))
    if g.returncode or len(ptx) != 1 or len(desc) != 1:
        return f"blockfuse generate {key} --strategy {strategy}: {(g.stderr or g.stdout).strip()[-2000:]}"
    d = json.load(open(desc[0]))
    # A GEMM's epilogue lives in registers: given a region without a constant size, Halide allocates it (or a group
    # of such stages) on the device heap instead, a malloc a call and the values through global memory. Known where
    # a warp along N has no output column at all (a convolution of fewer channels than the block's other warps
    # hold): not checked there.
    params = dict(p.split("=", 1) for p in d.get("generator_params", []))
    knobs = d["knobs"]
    idle_warp = d["family"] == "conv2d_tc" and int(params["out_channels"]) <= int(knobs.get("warp_n", 64)) * (
        int(knobs.get("warps_n", 2)) - 1)
    for stmt in glob.glob(os.path.join(work, "*", "*.stmt")):
        heap = re.search(r"allocate ((allocgroup__|\S*epilogue)\S*)\.buffer", open(stmt, errors="replace").read())
        if heap and not idle_warp:
            return f"blockfuse generate {key} --strategy {strategy}: {heap.group(1)} is allocated on the device heap"
    # runtime/kernel_registry.cpp jit_register_cap: the variant's cap set on purpose, else 64K registers over the
    # block's warps allocated in groups of 4, raised to runtime/mma_ptx.h's floor.
    warps = max(1, (int(d["threads_per_block"]) + 31) // 32)
    cap = int(d["max_registers"]) or max(MIN_REGISTERS,
                                         min(255, max(16, 65536 // (((warps + 3) // 4 * 4) * 32) // 8 * 8)))
    n_of = block_layer_channels(params) if d["family"] == "block" else []

    def tiling(name):
        if d["family"] == "conv2d_tc":  # the implicit GEMM alone (a conv2d or conv3d), N static
            return None if split_epilogue(name, knobs) else gemm_expectation(
                knobs, int(params["out_channels"]), conv_window_n(params))
        if params.get("strategy") == "fused_tc":  # one kernel, both layers' mma (whole tiles and the general entry)
            if params.get("family") == "mbconv":
                # with SE (se=1): the pooling kernel (no project), then the mean, reduce and gate kernels (no mma)
                if re.search(r"_se_(sum|reduced|gate)_", name):
                    return None
                return mbconv_tc_expectation(params, knobs, "_se_pool_" in name)
            return fused_tc_expectation(params, knobs)
        m = re.search(r"_layer(\d+)_gemm", name)
        if not m:
            return None
        p = f"tc{m.group(1)}_"
        i = int(m.group(1))
        # ConvFirst's grouped layer 0 (knob tc_grouped): group width 8, windows of one group
        window_n = 8 if params.get("family") == "convfirst" and i == 0 and int(knobs.get("tc_grouped", 0)) else 0
        return gemm_expectation({k[len(p):]: v for k, v in knobs.items() if k.startswith(p)},
                                n_of[i] if i < len(n_of) else None, window_n)

    return ptx[0], cap, tiling, None


def conv_window_n(params):
    """A grouped convolution's window of output channels (generators/conv_windows.h); 0 for one group."""
    groups = int(params.get("groups", 1))
    per_group = int(params["out_channels"]) // groups
    return 0 if groups == 1 else per_group if per_group % 8 == 0 else 8


def block_layer_channels(params):
    """Each layer's output channels (its GEMM's N) of a block generator's params (generators/block_spec.h)."""
    c = int(params.get("channels", 0))
    e = c * int(params.get("expansion", 1))
    return {"mbconv": [e, e, c], "fused_mbconv": [e, c], "ffn": [e, c], "convfirst": [c, e, c],
            "convnext": [c, e, c]}.get(params.get("family"), [])


def main(argv):
    if len(argv) >= 7 and argv[3] == "--workload" and argv[5] == "--strategy" and all("=" in a for a in argv[7:]):
        mode = "generated"
    elif len(argv) == 5:
        mode = "gemm"
    else:
        print(__doc__, file=sys.stderr)
        return 2
    rewriter, cli = argv[1:3]
    ptxas = tool("ptxas")
    if not ptxas:
        print("SKIP: ptxas not found (PATH, /usr/local/cuda/bin): the tensor-core SASS is not checked")
        return 77
    # cuobjdump -sass runs nvdisasm: without it the listing is empty
    if not tool("nvdisasm", install="nvidia-cuda-nvdisasm"):
        print("error: nvdisasm not found and not installable (cuobjdump -sass needs it)", file=sys.stderr)
        return 1
    cuobjdump = tool("cuobjdump", install="nvidia-cuda-cuobjdump")
    work = tempfile.mkdtemp(prefix="tc_sass_")
    got = (gemm_kernel_ptx(cli, argv[3], argv[4], work) if mode == "gemm"
           else generated_kernel_ptx(cli, argv[4], argv[6], work, argv[7:]))
    if isinstance(got, str):
        print(f"error: {got}", file=sys.stderr)
        return 2 if mode == "gemm" and "is not a CUDA variant" in got else 1
    code, cap, tiling, entries = got
    r = subprocess.run([rewriter, code, work], capture_output=True, text=True)
    print(r.stdout.strip())
    if r.returncode or not os.path.exists(os.path.join(work, "module0.ptx")):
        print(f"error: the rewrite of {code} failed: {r.stderr.strip()}", file=sys.stderr)
        return 1
    ptx = os.path.join(work, "module0.ptx")
    try:
        # a module with wgmma targets sm_90a (runtime/mma_ptx.cpp raises it)
        arch = "sm_90a" if re.search(r"^\.target sm_90a", open(ptx).read(), re.M) else "sm_90"
        usage = sass_mix.ptxas_usage(ptxas, ptx, arch, cap, os.path.join(work, "k.cubin"))
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    sass = subprocess.run([cuobjdump, "-sass", os.path.join(work, "k.cubin")], capture_output=True, text=True).stdout
    funcs = re.split(r"\n\s*Function : ", sass)[1:]
    ok = entries is None or len(funcs) == entries
    if not ok:
        print(f"FAIL: {len(funcs)} entries (expected {entries}: whole tiles and the general one)")
    if not any(tiling(f.split("\n")[0].strip()) is not None for f in funcs):
        print("FAIL: no tensor-core entry in the module")
        ok = False
    for func in funcs:
        name = func.split("\n")[0].strip()
        t = tiling(name)
        bad = check_entry(name, func, usage, cap, t)
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
    unconverted = f32_stored_as_16_bits(text)
    if unconverted:
        print(f"FAIL: {len(unconverted)} f32 values stored as 16 bits with no conversion, e.g. {unconverted[0]}")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
