#!/usr/bin/env python3
"""PyTorch eager and torch.compile on the pooling, mean-pooling, conv1d and conv3d suites.

Usage (GPU host):
  python3 bench/torch_convpool.py --suite workloads/pool.txt --out OUT.json [--only NAME ...] [--no-compile]

Keys are read as the C++ side writes them (`./run check` validates them; runtime/pool.h, runtime/conv_nd.h);
this maps their fields onto the torch call and nothing more:
  avgpool{1,2,3}d / maxpool{1,2,3}d  F.avg_pool*d / F.max_pool*d (kernel, stride, padding, dilation,
                                     ceil_mode, count_include_pad, divisor_override, return_indices)
  adaptive_{avg,max}pool2d           F.adaptive_*_pool2d (output size, return_indices); no `n`: unbatched
  mean_pooling                       FLA's mean pooling: uniform, x.view(B, S/chunk, chunk, H, D).mean(2)
                                     ("torch-view-mean"); ragged, torch.segment_reduce over the chunk
                                     lengths ("torch-segment-reduce"); the result in out_dtype
  conv1d                             F.conv1d on NCL contiguous input (PyTorch's only conv1d layout)
  conv3d                             F.conv3d, input and weight channels_last_3d (NDHWC, as ours)
Pooling inputs are NCL / NCHW / NCDHW contiguous, as the C++ side's. Each workload: the eager call and
torch.compile (fresh, static shapes) of the same function, both timed with the baseline's method
(bench/pytorch_baseline.py: triton's do_bench, median, L2 flushed between calls), the compiled result
checked against eager (max pooling and indices exactly, the rest within relative L2 1e-2). Also
measured once: an empty kernel (x.add_(1) on one element) the same way, the latency floor of a call.
"""
import argparse
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_baseline as pb  # noqa: E402

POOL_FAMILIES = ("avgpool1d", "avgpool2d", "avgpool3d", "maxpool1d", "maxpool2d", "maxpool3d",
                 "adaptive_avgpool2d", "adaptive_maxpool2d")
FAMILIES = POOL_FAMILIES + ("mean_pooling", "conv1d", "conv3d")
AXES = {1: ("l",), 2: ("h", "w"), 3: ("d", "h", "w")}


def fields_of(key):
    family, fields = pb.split_key(key)
    return family, dict(fields)


def per_axis(f, name, axes, default):
    """`name` or its per-axis forms name_d/_h/_w (the C++ key reader's rule), as a list."""
    if name in f:
        return [int(f[name])] * len(axes)
    return [int(f.get(f"{name}_{a}", default)) for a in axes]


def op_name(key):
    """The reference table's op name: MaxPool2dIndicesFwd, AdaptiveAvgPool2dFwd, MeanPoolingFwd, ..."""
    family, f = fields_of(key)
    if family == "mean_pooling":
        return "MeanPoolingFwd"
    if family in ("conv1d", "conv3d"):
        return family.capitalize() + "Fwd"
    adaptive = family.startswith("adaptive_")
    base = family[len("adaptive_"):] if adaptive else family
    kind = "AvgPool" if base.startswith("avg") else "MaxPool"
    rank = base[-2]
    return ("Adaptive" if adaptive else "") + kind + rank + "d" + ("Indices" if f.get("return_indices") == "1" else "") + "Fwd"


def dtype_label(key):
    family, f = fields_of(key)
    d = f.get("dtype", "f32")
    return f"{d}/{f.get('out_dtype', d)}" if family == "mean_pooling" else d


