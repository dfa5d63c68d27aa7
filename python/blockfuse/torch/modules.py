"""The modules optimize() puts in place of torchvision's: weights folded once (float64), stored on the
model's device in the kernels' layout; forward calls the custom ops."""
import torch
from torch import nn

from blockfuse.torch import ops


layout_copies = 0  # inputs that arrived in another layout and were converted (counted: they are copies)


def _as_input(x):
    # Everything between the replaced modules stays channels_last in PyTorch (convolutions, BatchNorm,
    # activations and additions keep it); a caller feeding NCHW-contiguous input pays one conversion here.
    global layout_copies
    if x.is_contiguous(memory_format=torch.channels_last):
        return x
    layout_copies += 1
    return x.contiguous(memory_format=torch.channels_last)


class _Folded(nn.Module):
    def _store(self, folded, dtype, device):
        """folded: [(weight (R, S, Cg, K), bias (K))] float64 numpy, in the kernel's order."""
        self._prepared = {}  # input (shape, strides, dtype, device) -> ops.prepared call
        self.n_params = len(folded)
        for i, (w, b) in enumerate(folded):
            self.register_buffer(f"weight{i}", torch.from_numpy(w).to(device=device, dtype=dtype).contiguous())
            self.register_buffer(f"bias{i}", torch.from_numpy(b).to(device=device, dtype=torch.float32).contiguous())

    def _apply(self, fn, *args, **kwargs):  # .to(), .half(), .cuda() replace the buffers: prepare again
        self._prepared = {}
        return super()._apply(fn, *args, **kwargs)

    def forward(self, x):
        x = _as_input(x)
        if torch.compiler.is_compiling():  # the registered op, opaque to the graph
            return self._op(*self._op_args(x))
        # eager: the op's implementation, its checks and binding once per input shape and layout, then the launch
        key = (x.shape, x.stride(), x.dtype, x.device)
        call = self._prepared.get(key)
        if call is None:
            kern, params, out_shape, op = self._checked_call(x)
            call = ops.prepared(kern, x, params, out_shape, op)
            self._prepared[key] = call
        return call(x)

    def weights(self):
        return [getattr(self, f"weight{i}") for i in range(self.n_params)]

    def biases(self):
        return [getattr(self, f"bias{i}") for i in range(self.n_params)]


class Conv2d(_Folded):
    """A convolution with its BatchNorm folded and its activation fused: one blockfuse conv2d kernel."""

    def __init__(self, layer, folded, dtype, device, strategy="", replaced=""):
        super().__init__()
        self.layer, self.strategy, self.replaced = layer, strategy, replaced
        self._store(folded, dtype, device)

    _op = torch.ops.blockfuse.conv2d

    def _op_args(self, x):
        L = self.layer
        return (x, self.weight0, self.bias0, list(L.stride), list(L.pad), list(L.dil), L.groups, L.act, self.strategy)

    def _checked_call(self, x):
        return ops._conv_call(*self._op_args(x))

    def extra_repr(self):
        L = self.layer
        return (f"{L.c}, {L.k}, kernel=({L.r}, {L.s}), stride={L.stride}, pad={L.pad}, groups={L.groups}, act={L.act}, "
                f"strategy={self.strategy or 'default'}, replaces {self.replaced}")


class Block(_Folded):
    """A fused block of one family (BlockShape), its BatchNorm / LayerNorm affine / layer scale folded."""

    def __init__(self, shape, folded, dtype, device, strategy="", replaced=""):
        super().__init__()
        self.shape, self.strategy, self.replaced = shape, strategy, replaced
        self._store(folded, dtype, device)
        self._op = ops.BLOCK_OPS[shape.family][0]

    def _op_args(self, x):
        s = self.shape
        return (x, self.weights(), self.biases(), s.e, s.k, s.stride, s.se, s.act, self.strategy)

    def _checked_call(self, x):
        return ops._block_call(self.shape.family, *self._op_args(x))

    def extra_repr(self):
        s = self.shape
        return (f"{s.family}, c={s.c}, e={s.e}, k={s.k}, stride={s.stride}, se={int(s.se)}, act={s.act}, "
                f"strategy={self.strategy or 'default'}, replaces {self.replaced}")
