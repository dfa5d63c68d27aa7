"""blockfuse for PyTorch models.

    import blockfuse.torch as bft
    model = torchvision.models.mobilenet_v2().eval().half().cuda().to(memory_format=torch.channels_last)
    x = torch.randn(8, 3, 224, 224, device="cuda", dtype=torch.half).contiguous(memory_format=torch.channels_last)
    bft.optimize(model, x)      # prints what it replaced, with which strategy, and what it left and why
    y = model(x)

The custom ops (torch.ops.blockfuse.*) are in blockfuse.torch.ops; conv2d() and block() wrap them.
"""
import sys
import time

import torch
from torch import nn

from blockfuse import checks, match
from blockfuse._lib import BlockfuseError
from blockfuse.torch import modules, ops
from blockfuse.torch.ops import block, conv2d, conv_weight, kernel

__all__ = ["optimize", "choices", "conv2d", "block", "conv_weight", "kernel", "format_table"]

PYTORCH = "pytorch"  # a strategy dict's value that keeps a module in PyTorch


def _get(model, path):
    m = model
    for p in path.split("."):
        m = getattr(m, p)
    return m


def _set(model, path, new):
    parent, _, name = path.rpartition(".")
    setattr(_get(model, parent) if parent else model, name, new)


def _time_ms(fn, x, iters=20):
    with torch.no_grad():
        for _ in range(3):
            fn(x)
        if x.device.type == "cuda":
            torch.cuda.synchronize(x.device)
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            times = []
            for _ in range(iters):
                start.record()
                fn(x)
                stop.record()
                stop.synchronize()
                times.append(start.elapsed_time(stop))
        else:
            times = []
            for _ in range(max(3, iters // 5)):
                t0 = time.perf_counter()
                fn(x)
                times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def _strategy_for(strategy, e):
    if isinstance(strategy, dict):  # the module's path first, then its family
        return strategy.get(e.path, strategy.get(e.shape.family if e.kind == "block" else "conv2d", ""))
    return (strategy or "") if e.kind == "block" else ""


def choices(model):
    """What optimize() put in place, as a strategy dict: {module path: strategy, or "pytorch" where the
    original was kept as faster}. Given back to optimize(strategy=...) on a fresh copy of the model (at the
    same batch size) it rebuilds the same model without timing anything again."""
    out = {}
    for r in getattr(model, "blockfuse_table", []):
        if r["strategy"]:
            out[r["path"]] = r["strategy"]
        elif r["note"].startswith("PyTorch is faster"):
            out[r["path"]] = PYTORCH
    return out


def optimize(model, example_input, *, convs=True, strategy=None, choose="records", keep_faster_pytorch=False,
             verbose=True, file=None):
    """Replaces, in place, the modules of `model` that blockfuse serves (blockfuse.match: MobileNetV2
    InvertedResidual, EfficientNet MBConv with SE and FusedMBConv, ConvNeXt CNBlock, Conv-BN-activation runs
    and bare convolutions) with blockfuse modules, BatchNorm, LayerNorm's affine and layer scale folded now.

    example_input: a CUDA tensor (N, C, H, W), channels_last, of the model's dtype; one eager run on it gives
    every replaced module its input shape, whose kernel is then opened (loaded from the kernel cache, or
    generated on a machine with Halide); a module whose kernel is not available stays as it was.
    strategy: "" (per block the fastest tuning record's strategy, else the family's first), a strategy
    for every block, or {module path, family or "conv2d": strategy} (a path's entry first; "pytorch" keeps
    that module as it is; choices() of an optimized model is such a dict). choose="measure": time every strategy of each
    block on its example input and keep the fastest (keep_faster_pytorch: and keep the original module if
    it is faster still). Returns the model; the table is printed (verbose) and kept as
    model.blockfuse_table (a list of dicts)."""
    op = "blockfuse.torch.optimize"
    if model.training:
        raise ValueError(f"{op}: the model is in training mode; BatchNorm folds its running statistics only in "
                         "eval mode: call model.eval() first")
    dtype = checks.check_activation(op, "example_input", example_input, ops.allow_cpu())
    if choose not in ("records", "measure"):
        raise ValueError(f"{op}: choose={choose!r} is not one of records, measure")
    entries = match.plan(model, convs=convs)
    shapes, inputs, hooks = {}, {}, []
    for e in entries:
        if e.kind == "left":
            continue

        def hook(m, args, path=e.path):
            shapes.setdefault(path, tuple(args[0].shape))
            if choose == "measure":
                inputs.setdefault(path, args[0])

        hooks.append(_get(model, e.path).register_forward_pre_hook(hook))
    try:
        with torch.no_grad():
            model(example_input)
    finally:
        for h in hooks:
            h.remove()
    device, tdtype = example_input.device, example_input.dtype
    kind = "cpu" if device.type == "cpu" else "cuda"
    rows = []
    for e in entries:
        row = {"path": e.path, "module": e.module_type, "kind": e.kind, "key": "", "strategy": "", "source": "",
               "note": e.reason, "absorbs": list(e.identity)}
        rows.append(row)
        if e.kind == "left":  # its convolutions, if any, are entries of their own
            row["action"] = "not fused (layers below)" if e.module_type in match.BLOCK_MATCHERS else "left to PyTorch"
            continue
        if e.path not in shapes:
            row.update(action="left to PyTorch", note="not reached by the example input")
            continue
        n, _, h, w = shapes[e.path]
        key = e.shape.key(n, h, w, dtype)
        row["key"] = key
        wanted = _strategy_for(strategy, e)
        if wanted == PYTORCH:
            row.update(action="left to PyTorch", note="PyTorch is faster (the strategy given says so)")
            continue
        try:
            kern = kernel(key, wanted, kind)
        except BlockfuseError as err:
            row.update(action="left to PyTorch", note=f"no kernel: {err}")
            continue
        orig = _get(model, e.path)
        folded = match.fold_entry(e)
        make = (lambda s: modules.Block(e.shape, folded, tdtype, device, s, e.module_type)) if e.kind == "block" else \
            (lambda s: modules.Conv2d(e.shape, folded, tdtype, device, s, e.module_type))
        chosen, note = kern, ""
        if choose == "measure" and e.path in inputs:
            x = inputs[e.path]
            timed = []
            for s in kern.desc["strategies"]:
                try:
                    k = kernel(key, s, kind)
                    timed.append((_time_ms(make(s), x), s, k))
                except BlockfuseError as err:
                    note += f"{s}: {err}; "
            timed.sort(key=lambda t: t[0])
            note += ", ".join(f"{s} {t:.3f} ms" for t, s, _ in timed)
            if timed:
                chosen = timed[0][2]
            if keep_faster_pytorch:
                originals = [orig] + [_get(model, p) for p in e.identity]  # a Conv2d and the BatchNorm after it

                def run_original(t):
                    for m in originals:
                        t = m(t)
                    return t

                t_orig = _time_ms(run_original, x)
                note += f", PyTorch {t_orig:.3f} ms"
                if not timed or t_orig < timed[0][0]:
                    row.update(action="left to PyTorch", note=f"PyTorch is faster ({note})")
                    continue
        new = make(chosen.strategy)
        _set(model, e.path, new)
        for p in e.identity:
            _set(model, p, nn.Identity())
        src = chosen.desc["source"]
        row.update(action=f"blockfuse {'block ' + e.shape.family if e.kind == 'block' else 'conv2d'}",
                   strategy=chosen.strategy, source=src, note=note, kernel=chosen.desc["kernel"],
                   origin=chosen.desc["origin"])
    model.blockfuse_table = rows
    if verbose:
        print(format_table(rows), file=file or sys.stdout)
    return model


def format_table(rows):
    """The replacement table as Markdown."""
    blocks = sum(r["action"].startswith("blockfuse block") for r in rows)
    convs = sum(r["action"] == "blockfuse conv2d" for r in rows)
    unfused = sum(r["action"].startswith("not fused") for r in rows)
    left = sum(r["action"].startswith("left") for r in rows)
    out = [f"blockfuse.torch.optimize: {blocks} blocks and {convs} convolutions replaced; {unfused} blocks not fused "
           f"(their convolutions replaced one by one, listed below them); {left} left to PyTorch",
           "", "| module | torchvision | now | workload | strategy (kernel from) | note |", "|---|---|---|---|---|---|"]
    for r in rows:
        strat = f"{r['strategy']} ({r['source']})" if r["strategy"] else ""
        out.append(f"| {r['path']} | {r['module']} | {r['action']} | {r['key']} | {strat} | {r['note']} |")
    return "\n".join(out)
