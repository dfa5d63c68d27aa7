#!/usr/bin/env python3
"""PyTorch baseline for the blockfuse suites: cuDNN eager and torch.compile timings.

Usage:
  python3 bench/pytorch_baseline.py --suite workloads/conv2d.txt --out OUT.json \
      [--dtype f16] [--only NAME ...] [--no-compile] [--seed N] [--no-tf32] [--cudagraph]
  python3 bench/pytorch_baseline.py --suite workloads/blocks.txt --out OUT.json   (fused blocks)

For each `conv2d:` workload of the suite this builds random CUDA tensors (input NCHW in
channels_last memory format, weight [k, c/groups, r, s]), runs F.conv2d (+ bias, + activation)
eagerly and under torch.compile, times both with triton.testing.do_bench (median, L2 flushed
between reps; --l2-flush read: the same budget after a clean read-only eviction instead) and checks the compiled output against eager (relative L2 < 1e-2).

Fused-block workloads (`mbconv:`, `fused_mbconv:`, `ffn:`, `convfirst:`, `convnext:` keys, mirror
of runtime/block.cpp and generators/block_spec.h) run as the chain of F.conv2d (+ bias, +
activation) calls of their layers (ConvNeXt: F.layer_norm over channels, without affine, after
the depthwise conv), with the residual add when the block has one (BatchNorm and the LayerNorm
affine are taken as folded into the next layer, as on the C++ side), timed the same way; their
rows also carry "family" and "flops" (2 per multiply-add, summed over the layers; the residual
add and the norm are not counted, as in the C++ block_costs()). The `stem:` key (runtime/stem.cpp)
runs as F.conv2d + ReLU then F.max_pool2d(3, 2, padding 1).

Caveat: do_bench times each call between CUDA events, so for very small convolutions the
host-side cost of a call (Python, torch.compile guards, kernel launch) can show up in the
numbers where it is longer than the GPU work; --cudagraph adds graph-replayed timings without it
(but also without the L2 flush). eager_host_ms / compile_host_ms are the call latency as a caller
feels it (host clock around the call + synchronize, GPU idle before it), the C++ harness's host_ms.

The key parsers below mirror runtime/workload.cpp and runtime/block.cpp (same fields, defaults,
validation and messages), so that keys are read the same way here as in the C++ harness;
merge_results.py imports it to join results on canonical keys. Nothing in this module needs torch until a
benchmark actually runs: `--help` and the parsing work without it.
"""
import argparse
import datetime
import json
import math
import os
import platform
import sys
import traceback
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_schema  # noqa: E402  (standard library only, as this module's key parser)

ACTIVATIONS = ("none", "relu", "relu6", "silu", "gelu", "sigmoid")
DTYPES = ("f32", "f16", "bf16")
INT_MAX = 2**31 - 1

# do_bench settings (warmup and rep are milliseconds of run time, not iteration counts).
BENCH_WARMUP_MS = 25
BENCH_REP_MS = 100
REL_L2_TOL = 1e-2


# ---------------------------------------------------------------------------------------------
# Workload keys (mirror of runtime/workload.{h,cpp})
# ---------------------------------------------------------------------------------------------

class WorkloadError(ValueError):
    """A key or suite file that cannot be read; the message names the field and value."""


def _fail(key, msg):
    raise WorkloadError(f"invalid workload '{key}': {msg}")



def _take_dtype(fields, key, default):
    """Pops 'dtype' from the parsed fields (same message as runtime/workload.cpp)."""
    if "dtype" not in fields:
        return default
    d = fields.pop("dtype")
    if d not in DTYPES:
        _fail(key, f"field 'dtype' = '{d}' is not supported (f32, f16, bf16)")
    return d


def _parse_int(key, field, v):
    # Optional sign, then decimal digits only (no spaces, no '0x', no '1e3'); int32 range.
    if v == "":
        _fail(key, f"field '{field}' has no value")
    digits = v[1:] if v[0] in "+-" else v
    if digits == "" or not all("0" <= ch <= "9" for ch in digits):
        _fail(key, f"field '{field}' = '{v}' is not an integer")
    x = int(v)
    if x > INT_MAX or x < -INT_MAX - 1:
        _fail(key, f"field '{field}' = '{v}' is out of range")
    return x


def split_key(key):
    """'family:a=1,b=2' -> (family, [(name, value), ...]) in the order given."""
    if key == "":
        _fail(key, "empty key")
    if ":" not in key:
        _fail(key, "expected 'family:field=value,...' (no ':' found)")
    family, rest = key.split(":", 1)
    if family == "":
        _fail(key, "missing family before ':'")
    if rest == "":
        _fail(key, "no fields after ':'")
    if rest.endswith(","):
        _fail(key, "trailing ','")
    fields, seen = [], set()
    for item in rest.split(","):
        if item == "":
            _fail(key, "empty field (two commas in a row?)")
        if "=" not in item:
            _fail(key, f"field '{item}' has no '='")
        name, value = item.split("=", 1)
        if name == "":
            _fail(key, f"field with empty name ('{item}')")
        if name in seen:
            _fail(key, f"field '{name}' given twice")
        seen.add(name)
        fields.append((name, value))
    return family, fields


def key_family(key):
    """The family of a key ('conv2d', 'mbconv', ...), or None if it has no 'family:' prefix."""
    family, sep, _ = key.partition(":")
    return family if sep and family else None


@dataclass
class Conv2dWorkload:
    n: int = 0
    c: int = 0
    h: int = 0
    w: int = 0
    k: int = 0
    r: int = 0  # kernel height
    s: int = 0  # kernel width
    stride_h: int = 1
    stride_w: int = 1
    pad_t: int = 0
    pad_b: int = 0
    pad_l: int = 0
    pad_r: int = 0
    dil_h: int = 1
    dil_w: int = 1
    groups: int = 1
    bias: bool = False
    act: str = "none"
    dtype: str = "f32"

    def out_h(self):
        return (self.h + self.pad_t + self.pad_b - self.dil_h * (self.r - 1) - 1) // self.stride_h + 1

    def out_w(self):
        return (self.w + self.pad_l + self.pad_r - self.dil_w * (self.s - 1) - 1) // self.stride_w + 1


