"""Which modules of a network blockfuse can serve, decided from the module tree alone (duck-typed: class
names and the attributes torchvision's modules have), so it runs, and is tested, without torch.

plan(model) walks the tree and returns, in network order, one Entry per candidate:
  kind "block": a torchvision block that is exactly one of the fused block families (MobileNetV2
                InvertedResidual, EfficientNet MBConv with SE and FusedMBConv, ConvNeXt CNBlock);
  kind "conv":  a Conv2d with the BatchNorm2d and activation after it (Conv2dNormActivation, or a run of
                siblings in a Sequential), or a bare Conv2d: one conv2d kernel with BN folded;
  kind "left":  a block that is not exactly a family, with the reason; its Conv-BN-act runs are still
                offered as "conv" entries (convs=True).
Folding (fold_entry) turns an entry's modules into the kernels' weights, in their ABI order and layout.
"""
from dataclasses import dataclass, field
from typing import Any, List, Tuple

import numpy as np

from blockfuse import fold

LAYER_NORM_EPS = 1e-6  # generators/block_spec.h kLayerNormEps

ACT_CLASSES = {"ReLU": "relu", "ReLU6": "relu6", "SiLU": "silu", "Sigmoid": "sigmoid"}


def act_of(m):
    """The blockfuse activation of an activation module, or None if blockfuse has none for it."""
    t = type(m).__name__
    if t == "GELU":
        return {"none": "gelu_erf", "tanh": "gelu"}.get(getattr(m, "approximate", "none"))
    return ACT_CLASSES.get(t)


def is_act(m):
    return type(m).__name__ in ACT_CLASSES or type(m).__name__ == "GELU"


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


