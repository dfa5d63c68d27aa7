"""Stand-ins for torchvision's modules (class names and attributes as torchvision 0.26 has them, parameters
as float64 numpy arrays) and a float64 numpy forward of each, as torchvision computes it: what the matcher
and the folding are tested against without torch."""
import math

import numpy as np


class Mod:
    training = False

    def __init__(self, **kw):
        self._children = []
        for k, v in kw.items():
            setattr(self, k, v)

    def add(self, name, m):
        self._children.append((name, m))
        setattr(self, name, m)
        return self

    def named_children(self):
        return iter(self._children)


def cls(name):
    return type(name, (Mod,), {})


Sequential = cls("Sequential")
Conv2dNormActivation = cls("Conv2dNormActivation")
BatchNorm2d, LayerNorm, Linear, Permute = cls("BatchNorm2d"), cls("LayerNorm"), cls("Linear"), cls("Permute")
ReLU, ReLU6, SiLU, Sigmoid, Hardswish = cls("ReLU"), cls("ReLU6"), cls("SiLU"), cls("Sigmoid"), cls("Hardswish")
GELU = cls("GELU")
InvertedResidual, MBConv, FusedMBConv, CNBlock = cls("InvertedResidual"), cls("MBConv"), cls("FusedMBConv"), cls("CNBlock")
SqueezeExcitation = cls("SqueezeExcitation")
Conv2d = cls("Conv2d")


def seq(*mods, kind=Sequential):
    s = kind()
    for i, m in enumerate(mods):
        s.add(str(i), m)
    return s