def parse_conv2d(key):
    """Parses and validates a `conv2d:` key; raises WorkloadError with a clear message."""
    family, fields = split_key(key)
    if family != "conv2d":
        _fail(key, f"family '{family}' is not 'conv2d'")
    f = dict(fields)
    wl = Conv2dWorkload()

    def take_int(name):
        return _parse_int(key, name, f.pop(name)) if name in f else None

    for req in ("n", "c", "h", "w", "k", "r", "s"):
        v = take_int(req)
        if v is None:
            _fail(key, f"missing field '{req}'")
        setattr(wl, req, v)

    # A symmetric field (stride, pad, dil) and its per-side forms are exclusive.
    def pair_field(both, sides):
        v = take_int(both)
        for side in sides:
            if v is not None and side in f:
                _fail(key, f"fields '{both}' and '{side}' are both given")
            sv = v if v is not None else take_int(side)
            if sv is not None:
                setattr(wl, side, sv)

    pair_field("stride", ("stride_h", "stride_w"))
    pair_field("pad", ("pad_t", "pad_b", "pad_l", "pad_r"))
    pair_field("dil", ("dil_h", "dil_w"))
    g = take_int("groups")
    if g is not None:
        wl.groups = g
    b = take_int("bias")
    if b is not None:
        if b not in (0, 1):
            _fail(key, f"field 'bias' = {b} must be 0 or 1")
        wl.bias = b == 1
    if "act" in f:
        a = f.pop("act")
        if a not in ACTIVATIONS:
            _fail(key, f"field 'act' = '{a}' is not one of {', '.join(ACTIVATIONS)}")
        wl.act = a
    wl.dtype = _take_dtype(f, key, wl.dtype)
    if f:
        _fail(key, f"unknown field '{sorted(f)[0]}'")
    validate(wl, key)
    return wl


