#!/usr/bin/env python3
"""blockfuse.torch on whole torchvision networks (GPU host; bench/recipes/torch.txt): random weights (nothing
is downloaded), eval mode, channels_last, f16 by default.

  python3 bench/torch_validate.py --phase check|latency|report --out DIR [--models a,b] [--batches 1,8,128]
      [--compile default,max-autotune] [--autotune-batches 8] [--inputs 1000] [--budget S] [--device cuda|cpu]

Random weights: torchvision's own initialization; then every BatchNorm's running statistics are measured on
random images (the BatchNorm layers alone in training mode, cumulative averages, two batches of 16 in
float32), and randomized: running_var x U(0.7, 1.4), running_mean + 0.1 U(-1, 1) sqrt(var), weight
U(0.6, 1.4), bias U(-0.2, 0.2); LayerNorm affine likewise, ConvNeXt's layer scale U(0.1, 0.5) (its 1e-6
default would hide every block behind its residual). Seeded (--seed).

check: per model, optimize() on a batch-8 example (--choose measure: per batch size, on that batch's example,
  each module the fastest of its strategies and PyTorch's own; the choices land in check.json for latency
  --choices); every replaced module against the original module in
  float64 on the inputs it sees in the eager f16 model, at every batch size (err = max|y - ref| / max|ref|,
  pass at <= 1e-2 for f16, 6e-2 for bf16, 1e-4 for f32; the eager f16 module's own error beside it); the
  whole model's logits against eager's on --inputs random images (batches of the largest batch size):
  per-input cosine similarity (pass: every one >= 0.999) and top-1 agreement (pass: >= 99%), with eager
  f16 against float32 eager beside as the floor f16 itself sets.
latency: eager, torch.compile (dynamic=False, one graph per batch size), the optimized model, each at every
  batch size, median of >= 20 calls (>= 0.3 s) after warm-up: host-inclusive (the call and a synchronize,
  as a caller feels it) and device time (CUDA events around the call); --compile max-autotune adds
  torch.compile(mode="max-autotune") at --autotune-batches only (its compile takes minutes); --graphs adds every
  variant captured in a CUDA graph (input copied in, graph replayed; max-autotune uses CUDA graphs too).
warm: torch.compile of each model at every batch size (and max-autotune at --autotune-batches), no timing:
  it fills Inductor's caches (FX graph and autotuning, under /tmp) so that latency's compiles load instead of
  compiling; its cold compile times are in warm_MODEL_MODE_BATCH.json. check --warm MODES starts one warm
  process per model, mode and batch size beside the check (compiling is mostly CPU work, the check GPU work)
  and waits for them at its end, up to --warm-deadline seconds after its start. max-autotune then chooses its
  kernels while the check and the other compiles run on the same GPU.
load: every kernel the models may take (every strategy of every key), opened and run once on zeros by --jobs
  processes at once, so that the driver's compiles of their PTX are in its compute cache before the timed
  phases open them (CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE); a kernel that fails to load or run is listed.
report: the Markdown tables of everything in DIR.
"""
import argparse
import copy
import json
import os
import platform
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

TOL = {"f16": 1e-2, "bf16": 6e-2, "f32": 1e-4}
MODELS = ("mobilenet_v2", "efficientnet_b0", "convnext_tiny")


def torch_dtype(name):
    import torch
    return {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}[name]


def log(*a):
    print(*a, flush=True)


class Budget:
    def __init__(self, seconds):
        self.end = time.monotonic() + seconds

    def left(self):
        return self.end - time.monotonic()


