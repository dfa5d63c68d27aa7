#!/usr/bin/env python3
"""ONNX Runtime (CPU) baseline for the blockfuse suites: the CPU anchor of the comparisons.

Usage:
  python3 bench/onnxruntime_baseline.py --suite workloads/demo.txt --out ORT.json [--out-csv ORT.csv]
      [--only NAME ...] [--threads N] [--min-seconds S] [--min-samples N] [--seed N]

Each `conv2d:`, block (`mbconv:`, `fused_mbconv:`, `ffn:`, `convfirst:`, `convnext:`) and `stem:`
workload of the suite becomes one ONNX graph built with the onnx helper API: Conv (+ bias) ->
activation per layer, LayerNormalization over channels for ConvNeXt, GlobalAveragePool -> 1x1 Conv ->
Sigmoid -> Mul for Squeeze-Excitation, Add for the residual, MaxPool for the stem. The layer wiring is
bench/pytorch_baseline.py's make_block_forward (the same plan the PyTorch baseline runs), fed here with
graph-building functions instead of torch ones. blockfuse's tensors are NHWC; ONNX Runtime's Conv
takes NCHW, so the input is transposed once, outside the timed region, and the output compared after
transposing back.

Every graph's output is checked against a float64 NumPy reference of the same plan on random data
before it is timed (relative L2 error below 1e-4 at f32; a mismatch is recorded and the row gets no
time). Timing: one InferenceSession per workload (all graph optimizations, intra-op threads = the
cores, or --threads), inputs and output bound once (IOBinding, no allocation in the loop), warm-up
calls, then host wall time of each call until --min-samples calls and --min-seconds have passed;
the median, min and max are recorded, plus a second median over a repeat run (the spread shows the
noise of a shared machine).

Output: the baseline JSON bench/merge_results.py reads (--baseline), rows keyed by (name, key):
eager_ms is ONNX Runtime's median, eager_ms_repeat the repeat's, eager_host_ms the same host time
(the C++ harness's CPU times are host wall times too), compile_ms null; each row also carries
"provider": "onnxruntime", min_ms, max_ms, samples, rel_l2, check_ok. --out-csv writes the rows as CSV.
Only f32 runs (the CPU targets are f32); other dtypes are skipped with a note.
"""
import argparse
import csv
import datetime
import math
import os
import platform
import statistics
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_baseline as pb  # noqa: E402  (its key parsers and block plans need no torch)

REL_L2_TOL = 1e-4
OPSET = 20  # Gelu with approximate="tanh" (the C++ side's formula), LayerNormalization
CSV_COLUMNS = ["name", "key", "dtype", "provider", "eager_ms", "eager_ms_repeat", "min_ms", "max_ms", "samples",
               "rel_l2", "check_ok", "error"]


# ---------------------------------------------------------------------------------------------
# Graph building: symbolic tensors whose + and * add ONNX nodes, so make_block_forward wires them
# ---------------------------------------------------------------------------------------------

class GraphBuilder:
    def __init__(self):
        self.nodes, self.initializers, self._n = [], [], 0

    def fresh(self, stem):
        self._n += 1
        return f"{stem}_{self._n}"

    def node(self, op, inputs, **attrs):
        from onnx import helper

        out = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, [t.name if isinstance(t, Sym) else t for t in inputs], [out], **attrs))
        return Sym(self, out)

    def const(self, array, stem="w"):
        from onnx import numpy_helper

        name = self.fresh(stem)
        self.initializers.append(numpy_helper.from_array(array, name))
        return Sym(self, name)


class Sym:
    """A tensor of the graph being built."""

    def __init__(self, g, name):
        self.g, self.name = g, name

    def __add__(self, other):
        return self.g.node("Add", [self, other])

    def __mul__(self, other):
        return self.g.node("Mul", [self, other])


def onnx_activations(g):
    """{name: fn(Sym) -> Sym}, the C++ side's formulas (generators/activation.h)."""
    import numpy as np

    def clip(lo, hi):
        return lambda y: g.node("Clip", [y, g.const(np.array(lo, np.float32), "lo"), g.const(np.array(hi, np.float32), "hi")])

    return {
        "none": None,
        "relu": lambda y: g.node("Relu", [y]),
        "relu6": clip(0.0, 6.0),
        "silu": lambda y: y * g.node("Sigmoid", [y]),
        "gelu": lambda y: g.node("Gelu", [y], approximate="tanh"),
        "sigmoid": lambda y: g.node("Sigmoid", [y]),
    }