def validate(wl, key):
    """Rejects impossible shapes, as the C++ validate() does."""
    for name in ("n", "c", "h", "w", "k", "r", "s", "stride_h", "stride_w", "dil_h", "dil_w", "groups"):
        v = getattr(wl, name)
        if v <= 0:
            _fail(key, f"field '{name}' = {v} must be positive")
    for name in ("pad_t", "pad_b", "pad_l", "pad_r"):
        v = getattr(wl, name)
        if v < 0:
            _fail(key, f"field '{name}' = {v} must not be negative")
    if wl.c % wl.groups:
        _fail(key, f"field 'groups' = {wl.groups} does not divide c = {wl.c}")
    if wl.k % wl.groups:
        _fail(key, f"field 'groups' = {wl.groups} does not divide k = {wl.k}")
    span_h = wl.dil_h * (wl.r - 1) + 1
    span_w = wl.dil_w * (wl.s - 1) + 1
    if wl.h + wl.pad_t + wl.pad_b < span_h:
        _fail(key, f"empty output: padded height {wl.h + wl.pad_t + wl.pad_b} is smaller than "
                   f"the dilated kernel height {span_h}")
    if wl.w + wl.pad_l + wl.pad_r < span_w:
        _fail(key, f"empty output: padded width {wl.w + wl.pad_l + wl.pad_r} is smaller than "
                   f"the dilated kernel width {span_w}")
    for what, dims in (("input", (wl.n, wl.c, wl.h, wl.w)),
                       ("weight", (wl.k, wl.c // wl.groups, wl.r, wl.s)),
                       ("output", (wl.n, wl.k, wl.out_h(), wl.out_w()))):
        if math.prod(dims) > INT_MAX:
            _fail(key, f"{what} tensor has more than 2^31 elements")


def to_key(wl):
    """Canonical key, byte-for-byte as the C++ to_key() prints it (conv2d or block workload)."""
    if isinstance(wl, BlockWorkload):
        return block_to_key(wl)
    if isinstance(wl, StemWorkload):
        return stem_to_key(wl)
    parts = [f"conv2d:n={wl.n},c={wl.c},h={wl.h},w={wl.w},k={wl.k},r={wl.r},s={wl.s}"]
    if wl.stride_h == wl.stride_w:
        parts.append(f"stride={wl.stride_h}")
    else:
        parts.append(f"stride_h={wl.stride_h},stride_w={wl.stride_w}")
    if wl.pad_t == wl.pad_b == wl.pad_l == wl.pad_r:
        parts.append(f"pad={wl.pad_t}")
    else:
        parts.append(f"pad_t={wl.pad_t},pad_b={wl.pad_b},pad_l={wl.pad_l},pad_r={wl.pad_r}")
    if wl.dil_h != wl.dil_w:
        parts.append(f"dil_h={wl.dil_h},dil_w={wl.dil_w}")
    elif wl.dil_h != 1:
        parts.append(f"dil={wl.dil_h}")
    parts.append(f"groups={wl.groups}")
    if wl.bias:
        parts.append("bias=1")
    if wl.act != "none":
        parts.append(f"act={wl.act}")
    parts.append(f"dtype={wl.dtype}")
    return ",".join(parts)


def canonical_key(key):
    """Canonical form of a conv2d or block key (so that 'pad=1' and 'pad_t=1,...' compare equal,
    and a block key with defaults left out equals the one that spells them); other families and
    unparsable keys are returned stripped but otherwise unchanged."""
    key = key.strip()
    wl = _safe_parse(key)
    return to_key(wl) if wl is not None else key


def load_suite(path):
    """Lines '<name> <key>'; '#' starts a comment; blank lines are skipped.
    Returns [(name, key)]; raises WorkloadError 'path:line: ...' on a malformed line."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError as e:
        raise WorkloadError(f"cannot open suite file '{path}': {e.strerror}") from None
    entries = []
    for lineno, line in enumerate(lines, 1):
        tokens = line.split("#", 1)[0].split()
        if not tokens:
            continue
        if len(tokens) != 2:
            raise WorkloadError(f"{path}:{lineno}: expected '<name> <key>'")
        entries.append((tokens[0], tokens[1]))
    return entries


def conv_call_args(wl):
    """How the workload maps onto torch calls (pure Python, so it is testable without torch).

    Returns a dict: 'pre_pad' is None or the F.pad tuple (left, right, top, bottom) for padding
    that conv2d cannot express (top != bottom or left != right); 'padding', 'stride',
    'dilation', 'groups' are F.conv2d arguments."""
    if wl.pad_t == wl.pad_b and wl.pad_l == wl.pad_r:
        pre_pad, padding = None, (wl.pad_t, wl.pad_l)  # conv2d pads natively: no extra kernel
    else:
        pre_pad, padding = (wl.pad_l, wl.pad_r, wl.pad_t, wl.pad_b), (0, 0)
    return {"pre_pad": pre_pad, "padding": padding, "stride": (wl.stride_h, wl.stride_w),
            "dilation": (wl.dil_h, wl.dil_w), "groups": wl.groups}


# ---------------------------------------------------------------------------------------------
# Fused-block keys (mirror of runtime/block.{h,cpp} and generators/block_spec.h)
# ---------------------------------------------------------------------------------------------

BLOCK_FAMILIES = ("mbconv", "fused_mbconv", "ffn", "convfirst", "convnext")
# Activation after the expanding layer(s) when the key gives none (parse_block).
BLOCK_DEFAULT_ACT = {"mbconv": "relu6", "fused_mbconv": "silu", "ffn": "relu", "convfirst": "relu",
                     "convnext": "gelu"}
# Spatial kernel when the key gives none.
BLOCK_DEFAULT_K = {"ffn": 1, "convnext": 7}
# LayerNorm epsilon (generators/block_spec.h kLayerNormEps).
LAYER_NORM_EPS = 1e-6
CONVFIRST_GROUP_WIDTH = 8


@dataclass
class BlockWorkload:
    family: str = "mbconv"
    n: int = 0
    c: int = 0
    h: int = 0
    w: int = 0
    e: int = 0  # expansion: hidden width E = c * e
    k: int = 3  # the spatial kernel (1 for ffn)
    stride: int = 1
    blocks: int = 1  # > 1: a stage of identical blocks, each one's input the previous one's output
    se: bool = False  # mbconv with Squeeze-Excitation after the depthwise layer (reduce to max(1, c // 4))
    act: str = "relu6"
    dtype: str = "f32"

    def layers(self):
        return block_layers(self)

    def residual(self):
        return block_spec(self)[1]

    def out_h(self):
        return self.layers()[-1].out_h()

    def out_w(self):
        return self.layers()[-1].out_w()


@dataclass(frozen=True)
class LayerSpec:
    """One conv layer of a block (generators/block_spec.h LayerSpec, same field order)."""
    ks: int
    stride: int
    groups: int
    in_ch: int
    out_ch: int
    act: str
    hidden: bool  # output has the block's hidden width
    norm_after: bool = False  # LayerNorm over channels after this layer (affine folded into the next)


def is_block_key(key):
    """True when the key's family is one of the block families (runtime is_block_key())."""
    return key.split(":", 1)[0] in BLOCK_FAMILIES


def block_spec(bw):
    """(layers, residual) of make_block_spec(): hidden E = c * e; the activation follows the
    expanding layer(s); the last layer takes the residual when the block keeps its shape."""
    f, c, E, ks, s, act = bw.family, bw.c, bw.c * bw.e, bw.k, bw.stride, bw.act
    L = LayerSpec
    if f == "mbconv":  # 1x1 expand + act -> depthwise kxk + act -> 1x1 project (+ residual)
        layers = [L(1, 1, 1, c, E, act, True), L(ks, s, E, E, E, act, True), L(1, 1, 1, E, c, "none", False)]
    elif f == "fused_mbconv":  # kxk expand + act -> 1x1 project (+ residual)
        layers = [L(ks, s, 1, c, E, act, True), L(1, 1, 1, E, c, "none", False)]
    elif f == "ffn":  # phi(X U + a) V + b, no residual
        layers = [L(1, 1, 1, c, E, act, True), L(1, 1, 1, E, c, "none", False)]
    elif f == "convfirst":  # grouped kxk (group width 8), no act -> FFN with ReLU -> residual
        if c % CONVFIRST_GROUP_WIDTH:
            raise ValueError("convfirst needs c divisible by the group width 8")
        layers = [L(ks, s, c // CONVFIRST_GROUP_WIDTH, c, c, "none", False),
                  L(1, 1, 1, c, E, "relu", True), L(1, 1, 1, E, c, "none", False)]
    elif f == "convnext":  # depthwise kxk -> LayerNorm -> 1x1 expand + act -> 1x1 project (+ residual)
        layers = [L(ks, s, c, c, c, "none", False, True), L(1, 1, 1, c, E, act, True),
                  L(1, 1, 1, E, c, "none", False)]
    else:
        raise ValueError(f"unknown block family '{f}'")
    return layers, f != "ffn" and s == 1


def block_layers(bw):
    """The block's layers as conv2d workloads (BlockWorkload::layers()): same padding ks//2,
    bias on every layer, each layer's input the previous layer's output shape."""
    out, ch, cw = [], bw.h, bw.w
    for l in block_spec(bw)[0]:
        p = l.ks // 2
        cl = Conv2dWorkload(n=bw.n, c=l.in_ch, h=ch, w=cw, k=l.out_ch, r=l.ks, s=l.ks,
                            stride_h=l.stride, stride_w=l.stride, pad_t=p, pad_b=p, pad_l=p, pad_r=p,
                            groups=l.groups, bias=True, act=l.act, dtype=bw.dtype)
        ch, cw = cl.out_h(), cl.out_w()
        out.append(cl)
    return out


def conv2d_flops(wl):
    """2 per multiply-add (runtime/conv2d.cpp conv2d_flops())."""
    return 2.0 * wl.n * wl.k * wl.out_h() * wl.out_w() * (wl.c // wl.groups) * wl.r * wl.s


def se_channels(bw):
    """Squeeze-Excitation's reduced width (generators/block_spec.h): max(1, c // 4)."""
    return max(1, bw.c // 4)


def block_flops(bw):
    """Sum of the layers' conv2d flops over every block, plus SE's two small products per image
    (block_costs(); residual, mean and gate multiply not counted)."""
    f = bw.blocks * sum(conv2d_flops(l) for l in block_layers(bw))
    if bw.se:
        f += 2.0 * bw.n * 2 * (bw.c * bw.e) * se_channels(bw)
    return f


def parse_block(key):
    """Parses and validates a block key (runtime parse_block()); raises WorkloadError."""
    family, fields = split_key(key)
    if family not in BLOCK_FAMILIES:
        _fail(key, f"family '{family}' is not one of {', '.join(BLOCK_FAMILIES)}")
    f = dict(fields)
    bw = BlockWorkload(family=family)

    def take(name, required):
        if name not in f:
            if required:
                _fail(key, f"missing field '{name}'")
            return None
        return _parse_int(key, name, f.pop(name))

    for req in ("n", "c", "h", "w", "e"):
        setattr(bw, req, take(req, True))
    bw.k = BLOCK_DEFAULT_K.get(family, 3)
    for opt in ("k", "stride", "blocks"):
        v = take(opt, False)
        if v is not None:
            setattr(bw, opt, v)
    bw.act = BLOCK_DEFAULT_ACT[family]
    if "act" in f:
        a = f.pop("act")
        if a not in ACTIVATIONS + ("gelu_erf",) or a == "none":
            _fail(key, f"field 'act' = '{a}' is not one of relu, relu6, silu, gelu, gelu_erf, sigmoid")
        bw.act = a
    bw.dtype = _take_dtype(f, key, bw.dtype)
    if "se" in f:
        raw = f.pop("se")
        se = _parse_int(key, "se", raw)
        if se not in (0, 1):
            _fail(key, f"field 'se' = {raw} must be 0 or 1")
        bw.se = se == 1
        if bw.se and family != "mbconv":
            _fail(key, "field 'se' = 1: Squeeze-Excitation is part of mbconv only")
    if f:
        _fail(key, f"unknown field '{sorted(f)[0]}'")
    for name in ("n", "c", "h", "w", "e", "k"):
        v = getattr(bw, name)
        if v <= 0:
            _fail(key, f"field '{name}' = {v} must be positive")
    if bw.k % 2 == 0:
        _fail(key, f"field 'k' = {bw.k} must be odd (same padding)")
    if bw.stride not in (1, 2):
        _fail(key, f"field 'stride' = {bw.stride} must be 1 or 2")
    if not 1 <= bw.blocks <= 4:
        _fail(key, f"field 'blocks' = {bw.blocks} must be 1 to 4")
    if bw.blocks > 1 and bw.se:
        _fail(key, f"a stage (blocks = {bw.blocks}) of blocks with se=1 is not supported")
    if bw.blocks > 1 and bw.stride != 1:
        _fail(key, f"a stage (blocks = {bw.blocks}) needs stride 1: each block's output feeds the next")
    if family == "ffn" and (bw.k != 1 or bw.stride != 1):
        _fail(key, "ffn has no spatial kernel: k and stride must be 1")
    if family == "convfirst" and bw.c % CONVFIRST_GROUP_WIDTH:
        _fail(key, f"field 'c' = {bw.c} must be a multiple of the group width 8 for convfirst")
    if family == "convfirst" and bw.act != "relu":
        _fail(key, "convfirst uses ReLU (act=relu)")
    for layer in block_layers(bw):
        validate(layer, key)
    return bw


def block_to_key(bw):
    """Canonical block key, byte-for-byte as the C++ to_key(BlockWorkload) prints it."""
    s = f"{bw.family}:n={bw.n},c={bw.c},h={bw.h},w={bw.w},e={bw.e}"
    if bw.family != "ffn":
        s += f",k={bw.k},stride={bw.stride}"
    if bw.blocks > 1:
        s += f",blocks={bw.blocks}"
    if bw.se:
        s += ",se=1"
    return s + f",act={bw.act},dtype={bw.dtype}"


def block_call_plan(bw):
    """How a block maps onto torch calls (pure Python, testable without torch): per layer the
    F.conv2d arguments, weight shape and activation; and whether the input is added back."""
    layers = []
    for spec, l in zip(block_spec(bw)[0], block_layers(bw)):
        a = conv_call_args(l)
        assert a["pre_pad"] is None  # symmetric ks//2 padding: conv2d pads natively
        layers.append({"weight_shape": (l.k, l.c // l.groups, l.r, l.s), "bias_shape": (l.k,),
                       "stride": a["stride"], "padding": a["padding"], "dilation": a["dilation"],
                       "groups": a["groups"], "act": l.act, "norm_after": spec.norm_after})
    se = None
    if bw.se:  # after the depthwise layer: mean -> 1x1 reduce + act -> 1x1 expand -> sigmoid -> multiply
        E, R = bw.c * bw.e, se_channels(bw)
        se = {"after": 1, "act": bw.act, "weight_shapes": [(R, E, 1, 1), (E, R, 1, 1)], "bias_shapes": [(R,), (E,)]}
    return {"layers": layers, "residual": bw.residual(), "blocks": bw.blocks, "se": se}


def plan_param_shapes(plan):
    """[(weight shape, bias shape), ...] in the order block(x, *params) takes them: every layer of
    every block, then SE's reduce and expand."""
    shapes = [(L["weight_shape"], L["bias_shape"]) for L in plan["layers"]] * plan.get("blocks", 1)
    if plan.get("se"):
        shapes += list(zip(plan["se"]["weight_shapes"], plan["se"]["bias_shapes"]))
    return shapes


def make_block_forward(plan, conv2d, act_fns, channel_norm=None, spatial_mean=None):
    """block(x, w0, b0, w1, b1, ...): the plan's conv2d (+ bias) -> activation [-> LayerNorm over
    channels] [-> Squeeze-Excitation] chain, plus the input when the block is residual. conv2d,
    act_fns ({name: fn}), channel_norm and spatial_mean (N, C, 1, 1 mean) are passed in so that the
    wiring is testable with stand-ins; _make_block_fn binds the torch functions."""
    steps = [(L["stride"], L["padding"], L["dilation"], L["groups"],
              None if L["act"] == "none" else act_fns[L["act"]], L.get("norm_after", False))
             for L in plan["layers"]]
    if any(s[-1] for s in steps) and channel_norm is None:
        raise ValueError("the block has a LayerNorm but no channel_norm function was given")
    residual, blocks, per_block = plan["residual"], plan.get("blocks", 1), 2 * len(steps)
    se = plan.get("se")
    if se and spatial_mean is None:
        raise ValueError("the block has Squeeze-Excitation but no spatial_mean function was given")

    def block(x, *params):  # a stage: the blocks one after the other, each with its own params
        for b in range(blocks):
            p = params[b * per_block:(b + 1) * per_block]
            y = x
            for i, (stride, padding, dilation, groups, act, norm) in enumerate(steps):
                y = conv2d(y, p[2 * i], p[2 * i + 1], stride=stride, padding=padding,
                           dilation=dilation, groups=groups)
                if act is not None:
                    y = act(y)
                if norm:
                    y = channel_norm(y)
                if se and i == se["after"]:
                    q = params[blocks * per_block:]
                    z = conv2d(spatial_mean(y), q[0], q[1], stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1)
                    g = conv2d(act_fns[se["act"]](z), q[2], q[3], stride=(1, 1), padding=(0, 0), dilation=(1, 1),
                               groups=1)
                    y = y * act_fns["sigmoid"](g)
            x = y + x if residual else y
        return x

    return block


# ---------------------------------------------------------------------------------------------
# The stem (mirror of runtime/stem.{h,cpp}): 3x3 stride-2 conv (+ folded BN, ReLU), padding 1,
# then a 3x3 stride-2 max pool, padding 1
# ---------------------------------------------------------------------------------------------

@dataclass
class StemWorkload:
    n: int = 0
    h: int = 0
    w: int = 0
    c: int = 3
    k: int = 64
    dtype: str = "f32"

    def conv(self):
        return Conv2dWorkload(n=self.n, c=self.c, h=self.h, w=self.w, k=self.k, r=3, s=3, stride_h=2,
                              stride_w=2, pad_t=1, pad_b=1, pad_l=1, pad_r=1, bias=True, act="relu",
                              dtype=self.dtype)

    def out_h(self):
        return (self.conv().out_h() - 1) // 2 + 1

    def out_w(self):
        return (self.conv().out_w() - 1) // 2 + 1


def is_stem_key(key):
    return key_family(key) == "stem"


def parse_stem(key):
    """Parses and validates a `stem:` key (runtime parse_stem()); raises WorkloadError."""
    family, fields = split_key(key)
    if family != "stem":
        _fail(key, f"family '{family}' is not 'stem'")
    f = dict(fields)
    sw = StemWorkload()
    for name in ("n", "h", "w", "c", "k"):
        if name not in f:
            if name in ("n", "h", "w"):
                _fail(key, f"missing field '{name}'")
            continue
        v = _parse_int(key, name, f.pop(name))
        if v <= 0:
            _fail(key, f"field '{name}' = {v} must be positive")
        setattr(sw, name, v)
    sw.dtype = _take_dtype(f, key, sw.dtype)
    if f:
        _fail(key, f"unknown field '{sorted(f)[0]}'")
    validate(sw.conv(), key)
    return sw


def stem_to_key(sw):
    """Canonical stem key, byte-for-byte as the C++ to_key(StemWorkload) prints it."""
    return f"stem:n={sw.n},h={sw.h},w={sw.w},c={sw.c},k={sw.k},dtype={sw.dtype}"


def stem_flops(sw):
    """The conv's flops (the max pool's compares are not counted, as in the C++ stem_costs())."""
    return conv2d_flops(sw.conv())


def parse_key(key):
    """parse_conv2d, parse_block or parse_stem by the key's family; WorkloadError otherwise."""
    if is_block_key(key):
        return parse_block(key)
    if is_stem_key(key):
        return parse_stem(key)
    return parse_conv2d(key)


SUPPORTED_FAMILIES = ("conv2d", "stem") + BLOCK_FAMILIES


def workload_flops(wl):
    """2 per multiply-add, for any workload this module parses (None for a conv2d: its rows
    carry no flops, the C++ side's do)."""
    if isinstance(wl, BlockWorkload):
        return block_flops(wl)
    if isinstance(wl, StemWorkload):
        return stem_flops(wl)
    return None


# ---------------------------------------------------------------------------------------------
# Benchmarking (torch and triton are imported here only)
# ---------------------------------------------------------------------------------------------

def _torch_dtype(torch, name):
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[name]


def _torch_activations():
    """{name: torch function} of the activations (none -> None)."""
    import torch
    import torch.nn.functional as F

    return {
        "none": None,
        "relu": F.relu,
        "relu6": F.relu6,
        "silu": F.silu,
        "gelu": lambda y: F.gelu(y, approximate="tanh"),  # same tanh formula as the C++ side
        "gelu_erf": F.gelu,  # the exact form (block families only)
        "sigmoid": torch.sigmoid,
    }


def _make_conv_fn(wl):
    """The function that is timed: [F.pad] -> F.conv2d (+bias) -> activation."""
    import torch.nn.functional as F

    a = conv_call_args(wl)
    act = _torch_activations()[wl.act]

    def conv(x, weight, bias):
        if a["pre_pad"] is not None:
            x = F.pad(x, a["pre_pad"])
        y = F.conv2d(x, weight, bias, stride=a["stride"], padding=a["padding"],
                     dilation=a["dilation"], groups=a["groups"])
        return act(y) if act is not None else y

    return conv


def _make_inputs(wl, seed):
    import torch

    dt = _torch_dtype(torch, wl.dtype)
    g = torch.Generator(device="cuda").manual_seed(seed)
    cg = wl.c // wl.groups
    x = torch.randn(wl.n, wl.c, wl.h, wl.w, device="cuda", dtype=dt, generator=g)
    x = x.contiguous(memory_format=torch.channels_last)
    # Weights scaled by 1/sqrt(fan_in) keep outputs O(1) (no f16 overflow on wide reductions).
    weight = torch.randn(wl.k, cg, wl.r, wl.s, device="cuda", dtype=dt, generator=g)
    weight = (weight / math.sqrt(cg * wl.r * wl.s)).contiguous(memory_format=torch.channels_last)
    bias = torch.randn(wl.k, device="cuda", dtype=dt, generator=g) if wl.bias else None
    return x, weight, bias


def _make_block_fn(bw):
    """The function that is timed for a block: block(x, w0, b0, w1, b1, ...), its layers'
    F.conv2d (+bias) -> activation chain (+ x when residual)."""
    import torch.nn.functional as F

    def channel_norm(y):  # LayerNorm over C of an NCHW (channels_last) tensor, no affine
        c = y.shape[1]
        return F.layer_norm(y.permute(0, 2, 3, 1), (c,), eps=LAYER_NORM_EPS).permute(0, 3, 1, 2)

    return make_block_forward(block_call_plan(bw), F.conv2d, _torch_activations(), channel_norm,
                              lambda y: y.mean((2, 3), keepdim=True))


def _make_block_inputs(bw, seed):
    """x (channels_last) and the flat [w0, b0, w1, b1, ...] list, all CUDA tensors in the key's
    dtype. Weights scaled by 1/sqrt(fan_in) and biases in [-0.5, 0.5), as randomize() in
    runtime/block.cpp, keep the hidden activations O(1) (no f16 overflow)."""
    import torch

    dt = _torch_dtype(torch, bw.dtype)
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(bw.n, bw.c, bw.h, bw.w, device="cuda", dtype=dt, generator=g)
    x = x.contiguous(memory_format=torch.channels_last)
    params = []
    for wshape, bshape in plan_param_shapes(block_call_plan(bw)):
        weight = torch.randn(*wshape, device="cuda", dtype=dt, generator=g)
        weight = (weight / math.sqrt(math.prod(wshape[1:]))).contiguous(memory_format=torch.channels_last)
        bias = torch.rand(*bshape, device="cuda", dtype=dt, generator=g) - 0.5
        params += [weight, bias]
    return x, params


def _rel_l2(got, ref):
    """||got - ref|| / ||ref|| in float64 (0 when both are zero; inf if only ref is zero)."""
    got, ref = got.double(), ref.double()
    num, den = (got - ref).norm().item(), ref.norm().item()
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return num / den


# --l2-flush: "write" times with triton.testing.do_bench, whose flush is a memset (zero_) of 256 MB:
# the H200's write-back L2 is left full of dirty lines that the timed call writes back. "read" times
# the same way (events, the same warm-up and repeat budget, median) after a read-only eviction of 2x
# the L2 (at least 64 MiB), so the L2 holds clean lines only: the C++ harness's --l2-flush read.
L2_FLUSH = "write"


def _bench(fn):
    if L2_FLUSH == "read":
        return _bench_read_evicted(fn)
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=BENCH_WARMUP_MS, rep=BENCH_REP_MS, return_mode="median"))


_EVICT = {}


def _read_evict():
    import torch

    if "buf" not in _EVICT:
        l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20)
        _EVICT["buf"] = torch.ones(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()  # the ones are written once, here, and are not dirty in L2 after the first eviction
    _EVICT["buf"].amax()  # reads the buffer; writes one float


def _bench_read_evicted(fn):
    import statistics
    import torch

    fn()
    _read_evict()
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(5):
        _read_evict()
        fn()
    t1.record()
    torch.cuda.synchronize()
    estimate_ms = max(t0.elapsed_time(t1) / 5, 1e-3)
    for _ in range(max(1, int(BENCH_WARMUP_MS / estimate_ms))):
        fn()
    n = max(1, int(BENCH_REP_MS / estimate_ms))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        _read_evict()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return float(statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)))


_WRITE_FLUSH = {}


def _bench_host(fn, samples=30):
    """Call latency as a caller feels it, the C++ harness's host_ms (runtime/timing.cpp): after an L2
    flush of the same kind as the device timing and a synchronize (the GPU idle), the host clock
    around fn() + synchronize. Python, the dispatcher, torch.compile's guards and every kernel
    launch are in it, as the GPU time is; the median of `samples` calls after a warm-up."""
    import statistics
    import time
    import torch

    if L2_FLUSH == "read":
        flush = _read_evict
    else:  # do_bench's flush: a memset of a buffer larger than the L2
        if "buf" not in _WRITE_FLUSH:
            l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or (64 << 20)
            _WRITE_FLUSH["buf"] = torch.empty(max(2 * l2, 256 << 20), dtype=torch.int8, device="cuda")
        flush = _WRITE_FLUSH["buf"].zero_
    for _ in range(3):
        fn()
    times = []
    for _ in range(samples):
        flush()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(statistics.median(times))


def _bench_graph(fn):
    """GPU time without host launch overhead: fn replayed from a CUDA graph. No L2 flush
    between calls, so small working sets stay in L2 (an optimistic number)."""
    from triton.testing import do_bench_cudagraph

    return float(do_bench_cudagraph(fn, rep=BENCH_REP_MS, return_mode="median"))


def _new_record(name, suite_key, wl):
    rec = {"name": name, "key": to_key(wl), "suite_key": suite_key, "dtype": wl.dtype}
    if isinstance(wl, (BlockWorkload, StemWorkload)):
        rec["family"] = wl.family if isinstance(wl, BlockWorkload) else "stem"
        rec["flops"] = workload_flops(wl)
    rec.update({"eager_ms": None, "eager_ms_repeat": None, "compile_ms": None, "eager_workspace_bytes": None,
                "compile_workspace_bytes": None,
                "eager_host_ms": None, "compile_host_ms": None, "compile_error": None,
                "compile_s": None, "compile_rel_l2": None, "compile_check_ok": None, "error": None})
    return rec


def _call_workspace(fn):
    """PyTorch's side of the harness's workspace_bytes: the most bytes the caching allocator held at once during
    one call beyond what was allocated before it and the output it returns (intermediates, cuDNN's workspace)."""
    import torch

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    return max(0, torch.cuda.max_memory_allocated() - base - out.numel() * out.element_size())


def _time_eager_and_compile(rec, fn, args, expected, use_compile, cudagraph):
    """The measurement of every workload (conv2d or block), into rec: eager result and shape
    check, eager timing (device, and host-inclusive call latency), torch.compile (fresh, static
    shapes) checked against eager and timed the same two ways,
    a second eager timing, and the optional CUDA-graph timings. Raises on eager failure."""
    import time
    import torch

    with torch.no_grad():
        ref = fn(*args)  # eager result (also the first cudnn.benchmark call)
        torch.cuda.synchronize()
        if tuple(ref.shape) != expected:  # same shape as the C++ side computes
            raise RuntimeError(f"output shape {tuple(ref.shape)} != expected {expected}")
        rec["eager_ms"] = _bench(lambda: fn(*args))
        rec["eager_host_ms"] = _bench_host(lambda: fn(*args))
        rec["eager_workspace_bytes"] = _call_workspace(lambda: fn(*args))

        if use_compile:
            try:
                torch._dynamo.reset()  # compile each workload fresh and static-shaped
                compiled = torch.compile(fn, dynamic=False)
                t0 = time.perf_counter()
                out = compiled(*args)  # compilation happens on this first call
                torch.cuda.synchronize()
                rec["compile_s"] = round(time.perf_counter() - t0, 3)
                rel = _rel_l2(out, ref)
                rec["compile_rel_l2"] = rel if math.isfinite(rel) else str(rel)
                rec["compile_check_ok"] = bool(rel < REL_L2_TOL)
                rec["compile_ms"] = _bench(lambda: compiled(*args))
                rec["compile_host_ms"] = _bench_host(lambda: compiled(*args))
                rec["compile_workspace_bytes"] = _call_workspace(lambda: compiled(*args))
            except Exception as e:  # recorded, not fatal: the eager numbers still stand
                rec["compile_ms"] = None
                rec["compile_error"] = f"{type(e).__name__}: {e}"

        # Second eager timing after the compile run: the spread shows the measurement noise.
        rec["eager_ms_repeat"] = _bench(lambda: fn(*args))

        if cudagraph:  # optional extra: timings free of host (Python/launch) overhead
            rec["eager_graph_ms"] = rec["compile_graph_ms"] = rec["graph_error"] = None
            try:
                rec["eager_graph_ms"] = _bench_graph(lambda: fn(*args))
                if rec["compile_ms"] is not None:
                    rec["compile_graph_ms"] = _bench_graph(lambda: compiled(*args))
            except Exception as e:
                rec["graph_error"] = f"{type(e).__name__}: {e}"
    return rec


def run_workload(name, suite_key, use_compile, seed, cudagraph=False):
    """Times one conv2d workload; returns its result record (raises on eager failure)."""
    wl = parse_conv2d(suite_key)
    rec = _new_record(name, suite_key, wl)
    conv = _make_conv_fn(wl)
    x, weight, bias = _make_inputs(wl, seed)
    expected = (wl.n, wl.k, wl.out_h(), wl.out_w())
    return _time_eager_and_compile(rec, conv, (x, weight, bias), expected, use_compile, cudagraph)


def run_block_workload(name, suite_key, use_compile, seed, cudagraph=False):
    """Times one fused-block workload (its layers as eager F.conv2d calls, and torch.compile of
    the whole chain); returns its result record with 'family' and 'flops' (raises on eager failure)."""
    bw = parse_block(suite_key)
    rec = _new_record(name, suite_key, bw)
    block = _make_block_fn(bw)
    x, params = _make_block_inputs(bw, seed)
    expected = (bw.n, bw.c, bw.out_h(), bw.out_w())
    return _time_eager_and_compile(rec, block, (x, *params), expected, use_compile, cudagraph)


def run_stem_workload(name, suite_key, use_compile, seed, cudagraph=False):
    """Times the stem: F.conv2d (+ bias) -> ReLU -> F.max_pool2d(3, 2, padding 1), eager (cuDNN
    conv, then a separate pool kernel) and torch.compile of the pair."""
    import torch.nn.functional as F

    sw = parse_stem(suite_key)
    rec = _new_record(name, suite_key, sw)
    conv = _make_conv_fn(sw.conv())

    def stem(x, weight, bias):
        return F.max_pool2d(conv(x, weight, bias), kernel_size=3, stride=2, padding=1)

    x, weight, bias = _make_inputs(sw.conv(), seed)
    expected = (sw.n, sw.k, sw.out_h(), sw.out_w())
    return _time_eager_and_compile(rec, stem, (x, weight, bias), expected, use_compile, cudagraph)


def _context(args):
    import torch
    import triton

    return {
        "blockfuse_commit": results_schema.blockfuse_commit(),
        "device": "cuda",
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": list(sys.argv),
        "python": platform.python_version(),
        "host": platform.node(),
        "torch_version": torch.__version__,
        "triton_version": triton.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(),
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "timing": {"tool": "triton.testing.do_bench" if L2_FLUSH == "write" else "CUDA events, do_bench's budget",
                   "warmup_ms": BENCH_WARMUP_MS, "rep_ms": BENCH_REP_MS, "return_mode": "median", "l2_flush": True,
                   "l2_flush_kind": L2_FLUSH,
                   "host_latency": "eager_host_ms / compile_host_ms: median of 30 calls, each after a flush and a "
                                   "synchronize, host clock around the call + synchronize"},
        "compile": {"enabled": not args.no_compile, "mode": "default", "dynamic": False},
        "cudagraph_timing": args.cudagraph,
        "rel_l2_tol": REL_L2_TOL,
        "seed": args.seed,
        "dtype_filter": args.dtype,
        "suite": args.suite,
    }


def _write_json(path, doc):
    # Write to a temporary file then rename, so a crash never leaves a half-written file.
    tmp = f"{path}.tmp"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)  # the folder may not exist yet
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)


