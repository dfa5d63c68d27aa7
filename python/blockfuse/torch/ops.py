"""blockfuse kernels as PyTorch custom ops (torch.library), with fake implementations so torch.compile and
FakeTensor tracing see their output shapes without running them.

  torch.ops.blockfuse.conv2d(x, weight, bias, stride, padding, dilation, groups, act, strategy) -> Tensor
  torch.ops.blockfuse.conv2d_out(..., out) -> ()                        (writes the caller's `out`)
  torch.ops.blockfuse.<family>(x, weights, biases, expansion, kernel, stride, se, act, strategy) -> Tensor
  torch.ops.blockfuse.<family>_out(..., out) -> ()      family: mbconv fused_mbconv ffn convfirst convnext

x and out: (N, C, H, W) CUDA tensors in channels_last memory, float16, bfloat16 or float32. Weights in the
kernels' layout (R, S, Cg, K) dense (conv_weight() makes it from PyTorch's (K, Cg, R, S)), the storage
dtype; biases (K) float32; blocks take theirs per layer in order, then Squeeze-Excitation's reduce and
expand. A kernel runs on PyTorch's current stream of x's device, in that device's primary context, on
PyTorch's memory (outputs from its caching allocator, or `out`); nothing is copied. A kernel the
dispatcher picks that reads f32 weights gets them widened once per weight tensor (kept while it lives).

BLOCKFUSE_TORCH_CPU=1 lets the ops take CPU tensors and run blockfuse's CPU kernels: for tests on
machines without a GPU; not a supported way to run a model."""
import os
import weakref
from typing import List

import torch

from blockfuse import checks
from blockfuse._lib import Kernel
from blockfuse.match import BlockShape, ConvLayer

_kernels = {}
_f32_weights = weakref.WeakKeyDictionary()
_tc_weights = weakref.WeakKeyDictionary()


def allow_cpu():
    return os.environ.get("BLOCKFUSE_TORCH_CPU") == "1"


def _cpu_ok(x):
    # read only for CPU tensors: the CUDA path pays no environment lookup per call
    return x.device.type == "cpu" and allow_cpu()


def conv_weight(w):
    """PyTorch's conv weight (K, Cg, R, S) or linear weight (K, C) -> the kernels' (R, S, Cg, K), dense."""
    if w.dim() == 2:
        w = w[:, :, None, None]
    return w.permute(2, 3, 1, 0).contiguous()


def kernel(key, strategy="", device="cuda"):
    """The opened (and loaded) kernel of a workload key, once per process."""
    k = (key, strategy or "", device)
    if k not in _kernels:
        kern = Kernel(key, strategy, device)
        kern.bound = {}  # _bind's argument arrays
        _kernels[k] = kern
    return _kernels[k]


def _device_kind(x):
    return "cpu" if x.device.type == "cpu" else "cuda"


def _fill_activation(a, t):
    # (N, C, H, W) channels_last -> Halide (c, x, y, n)
    n, c, h, w = t.shape
    sn, sc, sh, sw = t.stride()
    a.data = t.data_ptr()
    a.extents[0], a.extents[1], a.extents[2], a.extents[3] = c, w, h, n
    a.strides[0], a.strides[1], a.strides[2], a.strides[3] = 1, sw, sh, sn


def _fill_dense(a, t):
    # a dense tensor's dimensions reversed: (R, S, Cg, K) -> (k, cg, kx, ky); (K) -> (k)
    a.data = t.data_ptr()
    shape, stride = t.shape, t.stride()
    d = len(shape)
    for i in range(d):
        a.extents[i] = shape[d - 1 - i]
        a.strides[i] = stride[d - 1 - i]