def make_model(name, seed, size=224):
    import torch
    import torchvision
    torch.manual_seed(seed)
    m = getattr(torchvision.models, name)(weights=None).eval()
    bns = [x for x in m.modules() if isinstance(x, torch.nn.BatchNorm2d)]
    for b in bns:
        b.reset_running_stats()
        b.momentum = None  # cumulative average
        b.train()
    with torch.no_grad():
        for _ in range(2):
            m(torch.randn(16, 3, size, size))
    g = torch.Generator().manual_seed(seed + 1)
    u = lambda t, lo, hi: torch.rand(t.shape, generator=g) * (hi - lo) + lo
    with torch.no_grad():
        for b in bns:
            b.eval()
            b.running_var.mul_(u(b.running_var, 0.7, 1.4))
            b.running_mean.add_(0.1 * u(b.running_mean, -1, 1) * b.running_var.sqrt())
            b.weight.copy_(u(b.weight, 0.6, 1.4))
            b.bias.copy_(u(b.bias, -0.2, 0.2))
        for x in m.modules():
            if isinstance(x, torch.nn.LayerNorm):
                x.weight.copy_(u(x.weight, 0.6, 1.4))
                x.bias.copy_(u(x.bias, -0.2, 0.2))
            if hasattr(x, "layer_scale") and isinstance(x.layer_scale, torch.nn.Parameter):
                x.layer_scale.copy_(u(x.layer_scale, 0.1, 0.5))
    return m.eval()


def to_dev(m, device, dtype):
    import torch
    return m.to(device=device, dtype=dtype).to(memory_format=torch.channels_last)


def inputs(n, size, device, dtype, seed):
    import torch
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(n, 3, size, size, generator=g)
    return x.to(device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)