def _fmt(x, spec=".4f"):
    return "n/a" if x is None else format(x, spec)


def print_table(results):
    head = (f"{'workload':<24} {'dtype':<5} {'eager ms':>10} {'eager rpt':>10} {'compile ms':>10} {'eager host':>10} "
            f"{'comp host':>10}  check")
    print(head)
    print("-" * len(head))
    for r in results:
        if r.get("error"):
            check = "ERROR: " + r["error"].splitlines()[0][:60]
        elif r.get("compile_error"):
            check = "compile failed: " + r["compile_error"].splitlines()[0][:60]
        elif r.get("compile_check_ok") is None:
            check = "-"
        else:
            check = "ok" if r["compile_check_ok"] else "MISMATCH"
            check += f" (rel_l2={r['compile_rel_l2']})" if isinstance(r["compile_rel_l2"], str) \
                else f" (rel_l2={r['compile_rel_l2']:.2e})"
        print(f"{r['name']:<24} {str(r.get('dtype') or '-'):<5} {_fmt(r['eager_ms']):>10} {_fmt(r['eager_ms_repeat']):>10} "
              f"{_fmt(r['compile_ms']):>10} {_fmt(r.get('eager_host_ms')):>10} {_fmt(r.get('compile_host_ms')):>10}  {check}")


