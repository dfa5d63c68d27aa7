"""Argument checks of the blockfuse ops, duck-typed (anything with .device.type, .dtype, .shape and
.stride()), so they are tested without torch. Each failure is one ValueError/TypeError naming the op, the
argument and what to do."""

DTYPES = {"torch.float16": "f16", "torch.bfloat16": "bf16", "torch.float32": "f32"}


def storage_dtype(op, name, t):
    d = DTYPES.get(str(t.dtype))
    if d is None:
        raise TypeError(f"{op}: '{name}' has dtype {str(t.dtype).replace('torch.', '')}; blockfuse kernels take "
                        "float16, bfloat16 or float32")
    return d


def is_channels_last(shape, strides):
    """NCHW shape whose memory is NHWC-dense (dimensions of extent 1 may have any stride)."""
    n, c, h, w = shape
    want = (h * w * c, 1, w * c, c)
    return all(e == 1 or s == ws for e, s, ws in zip(shape, strides, want))


def check_device(op, name, t, allow_cpu=False):
    kind = t.device.type
    if kind == "cuda" or (allow_cpu and kind == "cpu"):
        return
    raise ValueError(f"{op}: '{name}' is a {kind.upper() if kind == 'cpu' else kind} tensor; blockfuse kernels take "
                     f"CUDA tensors ({name}.cuda())")


def check_activation(op, name, t, allow_cpu=False):
    """An NCHW-shaped activation stored channels_last on a CUDA device; returns its storage dtype."""
    check_device(op, name, t, allow_cpu)
    d = storage_dtype(op, name, t)
    if len(t.shape) != 4:
        raise ValueError(f"{op}: '{name}' has {len(t.shape)} dimensions; blockfuse takes (N, C, H, W) tensors")
    if not is_channels_last(tuple(t.shape), tuple(t.stride())):
        raise ValueError(f"{op}: '{name}' is not channels_last (NHWC) in memory (strides {tuple(t.stride())} for "
                         f"shape {tuple(t.shape)}); use {name}.contiguous(memory_format=torch.channels_last)")
    return d


def check_like(op, name, t, ref, ref_name, dtype=None, shape=None, allow_cpu=False, dense=True):
    """A weight or bias: on the device of `ref`, of `dtype` (default ref's), of `shape` if given, dense
    (row-major) unless dense=False."""
    check_device(op, name, t, allow_cpu)
    if t.device != ref.device:
        raise ValueError(f"{op}: '{name}' is on {t.device}, '{ref_name}' on {ref.device}; they must share a device")
    want = dtype or storage_dtype(op, ref_name, ref)
    got = storage_dtype(op, name, t)
    if got != want:
        raise TypeError(f"{op}: '{name}' has dtype {got}, expected {want}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(f"{op}: '{name}' has shape {tuple(t.shape)}, expected {tuple(shape)}")
    if not dense:
        return
    step = 1
    for e, s in reversed(list(zip(t.shape, t.stride()))):
        if e != 1 and s != step:
            raise ValueError(f"{op}: '{name}' is not contiguous; use {name}.contiguous()")
        step *= e


def out_size(size, k, stride, pad0, pad1, dil):
    return (size + pad0 + pad1 - dil * (k - 1) - 1) // stride + 1


ACTIVATIONS = ("none", "relu", "relu6", "silu", "gelu", "gelu_erf", "sigmoid")
BLOCK_FAMILIES = ("mbconv", "fused_mbconv", "ffn", "convfirst", "convnext")


def check_choice(op, name, value, choices):
    if value not in choices:
        raise ValueError(f"{op}: {name}={value!r} is not one of {', '.join(choices)}")
