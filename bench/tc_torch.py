#!/usr/bin/env python3
"""PyTorch's matmul on the tensor-core GEMM workloads, timed as bench/pytorch_baseline.py times (triton's
do_bench, median, the same L2 flush), for the side-by-side with blockfuse's gemm kernels.

    python3 bench/tc_torch.py --workload gemm:m=4096,n=4096,k=4096,dtype=f16 [--workload ...] --out F.json

A `gemm:` key (runtime/gemm.h) is C = act(A W^T + bias) with A [M, K] and W [N, K] (nn.Linear's weight), so the
call is F.linear(A, W, bias) and the activation. Each key is timed twice: with PyTorch's defaults, and with
reduced-precision reductions in f16/bf16 GEMMs turned off (torch.backends.cuda.matmul.allow_*_reduced_precision_
reduction = False), the f32 accumulation blockfuse's kernels do. Exit 2 on a bad key (one `error:` line).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_baseline as pb  # noqa: E402  (the timing: do_bench with the L2 flush, warm-up and budget)

# The activations as blockfuse defines them (generators/activation.h: GELU is the tanh form).
ACT = {"none": lambda F, t: t, "relu": lambda F, t: F.relu(t), "relu6": lambda F, t: F.relu6(t),
       "silu": lambda F, t: F.silu(t), "gelu": lambda F, t: F.gelu(t, approximate="tanh"),
       "sigmoid": lambda F, t: F.sigmoid(t)}


def parse(key):
    """gemm:m=..,n=..,k=..[,bias=0|1][,act=..][,dtype=f16|bf16] -> dict (the C++ parser's fields and checks)."""
    if not key.startswith("gemm:"):
        raise pb.WorkloadError(f"invalid workload '{key}': family is not 'gemm'")
    w = {"bias": 0, "act": "none", "dtype": "f16"}
    for item in key[5:].split(","):
        if "=" not in item:
            raise pb.WorkloadError(f"invalid workload '{key}': field '{item}' has no '='")
        name, value = item.split("=", 1)
        if name in ("m", "n", "k", "bias"):
            w[name] = pb._parse_int(key, name, value)
        elif name == "act" and value in ACT:
            w[name] = value
        elif name == "dtype" and value in ("f16", "bf16"):
            w[name] = value
        else:
            raise pb.WorkloadError(f"invalid workload '{key}': field '{name}' = '{value}' is not accepted")
    for name in ("m", "n", "k"):
        if w.get(name, 0) <= 0:
            raise pb.WorkloadError(f"invalid workload '{key}': field '{name}' missing or not positive")
    return w


def run(w):
    import torch
    import torch.nn.functional as F

    dt = torch.float16 if w["dtype"] == "f16" else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(w["m"], w["k"], device="cuda", generator=g, dtype=torch.float32).mul_(2).sub_(1).to(dt)
    b = torch.rand(w["n"], w["k"], device="cuda", generator=g, dtype=torch.float32).mul_(2).sub_(1).to(dt)
    bias = torch.rand(w["n"], device="cuda", generator=g).to(dt) if w["bias"] else None
    act = ACT[w["act"]]
    fn = lambda: act(F, F.linear(a, b, bias))  # noqa: E731
    flops = 2.0 * w["m"] * w["n"] * w["k"]
    out = {}
    matmul = torch.backends.cuda.matmul
    for label, reduced in (("default", None), ("f32_reductions", False)):
        saved = (matmul.allow_fp16_reduced_precision_reduction, matmul.allow_bf16_reduced_precision_reduction)
        if reduced is not None:
            matmul.allow_fp16_reduced_precision_reduction = reduced
            matmul.allow_bf16_reduced_precision_reduction = reduced
        try:
            fn()
            torch.cuda.synchronize()
            ms = pb._bench(fn)
        finally:
            matmul.allow_fp16_reduced_precision_reduction, matmul.allow_bf16_reduced_precision_reduction = saved
        out[label] = {"ms": ms, "tflops": flops / (ms * 1e-3) / 1e12,
                      "allow_reduced_precision_reduction": saved[0 if w["dtype"] == "f16" else 1]
                      if reduced is None else reduced}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workload", action="append", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    try:
        work = [(k, parse(k)) for k in args.workload]
    except pb.WorkloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    import torch

    rows = []
    for key, w in work:
        r = {"key": key, **run(w)}
        rows.append(r)
        print(f"{key}: torch {r['default']['ms']:.4f} ms = {r['default']['tflops']:.1f} TFLOP/s (defaults), "
              f"{r['f32_reductions']['ms']:.4f} ms = {r['f32_reductions']['tflops']:.1f} TFLOP/s (f32 reductions)",
              flush=True)
    ctx = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
           "timing": "triton.testing.do_bench (median), the L2 flush of bench/pytorch_baseline.py"}
    with open(args.out, "w") as f:
        json.dump({"context": ctx, "results": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