def tensor_core_weight(w, groups=1):
    """(R, S, Cg, K) weights -> the tensor-core kernels' layout (K, R*S*Cp), the reduction index r, s, c
    innermost, Cp = Cg rounded up to 8 with zero channels (runtime/c_api.cpp's "_tc" tensors, their
    "dense_extents" the (R, S, Cg, K) they come from); made once per weight tensor (kept while it lives).
    One group of C <= 4 channels (generators/conv_windows.h, packed_taps): g = 8 // C taps to each 8 of a row,
    (K, 8 * ceil(R*S / g)), tap t's channels at t // g * 8 + t % g * C.
    Grouped (generators/conv_windows.h): the output channels in windows of a group (K / groups a multiple of 8) or
    of 8 channels (holding 8 / (K / groups) groups); row k holds its window's input channels, Cp those rounded up
    to 8, zero but for k's own group."""
    made = _tc_weights.setdefault(w, {})
    f = made.get(groups)
    if f is None:
        r, s, cg, k = w.shape
        if groups == 1 and cg <= 4:
            g = 8 // cg
            taps = r * s
            f = w.new_zeros((k, (taps + g - 1) // g, 8))
            dense = w.reshape(taps, cg, k).permute(2, 0, 1)  # (K, taps, C)
            for j in range(g):  # the taps at position j of their group
                t = dense[:, j::g]
                f[:, :t.shape[1], j * cg:(j + 1) * cg] = t
            f = f.reshape(k, -1)
            made[groups] = f
            return f
        per_group = k // groups
        window_n = per_group if groups == 1 or per_group % 8 == 0 else 8
        window_channels = cg if groups == 1 or per_group % 8 == 0 else cg * (8 // per_group)
        cp = (window_channels + 7) // 8 * 8
        f = w.new_zeros((k, r * s, cp))
        dense = w.reshape(r * s, cg, k).permute(2, 0, 1)
        ks = torch.arange(k, device=w.device)
        offset = (ks // per_group) * cg - (ks // window_n) * window_channels  # k's group in its window
        for o in range(0, window_channels, cg):
            rows = ks[offset == o]
            f[rows, :, o:o + cg] = dense[rows]
        f = f.reshape(k, r * s * cp)
        made[groups] = f
    return f


def _weight_for(kern, index, w, op, name):
    if "dense_extents" in kern.tensors[index] and w.dim() == 4:
        w = tensor_core_weight(w, kern.tensors[index].get("groups", 1))
    want = kern.tensors[index]["dtype"]
    got = checks.storage_dtype(op, name, w)
    if got == want:
        return w
    if want == "f32":
        f = _f32_weights.get(w)
        if f is None:
            f = w.float()
            _f32_weights[w] = f
        return f
    raise TypeError(f"{op}: '{name}' has dtype {got}; kernel {kern.desc['kernel']} takes {want}")


def _bind(kern, x, params, op):
    """The kernel's argument array with the weights and biases filled in, checked once per set of tensors
    (a model calls with the same ones every time): (args, tensors kept alive)."""
    sig = tuple((t.data_ptr(), t.dtype, t.shape, t.stride()) for t, _ in params)
    hit = kern.bound.get(sig)
    if hit is not None:
        return hit
    if len(params) + 2 != len(kern.tensors):
        raise ValueError(f"{op}: {len(params)} weight and bias tensors given; {kern.key} takes "
                         f"{len(kern.tensors) - 2} ({', '.join(t['name'] for t in kern.tensors[1:-1])})")
    args = kern.arguments()
    keep = []
    for i, (t, name) in enumerate(params, start=1):
        _aligned(op, name, t)
        spec = kern.tensors[i]
        shape = tuple(reversed(spec["extents"]))  # PyTorch's order: (R, S, Cg, K), (K)
        if "bias" in spec["name"]:
            checks.check_like(op, name, t, x, "x", dtype="f32", shape=shape, allow_cpu=_cpu_ok(x))
        else:
            if "dense_extents" in spec and t.dim() == 4:  # given (R, S, Cg, K), as every other kernel takes it
                shape = tuple(reversed(spec["dense_extents"]))
            checks.check_like(op, name, t, x, "x", dtype=None, shape=shape, allow_cpu=_cpu_ok(x))
            t = _weight_for(kern, i, t, op, name)
        keep.append(t)
        _fill_dense(args[i], t)
    if len(kern.bound) >= 64:  # weights passed once each (not a model's): do not keep them all alive
        kern.bound.clear()
    kern.bound[sig] = (args, keep)
    return args, keep


def _aligned(op, name, t):
    # the vectorized f16 kernels declare 16-byte aligned tensors (docs/halide-21.md)
    if t.data_ptr() % 16:
        raise ValueError(f"{op}: '{name}' starts at an address not 16-byte aligned (a view at an offset?); "
                         f"use {name}.clone(memory_format=torch.channels_last)")


def _run(kern, x, params, out, op):
    """params: [(tensor, name)] between input and output, in the kernel's order."""
    _aligned(op, "x", x)
    _aligned(op, "out", out)
    args, _ = _bind(kern, x, params, op)
    _fill_activation(args[0], x)
    _fill_activation(args[-1], out)
    _launch(kern, args, x.device)
    return out


def _launch(kern, args, device):
    """kern on its filled arguments: on PyTorch's current stream of a CUDA device, or the CPU. A CUDA kernel
    that allocates device memory of its own (a layer-by-layer block's hidden activations, split K's partial sums)
    takes it from PyTorch's caching allocator, as a workspace tensor freed (stream-ordered) after the launch: the
    call allocates nothing from the driver, so it can be captured in a CUDA graph (the graph's memory pool then
    holds the workspace). Its size is measured by the kernel's first call, which allocates from the driver."""
    if device.type != "cuda":
        kern.run(args)
        return
    stream = torch.cuda.current_stream(device).cuda_stream
    ordinal = device.index or 0
    need = kern.workspace_bytes()  # None until its first call measured it
    if need:
        ws = torch.empty(need, dtype=torch.uint8, device=device)
        kern.run(args, ordinal, stream, ws.data_ptr(), need)
    else:
        kern.run(args, ordinal, stream)


def _conv_layer(x, weight, stride, padding, dilation, groups, act):
    r, s, cg, k = weight.shape
    pads = list(padding)
    if len(pads) == 2:
        pads = [pads[0], pads[0], pads[1], pads[1]]
    if len(stride) != 2 or len(dilation) != 2 or len(pads) != 4:
        raise ValueError("blockfuse.conv2d: stride and dilation take 2 values, padding 2 (h, w) or 4 (t, b, l, r)")
    return ConvLayer(x.shape[1], k, r, s, tuple(stride), tuple(pads), tuple(dilation), groups, act)


def _check_conv(x, weight, bias, layer, out=None):
    op = "blockfuse.conv2d"
    d = checks.check_activation(op, "x", x, _cpu_ok(x))
    checks.check_choice(op, "act", layer.act, tuple(a for a in checks.ACTIVATIONS if a != "gelu_erf"))
    if weight.dim() != 4:
        raise ValueError(f"{op}: 'weight' has {weight.dim()} dimensions; it takes (R, S, Cg, K) "
                         "(blockfuse.torch.conv_weight(w) of PyTorch's (K, Cg, R, S))")
    if layer.groups <= 0 or x.shape[1] % layer.groups or layer.k % layer.groups or \
            weight.shape[2] * layer.groups != x.shape[1]:
        raise ValueError(f"{op}: 'weight' of shape {tuple(weight.shape)} (R, S, Cg, K) with groups={layer.groups} "
                         f"does not fit {x.shape[1]} input channels")
    oh, ow = layer.out_hw(x.shape[2], x.shape[3])
    if oh <= 0 or ow <= 0:
        raise ValueError(f"{op}: empty output ({oh}x{ow}) for a {x.shape[2]}x{x.shape[3]} input")
    if out is not None:
        checks.check_activation(op, "out", out, _cpu_ok(out))
        checks.check_like(op, "out", out, x, "x", shape=(x.shape[0], layer.k, oh, ow), allow_cpu=_cpu_ok(out),
                           dense=False)
    return d, oh, ow


def _empty(x, shape):
    return torch.empty(shape, dtype=x.dtype, device=x.device, memory_format=torch.channels_last)


def _conv_call(x, weight, bias, stride, padding, dilation, groups, act, strategy, out=None):
    """The checked call of one convolution: (kernel, params, output shape, op name)."""
    layer = _conv_layer(x, weight, stride, padding, dilation, groups, act)
    d, oh, ow = _check_conv(x, weight, bias, layer, out)
    kern = kernel(layer.key(x.shape[0], x.shape[2], x.shape[3], d), strategy, _device_kind(x))
    return kern, [(weight, "weight"), (bias, "bias")], (x.shape[0], layer.k, oh, ow), "blockfuse.conv2d"


def _conv_impl(x, weight, bias, stride, padding, dilation, groups, act, strategy, out=None):
    kern, params, shape, op = _conv_call(x, weight, bias, stride, padding, dilation, groups, act, strategy, out)
    return _run(kern, x, params, _empty(x, shape) if out is None else out, op)


def prepared(kern, x, params, out_shape, op):
    """A call of `kern` checked once for inputs shaped, laid out and typed as `x`, with `params` bound: per
    call it allocates the output, sets the two activation pointers and launches (what a replaced module does
    on every forward after its first). The caller keeps the params alive and unchanged."""
    _aligned(op, "x", x)
    args, keep = _bind(kern, x, params, op)
    _fill_activation(args[0], x)
    _fill_activation(args[-1], _empty(x, out_shape))  # extents and strides: every output is laid out alike
    dev = x.device

    def call(x):
        ptr = x.data_ptr()
        if ptr % 16:
            _aligned(op, "x", x)
        out = _empty(x, out_shape)
        args[0].data, args[-1].data = ptr, out.data_ptr()
        _launch(kern, args, dev)
        return out

    call.keep = keep
    return call


@torch.library.custom_op("blockfuse::conv2d", mutates_args=())
def conv2d_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: List[int], padding: List[int],
              dilation: List[int], groups: int, act: str, strategy: str) -> torch.Tensor:
    return _conv_impl(x, weight, bias, stride, padding, dilation, groups, act, strategy)


@conv2d_op.register_fake
def _(x, weight, bias, stride, padding, dilation, groups, act, strategy):
    layer = _conv_layer(x, weight, stride, padding, dilation, groups, act)
    oh, ow = layer.out_hw(x.shape[2], x.shape[3])
    return _empty(x, (x.shape[0], layer.k, oh, ow))


@torch.library.custom_op("blockfuse::conv2d_out", mutates_args=("out",))
def conv2d_out_op(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: List[int], padding: List[int],
                  dilation: List[int], groups: int, act: str, strategy: str, out: torch.Tensor) -> None:
    _conv_impl(x, weight, bias, stride, padding, dilation, groups, act, strategy, out)


@conv2d_out_op.register_fake
def _(x, weight, bias, stride, padding, dilation, groups, act, strategy, out):
    return None


def _block_shape(family, x, expansion, kernel_size, stride, se, act):
    return BlockShape(family, x.shape[1], expansion, kernel_size, stride, bool(se), act)


def _block_call(family, x, weights, biases, expansion, kernel_size, stride, se, act, strategy, out=None):
    """The checked call of one block: (kernel, params, output shape, op name)."""
    op = f"blockfuse.{family}"
    d = checks.check_activation(op, "x", x, _cpu_ok(x))
    checks.check_choice(op, "act", act, checks.ACTIVATIONS[1:])
    if len(weights) != len(biases):
        raise ValueError(f"{op}: {len(weights)} weights and {len(biases)} biases; give one bias per weight")
    shape = _block_shape(family, x, expansion, kernel_size, stride, se, act)
    oh, ow = shape.out_hw(x.shape[2], x.shape[3])
    if out is not None:
        checks.check_activation(op, "out", out, _cpu_ok(out))
        checks.check_like(op, "out", out, x, "x", shape=(x.shape[0], x.shape[1], oh, ow), allow_cpu=_cpu_ok(out),
                           dense=False)
    kern = kernel(shape.key(x.shape[0], x.shape[2], x.shape[3], d), strategy, _device_kind(x))
    params = []
    for i, (w, b) in enumerate(zip(weights, biases)):
        params += [(w, f"weights[{i}]"), (b, f"biases[{i}]")]
    return kern, params, (x.shape[0], x.shape[1], oh, ow), op


def _block_impl(family, x, weights, biases, expansion, kernel_size, stride, se, act, strategy, out=None):
    kern, params, shape, op = _block_call(family, x, weights, biases, expansion, kernel_size, stride, se, act, strategy,
                                          out)
    return _run(kern, x, params, _empty(x, shape) if out is None else out, op)


def _register_block(family):
    def impl(x: torch.Tensor, weights: List[torch.Tensor], biases: List[torch.Tensor], expansion: int, kernel: int,
             stride: int, se: bool, act: str, strategy: str) -> torch.Tensor:
        return _block_impl(family, x, weights, biases, expansion, kernel, stride, se, act, strategy)

    def impl_out(x: torch.Tensor, weights: List[torch.Tensor], biases: List[torch.Tensor], expansion: int,
                 kernel: int, stride: int, se: bool, act: str, strategy: str, out: torch.Tensor) -> None:
        _block_impl(family, x, weights, biases, expansion, kernel, stride, se, act, strategy, out)

    op = torch.library.custom_op(f"blockfuse::{family}", impl, mutates_args=())
    op_out = torch.library.custom_op(f"blockfuse::{family}_out", impl_out, mutates_args=("out",))

    def fake(x, weights, biases, expansion, kernel, stride, se, act, strategy):
        oh, ow = _block_shape(family, x, expansion, kernel, stride, se, act).out_hw(x.shape[2], x.shape[3])
        return _empty(x, (x.shape[0], x.shape[1], oh, ow))

    op.register_fake(fake)
    op_out.register_fake(lambda *a: None)
    return op, op_out


BLOCK_OPS = {f: _register_block(f) for f in checks.BLOCK_FAMILIES}


def conv2d(x, weight, bias, stride=1, padding=0, dilation=1, groups=1, act="none", strategy="", out=None):
    """One convolution (bias and activation fused) by a blockfuse kernel; weight in (R, S, Cg, K)."""
    pair = lambda v: list(v) if isinstance(v, (list, tuple)) else [v, v]
    args = (x, weight, bias, pair(stride), pair(padding), pair(dilation), groups, act, strategy)
    if out is None:
        return torch.ops.blockfuse.conv2d(*args)
    torch.ops.blockfuse.conv2d_out(*args, out)
    return out


def block(family, x, weights, biases, expansion, kernel=3, stride=1, se=False, act=None, strategy="", out=None):
    """One fused block of `family` (generators/block_spec.h) by a blockfuse kernel."""
    checks.check_choice("blockfuse.block", "family", family, checks.BLOCK_FAMILIES)
    if act is None:
        act = {"mbconv": "relu6", "fused_mbconv": "silu", "convnext": "gelu"}.get(family, "relu")
    if family == "ffn":
        kernel = 1
    args = (x, list(weights), list(biases), expansion, kernel, stride, bool(se), act, strategy)
    op, op_out = BLOCK_OPS[family]
    if out is None:
        return op(*args)
    op_out(*args, out)
    return out