def sync(device):
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_calls(fn, x, min_calls=20, min_seconds=0.3, max_calls=400):
    """Median host-inclusive ms (call + synchronize) and median device ms (CUDA events)."""
    import torch
    host, dev = [], []
    cuda = x.device.type == "cuda"
    for _ in range(5):
        fn(x)
    sync(x.device)
    t_end = time.perf_counter() + min_seconds
    while len(host) < min_calls or (time.perf_counter() < t_end and len(host) < max_calls):
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        if cuda:
            s.record()
        fn(x)
        if cuda:
            e.record()
        sync(x.device)
        host.append((time.perf_counter() - t0) * 1e3)
        if cuda:
            dev.append(s.elapsed_time(e))
    med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")
    return {"host_ms": med(host), "device_ms": med(dev), "calls": len(host),
            "host_p10": sorted(host)[len(host) // 10], "host_p90": sorted(host)[len(host) * 9 // 10]}


def graphed(fn, x):
    """fn captured in one CUDA graph on a static copy of x, after warm-up calls on a side stream: a call copies
    its input in and replays the graph, the host's launch work gone (as torch.compile's max-autotune and
    reduce-overhead modes do with their CUDA graphs). The output is the graph's static tensor."""
    import torch
    static = x.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn(static)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(static)

    def call(inp):
        static.copy_(inp)
        g.replay()
        return out

    call.graph = g
    return call


def compiled(eager, mode):
    """torch.compile of the eager model as latency() times it (warm() makes the same, for Inductor's caches)."""
    import torch
    torch._dynamo.reset()
    return torch.compile(eager, mode=None if mode == "default" else mode, dynamic=False)


def first_calls(args, name, eager, budget, min_left, rows):
    """Each torch.compile of the eager model (args.compile modes; max-autotune at --autotune-batches only),
    compiled by its first call: yields (mode, batch, compiled model, input, seconds of that call). One the
    budget leaves fewer than min_left seconds for (x1.5 for max-autotune) is a skipped row of `rows`."""
    import torch
    device, dt = next(eager.parameters()).device, next(eager.parameters()).dtype
    for mode in args.compile:
        comp = compiled(eager, mode)
        for n in (args.batches if mode == "default" else args.autotune_batches):
            if budget.left() < min_left * (1 if mode == "default" else 1.5):
                rows.append({"model": name, "batch": n, "variant": f"compile:{mode}", "skipped": "budget"})
                log(f"{name} n={n} compile:{mode}: skipped, {budget.left():.0f} s of the budget left")
                continue
            x = inputs(n, args.size, device, dt, args.seed + 11)
            t0 = time.monotonic()
            with torch.inference_mode():
                comp(x)
                sync(device)
            yield mode, n, comp, x, time.monotonic() - t0


def warm(args, budget, save):
    import torch
    device = torch.device(args.device)
    dt = torch_dtype(args.dtype)
    results = {}
    for name in args.models:
        eager = to_dev(copy.deepcopy(make_model(name, args.seed, args.size)), device, dt)
        rows = []
        for mode, n, _, _, tc in first_calls(args, name, eager, budget, 5, rows):
            rows.append({"model": name, "batch": n, "variant": f"compile:{mode}", "compile_s": tc})
            results[name] = rows
            save(results)
            log(f"warm {name} n={n} compile:{mode}: compiled in {tc:.0f} s")
        results[name] = rows
    return results


def start_warm(args):
    """check --warm: one warm process per model, mode and batch size (much of a compile is single-threaded
    Python): [(tag, Popen)], each in a process group of its own (Inductor's compile workers)."""
    procs = []
    for name in args.models:
        for mode in args.warm:
            for n in (args.batches if mode == "default" else args.autotune_batches):
                tag = f"{name}_{mode}_{n}"
                cmd = [sys.executable, os.path.abspath(__file__), "--phase", "warm", "--out", args.out,
                       "--models", name, "--compile", mode, "--batches", str(n), "--autotune-batches", str(n),
                       "--dtype", args.dtype, "--size", str(args.size), "--seed", str(args.seed),
                       "--device", args.device, "--budget", str(args.warm_deadline), "--tag", tag]
                log_file = open(os.path.join(args.out, f"warm_{tag}.txt"), "w")
                # a dozen of them share the CPUs (compile_threads is not part of Inductor's cache key)
                env = dict(os.environ, OMP_NUM_THREADS="2", TORCHINDUCTOR_COMPILE_THREADS="4")
                procs.append((tag, subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env,
                                                    start_new_session=True)))
    return procs


def wait_warm(procs, start, seconds):
    import signal
    for tag, p in procs:
        try:
            p.wait(timeout=max(1, start + seconds - time.monotonic()))
            log(f"warm {tag}: exit {p.returncode}")
        except subprocess.TimeoutExpired:
            log(f"warm {tag}: stopped at the deadline, {seconds:.0f} s after the check's start (what it compiled "
                "before is cached)")
        try:
            os.killpg(p.pid, signal.SIGKILL)  # its compile workers too
        except ProcessLookupError:
            pass
        p.wait()


def capture_inputs(model, paths, x):
    """The input of each module at `paths` when `model` runs on x."""
    import torch
    got, hooks = {}, []

    def keep(path):
        def hook(m, a):
            got.setdefault(path, a[0].detach().clone())
        return hook

    for p in paths:
        hooks.append(model.get_submodule(p).register_forward_pre_hook(keep(p)))
    with torch.inference_mode():
        model(x)
    for h in hooks:
        h.remove()
    return got


def rel(y, ref):
    return float((y.double() - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def _load_key(key, device="cuda"):
    """Every strategy's kernel of one key opened and run once on zero tensors: [(strategy, seconds, error)]."""
    import torch
    from blockfuse._lib import BlockfuseError, Kernel
    from blockfuse.torch import ops
    out = []
    for s in Kernel(key, "", device, load=False).desc["strategies"]:
        t0 = time.monotonic()
        try:
            kern = Kernel(key, s, device)
            args = kern.arguments()
            keep = [torch.zeros(tuple(reversed(t["extents"])), dtype=torch_dtype(t["dtype"]), device=device)
                    for t in kern.tensors]
            for a, t in zip(args, keep):
                ops._fill_dense(a, t)  # dense, innermost first: the activations' (n, y, x, c) is channels_last
            ops._launch(kern, args, keep[0].device)
            sync(keep[0].device)
            out.append((s, time.monotonic() - t0, ""))
        except BlockfuseError as e:
            out.append((s, time.monotonic() - t0, str(e)))
    return out


def load(args, budget, save):
    """Every kernel the models may take (each key's every strategy, what optimize(choose="measure") times),
    opened and run once on zeros by --jobs processes at once: the driver compiles each kernel's PTX once,
    into its compute cache (CUDA_CACHE_PATH), from which the later phases load it; a kernel that does not
    load or run is listed."""
    import concurrent.futures
    import multiprocessing
    from blockfuse import models
    keys = []
    for m in args.models:
        keys += [k for k in models.keys(m, args.batches, args.dtype, args.size) if k not in keys]
    rows, t0 = [], time.monotonic()
    ctx = multiprocessing.get_context("spawn")  # CUDA in each worker: no fork after CUDA's initialization
    with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=ctx) as ex:
        for key, res in zip(keys, ex.map(_load_key, keys, [args.device] * len(keys))):
            rows += [{"key": key, "strategy": s, "seconds": t, "error": e} for s, t, e in res]
            save({"kernels": rows})
    failed = [r for r in rows if r["error"]]
    log(f"load: {len(rows)} kernels of {len(keys)} keys opened and run once in {time.monotonic() - t0:.0f} s "
        f"({args.jobs} processes; slowest {max((r['seconds'] for r in rows), default=0):.1f} s); {len(failed)} failed")
    for r in failed:
        log(f"  FAIL {r['key']} {r['strategy']}: {r['error']}")
    return {"kernels": rows, "failed": len(failed)}


def choose_kwargs(choose):
    return {"choose": "measure", "keep_faster_pytorch": True} if choose == "measure" else {}


def check(args, budget, save):
    import torch
    import blockfuse.torch as bft
    device = torch.device(args.device)
    dt = torch_dtype(args.dtype)
    results = {}
    t_start = time.monotonic()
    procs = start_warm(args) if args.warm else []
    for name in args.models:
        if budget.left() < 20:
            log(f"{name}: skipped, budget spent")
            results[name] = {"skipped": "budget"}
            continue
        t0 = time.monotonic()
        from blockfuse.torch import modules
        modules.layout_copies = 0
        base = make_model(name, args.seed, args.size)
        eager = to_dev(copy.deepcopy(base), device, dt)
        ref64 = to_dev(copy.deepcopy(base), device, torch.float64)
        ref32 = to_dev(copy.deepcopy(base), device, torch.float32)
        # records: one model optimized on a batch-8 example serves every batch size; measure: a model per
        # batch size, each module the fastest of its strategies and PyTorch's own on that batch's example
        opts, tables = {}, {}
        for n in (args.batches if args.choose == "measure" else [8]):
            opt = copy.deepcopy(eager)
            tab = os.path.join(args.out, f"{name}_table.md" if args.choose == "records" else f"{name}_measured_n{n}_table.md")
            with open(tab, "w") as f:
                bft.optimize(opt, inputs(n, args.size, device, dt, args.seed + 2), file=f, **choose_kwargs(args.choose))
            opts[n], tables[n] = opt, opt.blockfuse_table
            done = [r for r in opt.blockfuse_table if r["action"].startswith("blockfuse")]
            log(f"{name}: n={n} {len(done)} modules replaced ({time.monotonic() - t0:.1f} s); {tab}")
        if args.choose == "records":
            opts = {n: opts[8] for n in args.batches}
        t_opt = time.monotonic() - t0
        rows = tables[max(tables)]
        replaced = [r for r in rows if r["action"].startswith("blockfuse")]
        # every replaced module against the original in float64, at every batch size
        blocks = []
        for n in args.batches:
            if budget.left() < 15:
                break
            opt = opts[n]
            replaced = [r for r in opt.blockfuse_table if r["action"].startswith("blockfuse")]
            xn = inputs(n, args.size, device, dt, args.seed + 3 + n)
            caught = capture_inputs(eager, [r["path"] for r in replaced], xn)
            for r in replaced:
                xin = caught.get(r["path"])
                if xin is None:
                    continue
                # the original: the module and the siblings the replacement absorbed (a BatchNorm after a Conv2d)
                orig = lambda model, t: [t := model.get_submodule(p)(t) for p in [r["path"]] + r["absorbs"]][-1]
                with torch.inference_mode():
                    ref = orig(ref64, xin.double().contiguous(memory_format=torch.channels_last))
                    try:
                        err = rel(opt.get_submodule(r["path"])(xin), ref)
                        sync(device)
                    except Exception as e:  # a kernel that fails is a failed check, named
                        err = float("nan")
                        r.setdefault("errors", []).append(f"n={n}: {e}")
                    e16 = rel(orig(eager, xin), ref)
                blocks.append({"path": r["path"], "module": r["module"], "n": n, "strategy": r["strategy"],
                               "err": err, "eager_err": e16, "pass": err <= TOL[args.dtype]})
        del caught
        # whole model: logits against eager on args.inputs images
        nb = max(args.batches)
        cos, agree, agree32, cos32, total = [], 0, 0, [], 0
        while total < args.inputs and budget.left() > 10:
            k = min(nb, args.inputs - total)
            x = inputs(nb, args.size, device, dt, args.seed + 1000 + total)  # the largest batch's kernels
            with torch.inference_mode():
                ye, yo = eager(x).double()[:k], opts[nb](x).double()[:k]
                y32 = ref32(x.float()).double()[:k]
            cos += torch.nn.functional.cosine_similarity(yo, ye, dim=1).tolist()
            cos32 += torch.nn.functional.cosine_similarity(ye, y32, dim=1).tolist()
            agree += int((yo.argmax(1) == ye.argmax(1)).sum())
            agree32 += int((ye.argmax(1) == y32.argmax(1)).sum())
            total += k
        # the other batch sizes' kernels on a few images each
        small = {}
        for n in args.batches:
            if n == nb:
                continue
            x = inputs(n, args.size, device, dt, args.seed + 7)
            with torch.inference_mode():
                small[n] = float(torch.nn.functional.cosine_similarity(opts[n](x).double(), eager(x).double(),
                                                                       dim=1).min())
        replaced = [r for r in rows if r["action"].startswith("blockfuse")]
        res = {"replaced": len(replaced), "left": len(rows) - len(replaced), "optimize_s": t_opt, "table": rows,
               "choose": args.choose, "choices": {n: bft.choices(opts[n]) for n in args.batches},
               "layout_copies": modules.layout_copies,
               "blocks": blocks, "blocks_pass": sum(b["pass"] for b in blocks), "blocks_checked": len(blocks),
               "inputs": total, "cos_min": min(cos) if cos else None, "cos_mean": sum(cos) / len(cos) if cos else None,
               "top1": agree / total if total else None, "eager_f32_cos_min": min(cos32) if cos32 else None,
               "eager_f32_top1": agree32 / total if total else None, "cos_min_other_batches": small,
               "pass": bool(cos) and min(cos) >= 0.999 and agree >= 0.99 * total and all(b["pass"] for b in blocks)}
        results[name] = res
        save(results)
        log(f"{name}: blocks {res['blocks_pass']}/{res['blocks_checked']} within {TOL[args.dtype]:g}; logits on {total} "
            f"inputs: cosine min {res['cos_min']:.6f} mean {res['cos_mean']:.6f}, top-1 agreement {res['top1']:.4f} "
            f"(eager f16 vs f32: cosine min {res['eager_f32_cos_min']:.6f}, top-1 {res['eager_f32_top1']:.4f}); "
            f"other batch sizes cosine min {small}; inputs converted to channels_last {res['layout_copies']} times; "
            f"{'PASS' if res['pass'] else 'FAIL'} ({time.monotonic() - t0:.0f} s)")
        for b in blocks:
            if not b["pass"]:
                log(f"  FAIL {b}")
        del eager, ref64, ref32, opt, opts
        if device.type == "cuda":
            torch.cuda.empty_cache()
    wait_warm(procs, t_start, args.warm_deadline)
    return results


def latency(args, budget, save):
    import torch
    import blockfuse.torch as bft
    device = torch.device(args.device)
    dt = torch_dtype(args.dtype)
    results = {}
    chosen = {}  # {model: {batch: strategy dict}} from a measured check
    if args.choices:
        chosen = {m: r.get("choices", {}) for m, r in json.load(open(args.choices))["models"].items()}
    for name in args.models:
        base = make_model(name, args.seed, args.size)
        eager = to_dev(copy.deepcopy(base), device, dt)
        x8 = inputs(8, args.size, device, dt, args.seed + 2)
        # blockfuse: every module optimize() serves (its default); blocks only (convs=False: the other
        # convolutions stay cuDNN's), both optimized on a batch-8 example; measured: per batch size, per module
        # the fastest of its strategies and PyTorch's own (the check's choices where --choices gives them,
        # else timed here on that batch's example)
        variants = {n: [("eager", eager)] for n in args.batches}
        for label, kw in (("blockfuse", {}), ("blockfuse_blocks", {"convs": False})):
            if label in args.variants:
                m = copy.deepcopy(eager)
                with open(os.path.join(args.out, f"{name}_{label}_table.md"), "w") as f:
                    bft.optimize(m, x8, file=f, **kw)
                for n in args.batches:
                    variants[n].append((label, m))
        if "blockfuse_measured" in args.variants:
            for n in args.batches:
                m = copy.deepcopy(eager)
                given = chosen.get(name, {}).get(str(n))
                kw = {"strategy": given} if given is not None else choose_kwargs("measure")
                with open(os.path.join(args.out, f"{name}_blockfuse_measured_n{n}_table.md"), "w") as f:
                    bft.optimize(m, inputs(n, args.size, device, dt, args.seed + 2), file=f, **kw)
                variants[n].append(("blockfuse_measured", m))
        rows = []
        for n in args.batches:
            x = inputs(n, args.size, device, dt, args.seed + 11)
            with torch.inference_mode():
                timed = list(variants[n])
                if args.graphs and device.type == "cuda":
                    timed += [(f"{label}+graph", fn) for label, fn in variants[n]]
                for label, fn in timed:
                    if budget.left() < 5:
                        break
                    try:
                        r = time_calls(graphed(fn, x) if label.endswith("+graph") else fn, x)
                    except Exception as e:  # a model that cannot be captured is a result, named
                        r = {"failed": f"{type(e).__name__}: {e}"[:300]}
                        log(f"{name} n={n} {label}: failed: {r['failed']}")
                        rows.append({"model": name, "batch": n, "variant": label, **r})
                        continue
                    rows.append({"model": name, "batch": n, "variant": label, **r})
                    save({**results, name: rows})
                    log(f"{name} n={n} {label}: host {r['host_ms']:.3f} ms, device {r['device_ms']:.3f} ms")
        for mode, n, comp, x, tc in first_calls(args, name, eager, budget, args.compile_min_left, rows):
            with torch.inference_mode():
                r = time_calls(comp, x)
            rows.append({"model": name, "batch": n, "variant": f"compile:{mode}", "compile_s": tc, **r})
            save({**results, name: rows})
            log(f"{name} n={n} compile:{mode}: host {r['host_ms']:.3f} ms, device {r['device_ms']:.3f} ms "
                f"(compiled in {tc:.0f} s)")
        results[name] = rows
        del eager, variants
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return results


def report(out):
    lines = ["# blockfuse.torch on torchvision networks", ""]
    for f in sorted(f for f in os.listdir(out) if f.startswith("check") and f.endswith(".json")):
        c = json.load(open(os.path.join(out, f)))  # check.json, and check_TAG.json of a check run with --tag
        lines += [f"## Correctness ({f})", "", f"{c['meta']['dtype']}, channels_last, seed {c['meta']['seed']}, "
                  f"batch {', '.join(map(str, c['meta']['batches']))}, {c['meta']['device_name']}, "
                  f"torch {c['meta']['torch']}", "",
                  "| model | replaced / not replaced | modules within tolerance | inputs | logits cosine min (mean) | top-1 agreement | "
                  "eager f16 vs f32: cosine min, top-1 | verdict |", "|---|---|---|---|---|---|---|---|"]
        for m, r in c["models"].items():
            if "skipped" in r:
                lines.append(f"| {m} | skipped: {r['skipped']} |||||||")
                continue
            lines.append(f"| {m} | {r['replaced']} / {r['left']} | {r['blocks_pass']} / {r['blocks_checked']} | "
                         f"{r['inputs']} | {r['cos_min']:.5f} ({r['cos_mean']:.6f}) | {100 * r['top1']:.1f}% | "
                         f"{r['eager_f32_cos_min']:.5f}, {100 * r['eager_f32_top1']:.1f}% | "
                         f"{'pass' if r['pass'] else 'FAIL'} |")
        lines += ["", "Per replaced module (float64 reference; err = max|y - ref| / max|ref|; eager = the f16 "
                  "PyTorch module's own error):", "", "| model | module | n | strategy | err | eager err |",
                  "|---|---|---|---|---|---|"]
        for m, r in c["models"].items():
            for b in r.get("blocks", []):
                lines.append(f"| {m} | {b['path']} ({b['module']}) | {b['n']} | {b['strategy']} | {b['err']:.2e} | "
                             f"{b['eager_err']:.2e} |")
    for f in sorted(os.listdir(out)):
        if f.startswith("latency") and f.endswith(".json"):
            lt = json.load(open(os.path.join(out, f)))
            lines += ["", f"## Latency ({f})", "", "Median ms; host = the call and a synchronize (what a caller "
                      "waits), device = CUDA events around the call.", "",
                      "| model | batch | eager host / device | torch.compile | compile max-autotune | blockfuse | "
                      "blockfuse, blocks only | blockfuse, measured | eager, CUDA graph | blockfuse, measured, CUDA graph "
                      "| compile / blockfuse (host) | compile / best blockfuse (host) |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for m, rows in lt["models"].items():
                by = {}
                for r in rows:
                    by.setdefault(r["batch"], {})[r["variant"]] = r
                fmt = lambda r: "—" if not r else ("skipped" if "skipped" in r else "failed" if "failed" in r else
                                                   f"{r['host_ms']:.3f} / {r['device_ms']:.3f}")
                for n, v in sorted(by.items()):
                    bf, cd = v.get("blockfuse"), v.get("compile:default")
                    ok = lambda r: r and "host_ms" in r
                    best = min((v[k] for k in ("blockfuse", "blockfuse_blocks", "blockfuse_measured") if ok(v.get(k))),
                               key=lambda r: r["host_ms"], default=None)
                    ratio = f"{cd['host_ms'] / bf['host_ms']:.2f}x" if ok(bf) and ok(cd) else "—"
                    rbest = f"{cd['host_ms'] / best['host_ms']:.2f}x ({best['variant']})" if best and ok(cd) else "—"
                    lines.append(f"| {m} | {n} | {fmt(v.get('eager'))} | {fmt(cd)} | "
                                 f"{fmt(v.get('compile:max-autotune'))} | {fmt(bf)} | {fmt(v.get('blockfuse_blocks'))} | "
                                 f"{fmt(v.get('blockfuse_measured'))} | {fmt(v.get('eager+graph'))} | "
                                 f"{fmt(v.get('blockfuse_measured+graph'))} | {ratio} | {rbest} |")
    warm_rows = []
    for f in sorted(os.listdir(out)):
        if f.startswith("warm_") and f.endswith(".json"):
            for m, rows in json.load(open(os.path.join(out, f)))["models"].items():
                warm_rows += [(m, r) for r in rows]
    if warm_rows:
        lines += ["", "## torch.compile cold (warm_*.json)", "", "Seconds of the first call of a fresh compile "
                  "(check --warm, beside the check); the latency tables' compiles then load from Inductor's caches.",
                  "", "| model | mode | batch | compile s |", "|---|---|---|---|"]
        for m, r in warm_rows:
            cs = "skipped" if "skipped" in r else f"{r['compile_s']:.0f}"
            lines.append(f"| {m} | {r['variant'].split(':')[1]} | {r['batch']} | {cs} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(text)


def meta(args):
    import torch
    d = {"dtype": args.dtype, "seed": args.seed, "size": args.size, "batches": args.batches, "torch": torch.__version__,
         "python": platform.python_version(), "device": args.device}
    d["device_name"] = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor()
    import blockfuse
    d["blockfuse"] = blockfuse.info()
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phase", choices=["load", "check", "latency", "warm", "report"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="1,8,128")
    ap.add_argument("--dtype", default="f16", choices=list(TOL))
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--compile", default="default", help="torch.compile modes: default,max-autotune (or none)")
    ap.add_argument("--autotune-batches", default="8")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--budget", type=float, default=280, help="seconds; later work is skipped and says so")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--tag", default="", help="suffix of the result file (check_TAG.json, latency_TAG.json, warm_TAG.json)")
    ap.add_argument("--variants", default="blockfuse,blockfuse_blocks,blockfuse_measured",
                    help="the optimized models timed beside eager")
    ap.add_argument("--compile-min-left", type=float, default=40,
                    help="latency: seconds of the budget a torch.compile needs to be started (x1.5 for max-autotune); "
                         "lower where check --warm filled Inductor's caches")
    ap.add_argument("--jobs", type=int, default=8, help="load: processes at once")
    ap.add_argument("--choose", default="records", choices=["records", "measure"],
                    help="check: optimize() once on a batch-8 example with the records' strategies (records), or per "
                         "batch size with the fastest strategy of each module timed on that batch (measure); the "
                         "choices land in check.json")
    ap.add_argument("--graphs", action="store_true", help="latency: also every variant captured in a CUDA graph "
                    "(variant+graph: the input copied in, the graph replayed)")
    ap.add_argument("--choices", default="", help="latency: a check.json whose measured choices the "
                    "blockfuse_measured variant takes instead of timing every strategy again")
    ap.add_argument("--warm", default="", help="check: torch.compile modes to warm beside it (default,max-autotune)")
    ap.add_argument("--warm-deadline", type=float, default=240,
                    help="check --warm: seconds after the check's start at which the warm processes are stopped")
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.batches = [int(b) for b in args.batches.split(",")]
    args.autotune_batches = [int(b) for b in args.autotune_batches.split(",") if b]
    args.compile = [c for c in args.compile.split(",") if c and c != "none"]
    args.variants = [v for v in args.variants.split(",") if v]
    args.warm = [c for c in args.warm.split(",") if c and c != "none"]
    os.makedirs(args.out, exist_ok=True)
    if args.device == "cpu":
        os.environ["BLOCKFUSE_TORCH_CPU"] = "1"  # blockfuse's CPU kernels: a smoke run without a GPU
    budget = Budget(args.budget)
    if args.phase == "report":
        report(args.out)
        return 0
    name = f"{'latency' if args.phase == 'latency' else args.phase}{'_' + args.tag if args.tag else ''}.json"
    info = meta(args)

    def save(res):  # after every measurement: a step stopped by its time limit keeps what it measured
        with open(os.path.join(args.out, name), "w") as f:
            json.dump({"meta": info, "models": res}, f, indent=1, default=str)

    res = {"check": check, "latency": latency, "warm": warm, "load": load}[args.phase](args, budget, save)
    save(res)
    if args.phase == "load":
        return 1 if res["failed"] else 0
    if args.phase == "warm":
        return 0
    report(args.out)
    if args.phase == "check":
        return 0 if all(r.get("pass") for r in res.values()) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