def chunk_lengths(f):
    """Ragged mean pooling: each chunk's token count, sequences in order (FLA's prepare_chunk_indices)."""
    chunk, lens = int(f["chunk"]), []
    for term in f["seq_lens"].split("+"):
        length, _, count = term.partition("x")
        lens += [int(length)] * int(count or 1)
    out = []
    for length in lens:
        out += [chunk] * (length // chunk) + ([length % chunk] if length % chunk else [])
    return out


def make_call(key, seed):
    """(fn, args, exact): the timed function, its inputs (CUDA tensors) and whether results compare exactly."""
    import torch
    import torch.nn.functional as F

    family, f = fields_of(key)
    g = torch.Generator(device="cuda").manual_seed(seed)
    dt = pb._torch_dtype(torch, f.get("dtype", "f32"))

    def rand(*shape, dtype=dt):
        return (torch.rand(*shape, device="cuda", generator=g, dtype=torch.float32) * 2 - 1).to(dtype)

    if family in POOL_FAMILIES:
        adaptive = family.startswith("adaptive_")
        rank = int(family[-2])
        axes = AXES[rank]
        shape = ([int(f["n"])] if "n" in f else []) + [int(f["c"])] + [int(f[a]) for a in axes]
        x = rand(*shape)
        if adaptive:
            out = per_axis(f, "out", axes, 1)
            if family.startswith("adaptive_avg"):
                return (lambda x: F.adaptive_avg_pool2d(x, out)), (x,), False
            ind = f.get("return_indices") == "1"
            return (lambda x: F.adaptive_max_pool2d(x, out, return_indices=ind)), (x,), True
        k = per_axis(f, "kernel", axes, 1)
        s = per_axis(f, "stride", axes, 0)
        s = [s_ or k_ for s_, k_ in zip(s, k)]
        p = per_axis(f, "pad", axes, 0)
        ceil = f.get("ceil") == "1"
        if family.startswith("avg"):
            fn = getattr(F, f"avg_pool{rank}d")
            kw = dict(ceil_mode=ceil, count_include_pad=f.get("count_include_pad", "1") == "1")
            if "divisor" in f:
                kw["divisor_override"] = int(f["divisor"])
            return (lambda x: fn(x, k, s, p, **kw)), (x,), False
        fn = getattr(F, f"max_pool{rank}d")
        dil = per_axis(f, "dil", axes, 1)
        ind = f.get("return_indices") == "1"
        return (lambda x: fn(x, k, s, p, dil, ceil_mode=ceil, return_indices=ind)), (x,), True
    if family == "mean_pooling":
        b, s, h, d, chunk = (int(f[n]) for n in ("b", "s", "h", "d", "chunk"))
        x = rand(b, s, h, d)
        od = pb._torch_dtype(torch, f.get("out_dtype", f.get("dtype", "f32")))
        if "seq_lens" not in f:
            if s % chunk:  # lengths along axis 1: one row of chunk lengths per batch row
                lens = torch.tensor([chunk] * (s // chunk) + [s % chunk], device="cuda").expand(b, -1).contiguous()
                return (lambda x: torch.segment_reduce(x, "mean", lengths=lens, axis=1).to(od)), (x,), False
            return (lambda x: x.view(b, s // chunk, chunk, h, d).mean(2).to(od)), (x,), False
        lens = torch.tensor(chunk_lengths(f), device="cuda").expand(b, -1).contiguous()
        return (lambda x: torch.segment_reduce(x, "mean", lengths=lens, axis=1).to(od)), (x,), False
    if family == "conv1d":
        n, c, length, k, kw = (int(f[a]) for a in ("n", "c", "l", "k", "kernel"))
        groups = int(f.get("groups", 1))
        x = rand(n, c, length)
        w = rand(k, c // groups, kw) / math.sqrt(c // groups * kw)
        b = rand(k) if f.get("bias") == "1" else None
        st, pad, dil = int(f.get("stride", 1)), int(f.get("pad", 0)), int(f.get("dil", 1))
        return (lambda x, w, b: F.conv1d(x, w, b, st, pad, dil, groups)), (x, w, b), False
    if family == "conv3d":
        axes = AXES[3]
        n, c, k = int(f["n"]), int(f["c"]), int(f["k"])
        groups = int(f.get("groups", 1))
        kk = per_axis(f, "kernel", axes, 1)
        cl = torch.channels_last_3d
        x = rand(n, c, *[int(f[a]) for a in axes]).contiguous(memory_format=cl)
        w = (rand(k, c // groups, *kk) / math.sqrt(c // groups * math.prod(kk))).contiguous(memory_format=cl)
        b = rand(k) if f.get("bias") == "1" else None
        st, pad, dil = per_axis(f, "stride", axes, 1), per_axis(f, "pad", axes, 0), per_axis(f, "dil", axes, 1)
        return (lambda x, w, b: F.conv3d(x, w, b, st, pad, dil, groups)), (x, w, b), False
    raise pb.WorkloadError(f"family '{family}' is not supported by this baseline")


def same(got, ref, exact):
    """Compiled against eager: (ok, detail)."""
    import torch

    if isinstance(ref, tuple):
        ok_v, dv = same(got[0], ref[0], exact)
        ok_i = torch.equal(got[1], ref[1])
        return ok_v and ok_i, f"{dv}; indices {'equal' if ok_i else 'differ'}"
    if exact:
        ok = torch.equal(torch.nan_to_num(got.float(), nan=7.0), torch.nan_to_num(ref.float(), nan=7.0))
        return ok, "values equal" if ok else "values differ"
    r = pb._rel_l2(got, ref)
    return r <= pb.REL_L2_TOL, f"rel L2 {r:.2e}"


def run_one(name, key, use_compile, seed):
    import torch

    fn, args, exact = make_call(key, seed)
    rec = {"name": name, "key": key, "op": op_name(key), "dtype": dtype_label(key)}
    with torch.no_grad():
        ref = fn(*args)
        torch.cuda.synchronize()
        rec["eager_ms"] = pb._bench(lambda: fn(*args))
        rec["compile_ms"] = rec["compile_error"] = None
        if use_compile:
            try:
                torch._dynamo.reset()
                compiled = torch.compile(fn, dynamic=False)
                t0 = time.perf_counter()
                got = compiled(*args)
                torch.cuda.synchronize()
                rec["compile_seconds"] = time.perf_counter() - t0
                ok, detail = same(got, ref, exact)
                rec["compile_check"] = detail
                if not ok:
                    raise RuntimeError(f"torch.compile disagrees with eager: {detail}")
                rec["compile_ms"] = pb._bench(lambda: compiled(*args))
            except Exception as e:  # recorded; the eager number stands
                rec["compile_error"] = f"{type(e).__name__}: {e}"
    return rec


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--only", nargs="+", default=None, metavar="NAME")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warmup-ms", type=float, default=pb.BENCH_WARMUP_MS)
    p.add_argument("--rep-ms", type=float, default=pb.BENCH_REP_MS)
    p.add_argument("--l2-flush", choices=("write", "read"), default="write",
                   help="write: do_bench's memset flush (default); read: a read-only eviction, a clean L2 "
                        "(bench/pytorch_baseline.py, the harness's --l2-flush read)")
    args = p.parse_args(argv)
    try:
        entries = pb.load_suite(args.suite)
        for _, key in entries:
            if pb.key_family(key) not in FAMILIES:
                raise pb.WorkloadError(f"{args.suite}: '{key}' is no pooling, conv1d or conv3d key")
    except pb.WorkloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.only:
        entries = [(n, k) for n, k in entries if n in set(args.only)]
    pb.BENCH_WARMUP_MS, pb.BENCH_REP_MS = args.warmup_ms, args.rep_ms
    pb.L2_FLUSH = args.l2_flush
    import torch

    if not torch.cuda.is_available():
        print("error: CUDA is not available", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    one = torch.zeros(1, device="cuda")
    ctx = {"suite": args.suite, "torch_version": torch.__version__, "cudnn_version": torch.backends.cudnn.version(),
           "gpu": torch.cuda.get_device_name(), "timing": {"tool": "triton.testing.do_bench" if args.l2_flush == "write" else
                                                          "CUDA events after a read-only L2 eviction",
                                                          "warmup_ms": args.warmup_ms,
                                                          "rep_ms": args.rep_ms, "return_mode": "median", "l2_flush": True,
                                                          "l2_flush_method": args.l2_flush},
           "compile": {"enabled": not args.no_compile, "mode": "default", "dynamic": False},
           "empty_kernel_ms": pb._bench(lambda: one.add_(1))}
    doc = {"context": ctx, "results": []}
    errors = 0
    for i, (name, key) in enumerate(entries, 1):
        print(f"[{i}/{len(entries)}] {name} {key}", flush=True)
        try:
            rec = run_one(name, key, not args.no_compile, args.seed)
        except Exception as e:
            errors += 1
            rec = {"name": name, "key": key, "op": op_name(key), "dtype": dtype_label(key), "eager_ms": None,
                   "compile_ms": None, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        print(f"    eager {rec.get('eager_ms')} compile {rec.get('compile_ms')} {rec.get('compile_error') or ''}",
              flush=True)
        doc["results"].append(rec)
        pb._write_json(args.out, doc)
        torch.cuda.empty_cache()
    pb._write_json(args.out, doc)
    print(f"wrote {args.out}: {len(doc['results'])} workloads, {errors} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