@dataclass
class ConvLayer:
    """One convolution as a conv2d kernel computes it: BN folded into weights and bias, then act."""
    c: int
    k: int
    r: int
    s: int
    stride: Tuple[int, int]
    pad: Tuple[int, int, int, int]  # top, bottom, left, right
    dil: Tuple[int, int]
    groups: int
    act: str = "none"

    def out_hw(self, h, w):
        return ((h + self.pad[0] + self.pad[1] - self.dil[0] * (self.r - 1) - 1) // self.stride[0] + 1,
                (w + self.pad[2] + self.pad[3] - self.dil[1] * (self.s - 1) - 1) // self.stride[1] + 1)

    def key(self, n, h, w, dtype):
        st = f"stride={self.stride[0]}" if self.stride[0] == self.stride[1] else \
            f"stride_h={self.stride[0]},stride_w={self.stride[1]}"
        p = self.pad
        pd = f"pad={p[0]}" if len(set(p)) == 1 else f"pad_t={p[0]},pad_b={p[1]},pad_l={p[2]},pad_r={p[3]}"
        dl = "" if self.dil == (1, 1) else (f",dil={self.dil[0]}" if self.dil[0] == self.dil[1] else
                                            f",dil_h={self.dil[0]},dil_w={self.dil[1]}")
        act = "" if self.act == "none" else f",act={self.act}"
        return (f"conv2d:n={n},c={self.c},h={h},w={w},k={self.k},r={self.r},s={self.s},{st},{pd}{dl},"
                f"groups={self.groups},bias=1{act},dtype={dtype}")


@dataclass
class BlockShape:
    """A block of one family (generators/block_spec.h): c channels in and out, hidden c*e."""
    family: str
    c: int
    e: int
    k: int = 3
    stride: int = 1
    se: bool = False
    act: str = "relu6"

    def out_hw(self, h, w):
        return (h - 1) // self.stride + 1, (w - 1) // self.stride + 1

    def key(self, n, h, w, dtype):
        ks = "" if self.family == "ffn" else f",k={self.k},stride={self.stride}"
        se = ",se=1" if self.se else ""
        return f"{self.family}:n={n},c={self.c},h={h},w={w},e={self.e}{ks}{se},act={self.act},dtype={dtype}"


@dataclass
class Entry:
    path: str                 # the module replaced (dotted path from the model)
    module_type: str          # its class, e.g. InvertedResidual, Conv2dNormActivation
    kind: str                 # block | conv | left
    shape: Any = None         # BlockShape or ConvLayer
    parts: dict = field(default_factory=dict)  # the modules folding reads
    identity: List[str] = field(default_factory=list)  # siblings the replacement absorbs (-> Identity)
    reason: str = ""          # kind left: why


def _children(m):
    return list(m.named_children())


def _conv_shape(conv, act="none"):
    """ConvLayer of a Conv2d module, or a reason string."""
    if type(conv).__name__ != "Conv2d":
        return f"{type(conv).__name__} is not a Conv2d"
    if getattr(conv, "padding_mode", "zeros") != "zeros":
        return f"padding_mode '{conv.padding_mode}' (blockfuse pads with zeros)"
    if isinstance(conv.padding, str):
        return f"padding='{conv.padding}' (give explicit padding)"
    r, s = _pair(conv.kernel_size)
    ph, pw = _pair(conv.padding)
    return ConvLayer(conv.in_channels, conv.out_channels, r, s, _pair(conv.stride), (ph, ph, pw, pw),
                     _pair(conv.dilation), conv.groups, act)


def _cna(m):
    """(conv, bn, act name) of a Conv2dNormActivation-like Sequential [Conv2d, BatchNorm2d, act?], or a reason."""
    ch = [c for _, c in _children(m)]
    if len(ch) < 2 or type(ch[0]).__name__ != "Conv2d" or type(ch[1]).__name__ != "BatchNorm2d":
        return f"{type(m).__name__} is not Conv2d-BatchNorm2d[-activation]"
    if len(ch) > 3:
        return f"{type(m).__name__} has {len(ch)} layers"
    act = "none"
    if len(ch) == 3:
        act = act_of(ch[2])
        if act is None:
            return f"activation {type(ch[2]).__name__} has no blockfuse kernel"
    return ch[0], ch[1], act


def _bn_ok(bn):
    if not getattr(bn, "track_running_stats", True) or getattr(bn, "running_mean", None) is None:
        return "BatchNorm2d without running statistics (nothing to fold)"
    return None


def _is_1x1(c):
    return _pair(c.kernel_size) == (1, 1) and _pair(c.stride) == (1, 1) and c.groups == 1 and \
        _pair(c.padding) == (0, 0)


def _is_dw(c, channels):
    k, k2 = _pair(c.kernel_size)
    return (k == k2 and k % 2 == 1 and c.groups == channels == c.in_channels == c.out_channels and
            _pair(c.padding) == (k // 2, k // 2) and _pair(c.dilation) == (1, 1) and _pair(c.stride)[0] == _pair(c.stride)[1]
            and getattr(c, "padding_mode", "zeros") == "zeros")


def _same_k(c):
    k, k2 = _pair(c.kernel_size)
    return (k == k2 and k % 2 == 1 and c.groups == 1 and _pair(c.padding) == (k // 2, k // 2) and
            _pair(c.dilation) == (1, 1) and _pair(c.stride)[0] == _pair(c.stride)[1] and
            getattr(c, "padding_mode", "zeros") == "zeros")


def _residual_reason(stride, cin, cout):
    return (f"no residual (stride {_pair(stride)[0]}, {cin}->{cout} channels): the block families keep their "
            "channel count and add the residual")


def match_inverted_residual(m):
    """torchvision MobileNetV2 InvertedResidual -> mbconv, or a reason."""
    seq = [c for _, c in _children(m.conv)]
    if len(seq) == 3:
        return "no expand layer (expand ratio 1): an mbconv block starts with its 1x1 expansion"
    if len(seq) != 4:
        return f"{len(seq)} layers, not expand-depthwise-project"
    e, d = _cna(seq[0]), _cna(seq[1])
    for x in (e, d):
        if isinstance(x, str):
            return x
    proj, pbn = seq[2], seq[3]
    cin, cout = e[0].in_channels, proj.out_channels
    if not getattr(m, "use_res_connect", False):
        return _residual_reason(d[0].stride, cin, cout)
    return _mbconv_from(cin, cout, [e, d, (proj, pbn, "none")], None)


def _mbconv_from(cin, cout, layers, se):
    (ec, eb, ea), (dc, db, da), (pc, pb, pa) = layers
    if type(pc).__name__ != "Conv2d" or type(pb).__name__ != "BatchNorm2d":
        return "the projection is not Conv2d-BatchNorm2d"
    hidden = ec.out_channels
    if cin != cout:
        return f"{cin}->{cout} channels: the mbconv family keeps its channel count"
    if not _is_1x1(ec) or not _is_1x1(pc) or pc.in_channels != hidden:
        return "the expand or project layer is not a plain 1x1 convolution"
    if not _is_dw(dc, hidden):
        return "the depthwise layer is not a same-padded odd depthwise convolution"
    if hidden % cin:
        return f"hidden width {hidden} is not a multiple of {cin} channels"
    if ea != da or pa != "none":
        return f"activations {ea}/{da}/{pa}: the mbconv family has one activation after expand and depthwise"
    for bn in (eb, db, pb):
        if _bn_ok(bn):
            return _bn_ok(bn)
    stride = _pair(dc.stride)[0]
    if stride != 1:
        return "stride 2 without residual"
    parts = {"layers": [(ec, eb), (dc, db), (pc, pb)]}
    if se is not None:
        parts["se"] = se
    return BlockShape("mbconv", cin, hidden // cin, _pair(dc.kernel_size)[0], stride, se is not None, ea), parts


def match_mbconv(m):
    """torchvision EfficientNet MBConv (with Squeeze-Excitation) -> mbconv se=1, or a reason."""
    seq = [c for _, c in _children(m.block)]
    if len(seq) == 3:
        return "no expand layer (expand ratio 1): an mbconv block starts with its 1x1 expansion"
    if len(seq) != 4 or type(seq[2]).__name__ != "SqueezeExcitation":
        return "not expand-depthwise-SqueezeExcitation-project"
    e, d, p = _cna(seq[0]), _cna(seq[1]), _cna(seq[3])
    for x in (e, d, p):
        if isinstance(x, str):
            return x
    cin, cout = e[0].in_channels, p[0].out_channels
    if not getattr(m, "use_res_connect", False):
        return _residual_reason(d[0].stride, cin, cout)
    se = seq[2]
    sq = se.fc1.out_channels
    if sq != max(1, cin // 4):
        return f"Squeeze-Excitation squeezes to {sq} channels; the kernels squeeze to max(1, c/4) = {max(1, cin // 4)}"
    if act_of(se.activation) != e[2] or type(se.scale_activation).__name__ != "Sigmoid":
        return (f"Squeeze-Excitation with {type(se.activation).__name__}/{type(se.scale_activation).__name__}: the kernels "
                "use the block's activation and a sigmoid gate")
    return _mbconv_from(cin, cout, [e, d, p], (se.fc1, se.fc2))


def match_fused_mbconv(m):
    """torchvision EfficientNetV2 FusedMBConv -> fused_mbconv, or a reason."""
    seq = [c for _, c in _children(m.block)]
    if len(seq) == 1:
        return "no expansion (expand ratio 1): a fused_mbconv block expands in its kxk layer"
    if len(seq) != 2:
        return "not expand-project"
    e, p = _cna(seq[0]), _cna(seq[1])
    for x in (e, p):
        if isinstance(x, str):
            return x
    (ec, eb, ea), (pc, pb, pa) = e, p
    cin, cout, hidden = ec.in_channels, pc.out_channels, ec.out_channels
    if not getattr(m, "use_res_connect", False):
        return _residual_reason(ec.stride, cin, cout)
    if not _same_k(ec) or not _is_1x1(pc) or pa != "none" or hidden % cin:
        return "not a same-padded kxk expansion and a plain 1x1 projection"
    for bn in (eb, pb):
        if _bn_ok(bn):
            return _bn_ok(bn)
    if _pair(ec.stride)[0] != 1:
        return "stride 2 without residual"
    return (BlockShape("fused_mbconv", cin, hidden // cin, _pair(ec.kernel_size)[0], 1, False, ea),
            {"layers": [(ec, eb), (pc, pb)]})


def match_cnblock(m):
    """torchvision ConvNeXt CNBlock -> convnext (LayerNorm affine folded into the expansion, layer scale into
    the projection), or a reason."""
    seq = [c for _, c in _children(m.block)]
    names = [type(c).__name__ for c in seq]
    if names != ["Conv2d", "Permute", "LayerNorm", "Linear", "GELU", "Linear", "Permute"]:
        return "not depthwise-LayerNorm-Linear-GELU-Linear"
    dw, ln, fc1, gelu, fc2 = seq[0], seq[2], seq[3], seq[4], seq[5]
    dim = dw.in_channels
    if not _is_dw(dw, dim) or _pair(dw.stride) != (1, 1):
        return "the first layer is not a same-padded stride-1 depthwise convolution"
    if tuple(ln.normalized_shape) != (dim,):
        return f"LayerNorm over {tuple(ln.normalized_shape)}, not the {dim} channels"
    if abs(ln.eps - LAYER_NORM_EPS) > 1e-12:
        return f"LayerNorm eps {ln.eps:g}: the kernels normalize with eps {LAYER_NORM_EPS:g}"
    hidden = fc1.out_features
    if fc1.in_features != dim or fc2.in_features != hidden or fc2.out_features != dim or hidden % dim:
        return "the MLP is not dim -> e*dim -> dim"
    act = act_of(gelu)
    if act is None:
        return f"GELU approximate='{gelu.approximate}'"
    ls = getattr(m, "layer_scale", None)
    if ls is not None and int(np.prod(tuple(ls.shape))) != dim:
        return "layer scale is not one value per channel"
    return (BlockShape("convnext", dim, hidden // dim, _pair(dw.kernel_size)[0], 1, False, act),
            {"dw": dw, "ln": ln, "fc1": fc1, "fc2": fc2, "layer_scale": ls})


BLOCK_MATCHERS = {"InvertedResidual": match_inverted_residual, "MBConv": match_mbconv,
                  "FusedMBConv": match_fused_mbconv, "CNBlock": match_cnblock}
# Modules whose insides are not searched for convolutions: Squeeze-Excitation's 1x1 "convolutions" run
# on a 1x1 pooled image (left to PyTorch with the block they belong to).
OPAQUE = {"SqueezeExcitation": "Squeeze-Excitation of a block that is not fused: its global mean needs the "
                                "whole depthwise output; the mbconv family fuses it only inside a whole block"}


def _join(path, name):
    return f"{path}.{name}" if path else name


def _conv_runs(m, path):
    """Conv2d [BatchNorm2d] [activation] runs among m's children: (entry, names consumed)."""
    ch = _children(m)
    out, i = [], 0
    while i < len(ch):
        name, c = ch[i]
        if type(c).__name__ != "Conv2d":
            i += 1
            continue
        j, bn, act = i + 1, None, "none"
        if j < len(ch) and type(ch[j][1]).__name__ == "BatchNorm2d" and not _bn_ok(ch[j][1]):
            bn, j = ch[j][1], j + 1
        if j < len(ch) and is_act(ch[j][1]) and act_of(ch[j][1]):
            act, j = act_of(ch[j][1]), j + 1
        shape = _conv_shape(c, act)
        names = [n for n, _ in ch[i:j]]
        if isinstance(shape, str):
            out.append((Entry(_join(path, name), "Conv2d", "left", reason=shape), names[:1]))
        else:
            out.append((Entry(_join(path, name), "Conv2d", "conv", shape, {"conv": c, "bn": bn},
                              [_join(path, n) for n in names[1:]]), names))
        i = j
    return out


def plan(model, convs=True):
    """Entries (see the module doc) of `model`, in the order of its module tree."""
    entries = []

    def visit(m, path):
        t = type(m).__name__
        if t in BLOCK_MATCHERS:
            res = BLOCK_MATCHERS[t](m)
            if not isinstance(res, str):
                shape, parts = res
                entries.append(Entry(path, t, "block", shape, parts))
                return
            entries.append(Entry(path, t, "left", reason=res))
        if t in OPAQUE:
            entries.append(Entry(path, t, "left", reason=OPAQUE[t]))
            return
        if convs:
            runs = _conv_runs(m, path)
            # A Conv2dNormActivation that is exactly one run is replaced whole.
            if t == "Conv2dNormActivation" and len(runs) == 1 and runs[0][0].kind == "conv" and \
                    len(runs[0][1]) == len(_children(m)):
                e = runs[0][0]
                entries.append(Entry(path, t, "conv", e.shape, e.parts))
                return
            starts = {names[0]: (e, names) for e, names in runs}
            consumed = {n for _, names in runs for n in names}
            for name, c in _children(m):  # in network order
                if name in starts:
                    entries.append(starts[name][0])
                elif name not in consumed:
                    visit(c, _join(path, name))
        else:
            for name, c in _children(m):
                visit(c, _join(path, name))

    visit(model, "")
    return entries


def _np(t):
    if t is None:
        return None
    if hasattr(t, "detach"):
        return t.detach().double().cpu().numpy()
    return np.asarray(t, dtype=np.float64)


def _folded(conv, bn):
    w, b = _np(conv.weight), _np(conv.bias)
    if bn is not None:
        w, b = fold.fold_batchnorm(w, b, _np(bn.weight), _np(bn.bias), _np(bn.running_mean), _np(bn.running_var),
                                   bn.eps)
    elif b is None:
        b = np.zeros(w.shape[0])
    return w, b


def fold_entry(e):
    """The kernel's weights and biases of an entry, float64, in its ABI order: [(weight (R, S, Cg, K), bias
    (K))...] per layer, then Squeeze-Excitation's reduce and expand."""
    if e.kind == "conv":
        w, b = _folded(e.parts["conv"], e.parts["bn"])
        return [(fold.conv_weight_layout(w), b)]
    if e.shape.family == "convnext":
        p = e.parts
        dw_w, dw_b = _folded(p["dw"], None)
        w1, b1 = fold.fold_layernorm_affine(_np(p["ln"].weight), _np(p["ln"].bias), _np(p["fc1"].weight),
                                            _np(p["fc1"].bias))
        w2, b2 = _np(p["fc2"].weight), _np(p["fc2"].bias)
        if p["layer_scale"] is not None:
            w2, b2 = fold.fold_layer_scale(w2, b2, _np(p["layer_scale"]))
        return [(fold.conv_weight_layout(dw_w), dw_b), (fold.conv_weight_layout(w1), b1),
                (fold.conv_weight_layout(w2), b2)]
    out = [(fold.conv_weight_layout(w), b) for w, b in (_folded(c, bn) for c, bn in e.parts["layers"])]
    if "se" in e.parts:
        for c in e.parts["se"]:
            w, b = _folded(c, None)
            out.append((fold.conv_weight_layout(w), b))
    return out


def shapes_through(entries, input_shapes):
    """Workload keys of planned entries given each entry's input (n, h, w) and the dtype: [(entry, key)]."""
    return [(e, e.shape.key(*input_shapes[e.path])) for e in entries if e.kind in ("block", "conv")]