def onnx_conv(g):
    def conv2d(x, weight, bias, stride, padding, dilation, groups, pads=None):
        p = pads if pads is not None else (padding[0], padding[1], padding[0], padding[1])  # t, l, b, r
        inputs = [x, weight] + ([bias] if bias is not None else [])
        return g.node("Conv", inputs, strides=list(stride), pads=list(p), dilations=list(dilation), group=groups)

    return conv2d


def onnx_channel_norm(g, channels):
    """LayerNorm over C of an NCHW tensor, without affine: NHWC, LayerNormalization on the last axis, back."""
    import numpy as np

    def norm(y):
        t = g.node("Transpose", [y], perm=[0, 2, 3, 1])
        n = g.node("LayerNormalization", [t, g.const(np.ones(channels, np.float32), "ln_scale")], axis=-1,
                   epsilon=pb.LAYER_NORM_EPS)
        return g.node("Transpose", [n], perm=[0, 3, 1, 2])

    return norm


# ---------------------------------------------------------------------------------------------
# The float64 reference (NumPy), wired by the same plans
# ---------------------------------------------------------------------------------------------

def np_conv2d(x, weight, bias, stride, padding, dilation, groups, pads=None):
    """NCHW float64 convolution: x [N, C, H, W], weight [K, C/groups, R, S]."""
    import numpy as np

    t, l, b, r = pads if pads is not None else (padding[0], padding[1], padding[0], padding[1])
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)))
    n, c, h, w = x.shape
    k, cg, kr, ks = weight.shape
    oh = (h - dilation[0] * (kr - 1) - 1) // stride[0] + 1
    ow = (w - dilation[1] * (ks - 1) - 1) // stride[1] + 1
    kg = k // groups
    out = np.zeros((n, k, oh, ow))
    for gi in range(groups):
        xs = x[:, gi * cg:(gi + 1) * cg]
        ws = weight[gi * kg:(gi + 1) * kg]
        for i in range(kr):
            for j in range(ks):
                patch = xs[:, :, i * dilation[0]:i * dilation[0] + stride[0] * (oh - 1) + 1:stride[0],
                           j * dilation[1]:j * dilation[1] + stride[1] * (ow - 1) + 1:stride[1]]
                out[:, gi * kg:(gi + 1) * kg] += np.einsum("nchw,kc->nkhw", patch, ws[:, :, i, j])
    if bias is not None:
        out += bias[None, :, None, None]
    return out


def np_activations():
    import numpy as np

    sig = lambda y: 1 / (1 + np.exp(-y))  # noqa: E731
    return {
        "none": None,
        "relu": lambda y: np.maximum(y, 0),
        "relu6": lambda y: np.clip(y, 0, 6),
        "silu": lambda y: y * sig(y),
        "gelu": lambda y: 0.5 * y * (1 + np.tanh(math.sqrt(2 / math.pi) * (y + 0.044715 * y ** 3))),
        "sigmoid": sig,
    }


def np_channel_norm(y):
    mean = y.mean(axis=1, keepdims=True)
    var = ((y - mean) ** 2).mean(axis=1, keepdims=True)
    return (y - mean) / (var + pb.LAYER_NORM_EPS) ** 0.5


def np_max_pool_3x3_s2_p1(y):
    import numpy as np

    n, c, h, w = y.shape
    p = np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    oh, ow = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    out = np.full((n, c, oh, ow), -np.inf)
    for i in range(3):
        for j in range(3):
            out = np.maximum(out, p[:, :, i:i + 2 * (oh - 1) + 1:2, j:j + 2 * (ow - 1) + 1:2])
    return out


# ---------------------------------------------------------------------------------------------
# One workload: (build(g, x) -> output Sym, reference(x, params) -> array, params, input shape)
# ---------------------------------------------------------------------------------------------

def conv_plan(wl):
    a = pb.conv_call_args(wl)
    pads = None
    if a["pre_pad"] is not None:  # (left, right, top, bottom) -> ONNX's (top, left, bottom, right)
        left, right, top, bottom = a["pre_pad"]
        pads = (top, left, bottom, right)
    return a, pads