def build_arg_parser():
    p = argparse.ArgumentParser(
        description="Time PyTorch eager (cuDNN) and torch.compile on the conv2d and fused-block "
                    "(mbconv, fused_mbconv, ffn, convfirst, convnext) and stem workloads of a suite.")
    p.add_argument("--suite", required=True, help="suite file: lines '<name> <key>', '#' comments")
    p.add_argument("--out", required=True, help="output JSON path")
    p.add_argument("--dtype", choices=DTYPES, default=None,
                   help="run only the workloads (conv2d and blocks) of this dtype (a filter, as the "
                        "C++ harness's --dtype)")
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME", default=None,
                   help="run only these workload names (may be repeated)")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile (eager only)")
    p.add_argument("--seed", type=int, default=0, help="random seed for inputs (default 0)")
    p.add_argument("--cudagraph", action="store_true",
                   help="also time eager and compiled replayed from a CUDA graph "
                        "(triton.testing.do_bench_cudagraph: no host launch overhead, no L2 flush) "
                        "into eager_graph_ms / compile_graph_ms")
    p.add_argument("--l2-flush", choices=("write", "read"), default="write",
                   help="before each timed call: write = do_bench's memset flush (leaves the L2 dirty), "
                        "read = a read-only eviction (clean L2), as the C++ harness's --l2-flush")
    p.add_argument("--no-tf32", action="store_true",
                   help="disable TF32 in cuDNN/cuBLAS for f32 workloads (PyTorch's default allows "
                        "TF32 convolutions; the setting is recorded in the context either way)")
    return p