def conv(rng, cin, cout, k, stride=1, groups=1, pad=None, bias=False):
    fan = cin // groups * k * k
    return Conv2d(in_channels=cin, out_channels=cout, kernel_size=(k, k), stride=(stride, stride),
                  padding=(k // 2 if pad is None else pad,) * 2, dilation=(1, 1), groups=groups, padding_mode="zeros",
                  weight=rng.uniform(-1, 1, (cout, cin // groups, k, k)) / math.sqrt(fan),
                  bias=rng.uniform(-0.5, 0.5, cout) if bias else None)


def bn(rng, c, eps=1e-5):
    return BatchNorm2d(eps=eps, track_running_stats=True, running_mean=rng.uniform(-0.3, 0.3, c),
                       running_var=rng.uniform(0.5, 2.0, c), weight=rng.uniform(0.5, 1.5, c), bias=rng.uniform(-0.3, 0.3, c))


def cna(rng, cin, cout, k, stride=1, groups=1, act=ReLU6):
    mods = [conv(rng, cin, cout, k, stride, groups), bn(rng, cout)]
    if act is not None:
        mods.append(act())
    return seq(*mods, kind=Conv2dNormActivation)


def inverted_residual(rng, inp, oup, stride, t):
    """torchvision.models.mobilenetv2.InvertedResidual"""
    hidden = inp * t
    layers = [cna(rng, inp, hidden, 1)] if t != 1 else []
    layers += [cna(rng, hidden, hidden, 3, stride, hidden), conv(rng, hidden, oup, 1), bn(rng, oup)]
    m = InvertedResidual(stride=stride, use_res_connect=stride == 1 and inp == oup)
    return m.add("conv", seq(*layers))


def mbconv(rng, inp, oup, k, stride, t):
    """torchvision.models.efficientnet.MBConv (SqueezeExcitation to max(1, inp // 4), SiLU)"""
    hidden = inp * t
    layers = [cna(rng, inp, hidden, 1, act=SiLU)] if t != 1 else []
    sq = max(1, inp // 4)
    se = SqueezeExcitation().add("fc1", conv(rng, hidden, sq, 1, bias=True)).add("fc2", conv(rng, sq, hidden, 1, bias=True))
    se.add("activation", SiLU()).add("scale_activation", Sigmoid())
    layers += [cna(rng, hidden, hidden, k, stride, hidden, act=SiLU), se, cna(rng, hidden, oup, 1, act=None)]
    m = MBConv(use_res_connect=stride == 1 and inp == oup)
    return m.add("block", seq(*layers))


def fused_mbconv(rng, inp, oup, k, stride, t):
    hidden = inp * t
    layers = [cna(rng, inp, hidden, k, stride, act=SiLU), cna(rng, hidden, oup, 1, act=None)]
    return FusedMBConv(use_res_connect=stride == 1 and inp == oup).add("block", seq(*layers))


def cnblock(rng, dim, approximate="none", eps=1e-6):
    """torchvision.models.convnext.CNBlock with random LayerNorm affine and layer scale"""
    hidden = 4 * dim
    dw = conv(rng, dim, dim, 7, 1, dim, bias=True)
    ln = LayerNorm(normalized_shape=(dim,), eps=eps, weight=rng.uniform(0.5, 1.5, dim), bias=rng.uniform(-0.3, 0.3, dim))
    fc1 = Linear(in_features=dim, out_features=hidden, weight=rng.uniform(-1, 1, (hidden, dim)) / math.sqrt(dim),
                 bias=rng.uniform(-0.3, 0.3, hidden))
    fc2 = Linear(in_features=hidden, out_features=dim, weight=rng.uniform(-1, 1, (dim, hidden)) / math.sqrt(hidden),
                 bias=rng.uniform(-0.3, 0.3, dim))
    block = seq(dw, Permute(), ln, fc1, GELU(approximate=approximate), fc2, Permute())
    ls = rng.uniform(0.2, 1.0, (dim, 1, 1))
    return CNBlock(layer_scale=ls).add("block", block)


# ---- float64 forward, NCHW, as torchvision computes it ----

def conv2d(x, w, b=None, stride=(1, 1), pad=(0, 0, 0, 0), groups=1):
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    oh = (h + pad[0] + pad[1] - r) // stride[0] + 1
    ow = (wd + pad[2] + pad[3] - s) // stride[1] + 1
    out = np.zeros((n, k, oh, ow))
    kg = k // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * kg:(g + 1) * kg]
        for i in range(r):
            for j in range(s):
                patch = xs[:, :, i:i + stride[0] * oh:stride[0], j:j + stride[1] * ow:stride[1]]
                out[:, g * kg:(g + 1) * kg] += np.einsum("nchw,kc->nkhw", patch, ws[:, :, i, j])
    if b is not None:
        out += np.asarray(b)[None, :, None, None]
    return out


ERF = np.frompyfunc(math.erf, 1, 1)


def act(name, x):
    if name == "none":
        return x
    if name == "relu":
        return np.maximum(x, 0)
    if name == "relu6":
        return np.clip(x, 0, 6)
    if name == "silu":
        return x / (1 + np.exp(-x))
    if name == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "gelu_erf":
        return 0.5 * x * (1 + ERF(x / math.sqrt(2)).astype(np.float64))
    if name == "gelu":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError(name)


ACT_NAME = {"ReLU": "relu", "ReLU6": "relu6", "SiLU": "silu", "Sigmoid": "sigmoid"}


def forward(m, x):
    t = type(m).__name__
    if t == "Conv2d":
        return conv2d(x, m.weight, m.bias, m.stride, (m.padding[0],) * 2 + (m.padding[1],) * 2, m.groups)
    if t == "BatchNorm2d":
        s = m.weight / np.sqrt(m.running_var + m.eps)
        return (x - m.running_mean[None, :, None, None]) * s[None, :, None, None] + m.bias[None, :, None, None]
    if t in ACT_NAME:
        return act(ACT_NAME[t], x)
    if t == "GELU":
        return act("gelu_erf" if m.approximate == "none" else "gelu", x)
    if t in ("Sequential", "Conv2dNormActivation"):
        for _, c in m.named_children():
            x = forward(c, x)
        return x
    if t == "InvertedResidual":
        y = forward(m.conv, x)
        return x + y if m.use_res_connect else y
    if t in ("MBConv", "FusedMBConv"):
        y = forward(m.block, x)
        return x + y if m.use_res_connect else y
    if t == "SqueezeExcitation":
        s = x.mean(axis=(2, 3), keepdims=True)
        s = forward(m.scale_activation, forward(m.fc2, forward(m.activation, forward(m.fc1, s))))
        return x * s
    if t == "CNBlock":
        return cnblock_forward(m, x)
    raise ValueError(t)


def _cn_layer(c, y, dim):
    # CNBlock's layers on NHWC after the first Permute; the last Permute goes back to NCHW
    t = type(c).__name__
    if t == "Conv2d":
        return conv2d(y, c.weight, c.bias, c.stride, (c.padding[0],) * 2 + (c.padding[1],) * 2, c.groups)
    if t == "LayerNorm":
        mu = y.mean(-1, keepdims=True)
        var = ((y - mu) ** 2).mean(-1, keepdims=True)
        return (y - mu) / np.sqrt(var + c.eps) * c.weight + c.bias
    if t == "Linear":
        return y @ c.weight.T + c.bias
    if t == "GELU":
        return act("gelu_erf" if c.approximate == "none" else "gelu", y)
    raise ValueError(t)


def cnblock_forward(m, x):
    """CNBlock exactly: dw conv (NCHW) -> NHWC -> LN -> Linear -> GELU -> Linear -> NCHW, scaled, + x."""
    ch = [c for _, c in m.block.named_children()]
    y = _cn_layer(ch[0], x, x.shape[1]).transpose(0, 2, 3, 1)
    for c in ch[2:6]:
        y = _cn_layer(c, y, x.shape[1])
    return x + m.layer_scale[None] * y.transpose(0, 3, 1, 2)


# ---- float64 forward of the blockfuse side: the block families' math on folded weights ----

def kernel_weight_to_torch(w):
    """(R, S, Cg, K) -> (K, Cg, R, S)"""
    return np.asarray(w).transpose(3, 2, 0, 1)


def family_forward(shape, folded, x):
    """generators/block_spec.h's layers on the kernels' folded weights (float64, nothing rounded)."""
    from blockfuse.match import BlockShape  # noqa: F401  (shape is one)
    c, e, k, s = shape.c, shape.e, shape.k, shape.stride
    E = c * e
    W = [kernel_weight_to_torch(w) for w, _ in folded]
    B = [b for _, b in folded]
    if shape.family == "mbconv":
        h = act(shape.act, conv2d(x, W[0], B[0]))
        h = act(shape.act, conv2d(h, W[1], B[1], (s, s), (k // 2,) * 4, E))
        if shape.se:
            pooled = h.mean(axis=(2, 3), keepdims=True)
            z = act(shape.act, conv2d(pooled, W[3], B[3]))
            gate = 1 / (1 + np.exp(-conv2d(z, W[4], B[4])))
            h = h * gate
        y = conv2d(h, W[2], B[2])
    elif shape.family == "fused_mbconv":
        h = act(shape.act, conv2d(x, W[0], B[0], (s, s), (k // 2,) * 4))
        y = conv2d(h, W[1], B[1])
    elif shape.family == "convnext":
        h = conv2d(x, W[0], B[0], (1, 1), (k // 2,) * 4, c)
        mu = h.mean(1, keepdims=True)
        var = ((h - mu) ** 2).mean(1, keepdims=True)
        h = (h - mu) / np.sqrt(var + 1e-6)
        h = act(shape.act, conv2d(h, W[1], B[1]))
        y = conv2d(h, W[2], B[2])
    else:
        raise ValueError(shape.family)
    return y + x if s == 1 else y


def conv_forward(layer, folded, x):
    (w, b), = folded
    return act(layer.act, conv2d(x, kernel_weight_to_torch(w), b, layer.stride, layer.pad, layer.groups))