def make_workload(wl, rng):
    """(input NCHW f32, params [arrays], forward(conv2d, acts, norm, mean, pool, x, params)) for any
    parsed workload; forward runs on Syms (graph) or float64 arrays (reference) alike."""
    import numpy as np

    def weight(shape):  # 1/sqrt(fan_in): outputs O(1), as the other baselines and runtime/block.cpp
        return (rng.standard_normal(shape) / math.sqrt(math.prod(shape[1:]))).astype(np.float32)

    def bias(shape):
        return (rng.random(shape) - 0.5).astype(np.float32)

    if isinstance(wl, pb.BlockWorkload):
        plan = pb.block_call_plan(wl)
        params = []
        for ws, bs in pb.plan_param_shapes(plan):
            params += [weight(ws), bias(bs)]
        x = rng.standard_normal((wl.n, wl.c, wl.h, wl.w)).astype(np.float32)

        def forward(conv2d, acts, norm, mean, pool, x, params):
            return pb.make_block_forward(plan, conv2d, acts, norm, mean)(x, *params)

        return x, params, forward, (wl.n, wl.c, wl.out_h(), wl.out_w())

    conv = wl.conv() if isinstance(wl, pb.StemWorkload) else wl
    a, pads = conv_plan(conv)
    params = [weight((conv.k, conv.c // conv.groups, conv.r, conv.s))]
    if conv.bias:
        params.append(bias((conv.k,)))
    x = rng.standard_normal((conv.n, conv.c, conv.h, conv.w)).astype(np.float32)
    stem = isinstance(wl, pb.StemWorkload)

    def forward(conv2d, acts, norm, mean, pool, x, params):
        y = conv2d(x, params[0], params[1] if len(params) > 1 else None, a["stride"], a["padding"], a["dilation"],
                   a["groups"], pads=pads)
        act = acts[conv.act]
        y = act(y) if act is not None else y
        return pool(y) if stem else y

    shape = (wl.n, wl.k, wl.out_h(), wl.out_w())
    return x, params, forward, shape


def build_model(wl, x, params, forward, out_shape):
    import onnx
    from onnx import TensorProto, helper

    g = GraphBuilder()
    channels = wl.c if isinstance(wl, pb.BlockWorkload) else 0
    consts = [g.const(p) for p in params]
    out = forward(onnx_conv(g), onnx_activations(g), onnx_channel_norm(g, channels),
                  lambda y: g.node("GlobalAveragePool", [y]),
                  lambda y: g.node("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                  Sym(g, "x"), consts)
    g.nodes.append(helper.make_node("Identity", [out.name], ["y"]))
    graph = helper.make_graph(g.nodes, "blockfuse_workload",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))], g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    return model


def reference(wl, x, params, forward):
    import numpy as np

    return forward(np_conv2d, np_activations(), np_channel_norm, lambda y: y.mean(axis=(2, 3), keepdims=True),
                   np_max_pool_3x3_s2_p1, x.astype(np.float64), [p.astype(np.float64) for p in params])


def rel_l2(got, ref):
    import numpy as np

    num, den = float(np.linalg.norm(got.astype(np.float64) - ref)), float(np.linalg.norm(ref))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


def time_calls(fn, min_samples, min_seconds):
    """Host wall times (ms) of calls of fn: at least min_samples calls and min_seconds in all."""
    times, start = [], time.perf_counter()
    while len(times) < min_samples or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def ort_options(threads):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return so


def run_workload(name, key, args):
    import numpy as np
    import onnxruntime as ort

    wl = pb.parse_key(key)
    rec = {"name": name, "key": pb.to_key(wl), "suite_key": key, "dtype": wl.dtype, "provider": "onnxruntime"}
    if isinstance(wl, (pb.BlockWorkload, pb.StemWorkload)):
        rec["family"] = wl.family if isinstance(wl, pb.BlockWorkload) else "stem"
        rec["flops"] = pb.workload_flops(wl)
    rec.update({"eager_ms": None, "eager_ms_repeat": None, "compile_ms": None, "eager_host_ms": None,
                "min_ms": None, "max_ms": None, "samples": 0, "rel_l2": None, "check_ok": None, "error": None})
    rng = np.random.default_rng(args.seed)
    x_nchw, params, forward, expected = make_workload(wl, rng)
    # blockfuse's layout is NHWC: the transpose to ONNX's NCHW happens here, once, outside the timing
    x_nhwc = np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))
    x = np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))
    model = build_model(wl, x, params, forward, expected)
    sess = ort.InferenceSession(model.SerializeToString(), ort_options(args.threads),
                                providers=["CPUExecutionProvider"])
    y = np.full(expected, np.nan, np.float32)  # poisoned: an output the graph does not write fails the check
    binding = sess.io_binding()
    binding.bind_cpu_input("x", x)
    binding.bind_output("y", "cpu", element_type=np.float32, shape=expected, buffer_ptr=y.ctypes.data)
    sess.run_with_iobinding(binding)
    ref = reference(wl, x, params, forward)
    if ref.shape != expected:
        raise RuntimeError(f"reference shape {ref.shape} != expected {expected}")
    err = rel_l2(y, ref)
    rec["rel_l2"] = err if math.isfinite(err) else str(err)
    rec["check_ok"] = bool(err < REL_L2_TOL)
    if not rec["check_ok"]:
        rec["error"] = f"check failed: relative L2 error {err:.3g} against the float64 reference (tolerance {REL_L2_TOL})"
        return rec
    call = lambda: sess.run_with_iobinding(binding)  # noqa: E731
    for _ in range(3):
        call()
    times = time_calls(call, args.min_samples, args.min_seconds)
    rec["eager_ms"] = rec["eager_host_ms"] = statistics.median(times)
    rec["min_ms"], rec["max_ms"], rec["samples"] = min(times), max(times), len(times)
    rec["eager_ms_repeat"] = statistics.median(time_calls(call, args.min_samples, args.min_seconds))
    return rec


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def context(args):
    import onnx
    import onnxruntime as ort

    return {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": list(sys.argv),
        "provider": "onnxruntime",
        "onnxruntime_version": ort.__version__,
        "onnx_version": onnx.__version__,
        "opset": OPSET,
        "python": platform.python_version(),
        "host": platform.node(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "device": "cpu",
        "timing": {"tool": "host wall time (time.perf_counter) of run_with_iobinding", "threads": args.threads,
                   "min_samples": args.min_samples, "min_seconds": args.min_seconds, "return_mode": "median",
                   "graph_optimization_level": "ORT_ENABLE_ALL"},
        "rel_l2_tol": REL_L2_TOL,
        "seed": args.seed,
        "suite": args.suite,
    }


def write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow(["" if r.get(c) is None else r.get(c) for c in CSV_COLUMNS])


def build_arg_parser():
    p = argparse.ArgumentParser(description="Time ONNX Runtime (CPU) on the conv2d, block and stem workloads of a suite.")
    p.add_argument("--suite", required=True, help="suite file: lines '<name> <key>', '#' comments")
    p.add_argument("--out", required=True, help="output JSON path (bench/merge_results.py --baseline)")
    p.add_argument("--out-csv", help="also write the rows as CSV here")
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME", default=None,
                   help="run only these workload names (may be repeated)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="intra-op threads (default: the cores)")
    p.add_argument("--min-samples", type=int, default=10, help="timed calls at least (default 10)")
    p.add_argument("--min-seconds", type=float, default=0.5, help="seconds of timed calls at least (default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="random seed for inputs and weights (default 0)")
    return p


def main(argv=None):
    args = build_arg_parser().parse_args(argv)
    if args.threads < 1 or args.min_samples < 1 or args.min_seconds < 0:
        print("error: --threads and --min-samples must be at least 1, --min-seconds not negative", file=sys.stderr)
        return 2
    try:
        entries = pb.load_suite(args.suite)
    except pb.WorkloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    entries, unknown = pb.select_entries(entries, args.only)
    if unknown:
        print(f"error: --only names not in {args.suite}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError as e:
        print(f"error: {e.name} is not installed: `./run install --anchors` installs onnxruntime and onnx",
              file=sys.stderr)
        return 2

    doc = {"context": context(args), "results": [], "skipped": []}
    n_errors = 0
    for i, (name, key) in enumerate(entries, 1):
        wl = pb._safe_parse(key)
        note = None
        if wl is None:
            note = f"key '{key}' is not a conv2d, block or stem key this baseline reads"
        elif wl.dtype != "f32":
            note = f"dtype {wl.dtype}: this baseline runs f32 only (ONNX Runtime's CPU kernels)"
        if note:
            print(f"[{i}/{len(entries)}] skip {name}: {note}")
            doc["skipped"].append({"name": name, "key": key, "reason": note})
            continue
        print(f"[{i}/{len(entries)}] {name} {key}", flush=True)
        try:
            rec = run_workload(name, key, args)
        except Exception as e:  # recorded; the next workload still runs
            rec = {"name": name, "key": key, "suite_key": key, "dtype": wl.dtype, "provider": "onnxruntime",
                   "eager_ms": None, "eager_ms_repeat": None, "compile_ms": None, "check_ok": None,
                   "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        if rec.get("error"):
            n_errors += 1
            print(f"    error: {rec['error']}", file=sys.stderr)
        else:
            print(f"    {rec['eager_ms']:.4f} ms (repeat {rec['eager_ms_repeat']:.4f}, {rec['samples']} samples), "
                  f"rel_l2 {rec['rel_l2']:.2e}")
        doc["results"].append(rec)
        pb._write_json(args.out, doc)  # after every workload: partial results survive a crash
    pb._write_json(args.out, doc)
    if args.out_csv:
        write_csv(args.out_csv, doc["results"])
    print(f"wrote {args.out} ({len(doc['results'])} workloads, {len(doc['skipped'])} skipped, {n_errors} errors)")
    return 1 if n_errors else 0


if __name__ == "__main__":
    sys.exit(main())