def main(argv=None):
    args = build_arg_parser().parse_args(argv)
    global L2_FLUSH
    L2_FLUSH = args.l2_flush
    try:
        entries = load_suite(args.suite)
    except WorkloadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    entries, unknown = select_entries(entries, args.only, args.dtype)
    if unknown:
        print(f"error: --only names not in {args.suite}: {', '.join(unknown)}", file=sys.stderr)
        return 2

    import torch

    if not torch.cuda.is_available():
        print("error: CUDA is not available (this baseline times GPU kernels)", file=sys.stderr)
        return 2
    torch.backends.cudnn.benchmark = True
    if args.no_tf32:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False

    # bench/results.schema.json: "results" holds a row per workload and mode (pytorch-eager, pytorch-compile),
    # "workloads" the full record per workload (both modes, their checks, compile times) that merge and report read.
    doc = {"schema_version": results_schema.SCHEMA_VERSION, "context": _context(args), "results": [],
           "workloads": [], "skipped": []}
    n_errors = 0
    for i, (name, key) in enumerate(entries, 1):
        family = key_family(key)
        if family not in SUPPORTED_FAMILIES:
            note = f"family '{family}' is not supported by this baseline" if family else "key has no family"
            print(f"[{i}/{len(entries)}] skip {name}: {note}")
            doc["skipped"].append({"name": name, "key": key, "reason": note})
            continue
        print(f"[{i}/{len(entries)}] {name} {key}", flush=True)
        run = (run_workload if family == "conv2d" else run_stem_workload if family == "stem"
               else run_block_workload)
        try:
            rec = run(name, key, not args.no_compile, args.seed, args.cudagraph)
        except Exception as e:  # record and carry on with the next workload
            n_errors += 1
            wl = _safe_parse(key)
            rec = {"name": name, "key": to_key(wl) if wl else key, "suite_key": key,
                   "dtype": wl.dtype if wl else None}
            if family != "conv2d":
                rec["family"] = family
                rec["flops"] = workload_flops(wl) if wl else None
            rec.update({"eager_ms": None, "eager_ms_repeat": None, "compile_ms": None,
                        "compile_error": None, "error": f"{type(e).__name__}: {e}",
                        "traceback": traceback.format_exc()})
            print(f"    error: {rec['error']}", file=sys.stderr)
        doc["workloads"].append(rec)
        doc["results"] = results_schema.torch_rows(doc["workloads"])
        _write_json(args.out, doc)  # after every workload: partial results survive a crash
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass

    _write_json(args.out, doc)
    print()
    print_table(doc["workloads"])
    print(f"\nwrote {args.out} ({len(doc['workloads'])} workloads, {len(doc['skipped'])} skipped, "
          f"{n_errors} errors)")
    return 1 if n_errors else 0


def select_entries(entries, only=None, dtype=None):
    """Applies --only (names) and --dtype (a filter on conv2d and block keys, as the C++ harness's).
    Keys that do not parse and other families are kept: they are reported per workload.
    Returns (entries kept, --only names missing from the suite)."""
    if only:
        names = {n for n, _ in entries}
        unknown = [n for n in only if n not in names]
        if unknown:
            return [], unknown
        entries = [(n, k) for n, k in entries if n in set(only)]
    if dtype:
        def keep(key):
            wl = _safe_parse(key)
            return wl is None or wl.dtype == dtype
        entries = [(n, k) for n, k in entries if keep(k)]
    return entries, []


def _safe_parse(key):
    """The conv2d, block or stem workload of a key; None for other families and unparsable keys."""
    family = key_family(key)
    if family not in SUPPORTED_FAMILIES:
        return None
    try:
        return parse_key(key)
    except WorkloadError:
        return None


if __name__ == "__main__":
    sys.exit(main())
