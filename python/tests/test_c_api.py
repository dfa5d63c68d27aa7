"""The C surface of libblockfuse_runtime.so through ctypes, on CPU kernels and numpy memory (no torch, no
GPU): a conv2d and an MBConv block opened by key, run on the caller's arrays, against float64; the
matcher's folded weights of a torchvision-shaped InvertedResidual through the real kernel; bad input
named; a tensor-core kernel's weight layout. Kernels not prebuilt are generated into the kernel cache (a
few seconds each)."""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import blockfuse  # noqa: E402
from blockfuse import match  # noqa: E402
import mocks  # noqa: E402

SEED = int(os.environ.get("BLOCKFUSE_TEST_SEED", np.random.SeedSequence().entropy % 2**31))


def activation_arg(a, x_nhwc):
    n, h, w, c = x_nhwc.shape
    a.data = x_nhwc.ctypes.data
    a.extents[:] = [c, w, h, n]
    a.strides[:] = [1, c, w * c, h * w * c]


def dense_arg(a, arr):
    a.data = arr.ctypes.data
    d = arr.ndim
    for i in range(d):
        a.extents[i] = arr.shape[d - 1 - i]
        a.strides[i] = arr.strides[d - 1 - i] // arr.itemsize


def run(kern, x_nchw, folded):
    """The kernel on float32 copies of x and the folded weights; returns NCHW float64."""
    x = np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1), dtype=np.float32)
    o = kern.tensors[-1]["extents"]  # (k, ox, oy, n)
    out = np.full((o[3], o[2], o[1], o[0]), np.nan, dtype=np.float32)
    keep = []
    args = kern.arguments()
    activation_arg(args[0], x)
    i = 1
    for w, b in folded:
        keep += [np.ascontiguousarray(w, np.float32), np.ascontiguousarray(b, np.float32)]
        dense_arg(args[i], keep[-2])
        dense_arg(args[i + 1], keep[-1])
        i += 2
    activation_arg(args[-1], out)
    kern.run(args)
    return out.transpose(0, 3, 1, 2).astype(np.float64)


class CApiTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(SEED)

    def test_info_and_keys(self):
        i = blockfuse.info()
        self.assertEqual(i["halide_version"], "21.0.0")
        self.assertEqual(blockfuse.canonical("conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1"),
                         "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,stride=1,pad=1,groups=1,dtype=f32")
        with self.assertRaisesRegex(blockfuse.BadInput, "field 'k'"):
            blockfuse.canonical("conv2d:n=1,c=8,h=9,w=9,r=3,s=3")
        with self.assertRaisesRegex(blockfuse.BadInput, "gelu_erf: block families only"):
            blockfuse.canonical("conv2d:n=1,c=8,h=9,w=9,k=8,r=1,s=1,act=gelu_erf")
        self.assertIn("act=gelu_erf", blockfuse.canonical("convnext:n=1,c=16,h=9,w=9,e=4,act=gelu_erf"))
        with self.assertRaisesRegex(blockfuse.BadInput, "strategy 'fast'"):
            blockfuse.Kernel("mbconv:n=1,c=8,h=9,w=9,e=2", "fast", "cpu", load=False)
        with self.assertRaisesRegex(blockfuse.BadInput, "device 'tpu'"):
            blockfuse.Kernel("mbconv:n=1,c=8,h=9,w=9,e=2", "", "tpu", load=False)
        k = blockfuse.Kernel("mbconv:n=1,c=8,h=9,w=9,e=2,se=1,act=silu", "", "cuda", load=False)
        self.assertEqual([t["name"] for t in k.tensors],
                         ["input", "weights0", "bias0", "weights1", "bias1", "weights2", "bias2", "se_weights0",
                          "se_bias0", "se_weights1", "se_bias1", "output"])
        self.assertEqual(k.tensors[7]["extents"], [2, 16, 1, 1])  # (se_ch, E, 1, 1)
        self.assertEqual(k.strategy, "layer_by_layer")

    def test_conv2d_kernel(self):
        key = "conv2d:n=2,c=16,h=9,w=7,k=16,r=3,s=3,stride=2,pad=1,groups=16,bias=1,act=relu,dtype=f32"
        kern = blockfuse.Kernel(key, "", "cpu")
        x = self.rng.uniform(-1, 1, (2, 16, 9, 7))
        w = self.rng.uniform(-1, 1, (16, 1, 3, 3))
        b = self.rng.uniform(-1, 1, 16)
        layer = match.ConvLayer(16, 16, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 16, "relu")
        from blockfuse import fold
        folded = [(fold.conv_weight_layout(w), b)]
        y = run(kern, x, folded)
        ref = mocks.conv_forward(layer, folded, x)
        self.assertLess(np.max(np.abs(y - ref)), 1e-5, f"seed {SEED}")

    def test_inverted_residual_through_the_kernel(self):
        m = mocks.inverted_residual(self.rng, 8, 8, 1, 3)
        e = match.plan(m)[0]
        self.assertEqual(e.kind, "block")
        x = self.rng.uniform(-1, 1, (2, 8, 7, 9))
        kern = blockfuse.Kernel(e.shape.key(2, 7, 9, "f32"), "", "cpu")
        y = run(kern, x, match.fold_entry(e))
        ref = mocks.forward(m, x)
        err = np.max(np.abs(y - ref)) / np.max(np.abs(ref))
        self.assertLess(err, 1e-5, f"seed {SEED}")

    def test_tensor_core_weight_layout(self):
        # the tensor_cores strategy (emulated on the CPU) takes its weights as (K, Kr), described with their dense
        # extents; 3 channels: two taps to each 8 of a row (6 channels, 2 zeros), 9 taps in 5 groups; a caller
        # lays them out from (R, S, C, K)
        key = "conv2d:n=1,c=3,h=9,w=7,k=16,r=3,s=3,stride=2,pad=1,groups=1,bias=1,act=relu,dtype=f16"
        kern = blockfuse.Kernel(key, "tensor_cores", "cpu")
        spec = kern.tensors[1]
        self.assertEqual((spec["name"], spec["extents"], spec["dense_extents"]),
                         ("weights_tc", [40, 16], [16, 3, 3, 3]))
        x = self.rng.uniform(-1, 1, (1, 3, 9, 7)).astype(np.float16)
        w = self.rng.uniform(-1, 1, (16, 3, 3, 3)).astype(np.float16)  # PyTorch's (K, C, R, S)
        b = self.rng.uniform(-1, 1, 16)
        from blockfuse import fold
        dense = fold.conv_weight_layout(w.astype(np.float64))  # (R, S, C, K)
        tc = np.zeros((16, 5, 8), np.float16)
        taps = dense.reshape(9, 3, 16)
        for tap in range(9):
            tc[:, tap // 2, tap % 2 * 3:tap % 2 * 3 + 3] = taps[tap].T
        tc = tc.reshape(16, 40)
        layer = match.ConvLayer(3, 16, 3, 3, (2, 2), (1, 1, 1, 1), (1, 1), 1, "relu")
        args = self.check_tensor_core_conv(kern, layer, x, tc, dense, b, (1, 5, 4, 16))
        dense16 = np.ascontiguousarray(dense, np.float16)  # the dense layout is refused, by name
        dense_arg(args[1], dense16)
        with self.assertRaisesRegex(blockfuse.BadInput, r"tensor 'weights_tc': extents \(16,3\) .* takes \(40,16\)"):
            kern.run(args)

    def test_grouped_tensor_core_weight_layout(self):
        # grouped on tensor cores: 4 output channels a group, so windows of 8 output channels holding two groups (8
        # input channels, the last window half past the 12); row k holds its window's channels, zero outside k's
        # group; the spec says the groups a caller lays the rows out by
        key = "conv2d:n=1,c=12,h=6,w=5,k=12,r=3,s=3,stride=1,pad=1,groups=3,bias=1,act=none,dtype=f16"
        kern = blockfuse.Kernel(key, "tensor_cores", "cpu")
        spec = kern.tensors[1]
        self.assertEqual((spec["extents"], spec["dense_extents"], spec["groups"]), ([72, 12], [12, 4, 3, 3], 3))
        x = self.rng.uniform(-1, 1, (1, 12, 6, 5)).astype(np.float16)
        w = self.rng.uniform(-1, 1, (12, 4, 3, 3)).astype(np.float16)  # PyTorch's (K, C / groups, R, S)
        b = self.rng.uniform(-1, 1, 12)
        from blockfuse import fold
        dense = fold.conv_weight_layout(w.astype(np.float64))  # (R, S, C / groups, K)
        tc = np.zeros((12, 9, 8), np.float16)
        for k in range(12):
            at = 4 * ((k // 4) % 2)  # k's group within its window of two
            tc[k, :, at:at + 4] = dense.reshape(9, 4, 12)[:, :, k]
        layer = match.ConvLayer(12, 12, 3, 3, (1, 1), (1, 1, 1, 1), (1, 1), 3, "none")
        self.check_tensor_core_conv(kern, layer, x, tc.reshape(12, 72), dense, b, (1, 6, 5, 12))

    def check_tensor_core_conv(self, kern, layer, x, tc, dense, b, out_shape):
        """Runs kern on x (NCHW) with its weights in the tensor-core layout `tc` into a NaN-poisoned NHWC output,
        against the float64 convolution of the dense weights; returns the argument array."""
        out = np.full(out_shape, np.nan, np.float16)
        args = kern.arguments()
        activation_arg(args[0], np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
        dense_arg(args[1], tc)
        dense_arg(args[2], b.astype(np.float32))
        activation_arg(args[3], out)
        kern.run(args)
        ref = mocks.conv_forward(layer, [(dense, b)], x.astype(np.float64))
        y = out.transpose(0, 3, 1, 2).astype(np.float64)
        self.assertLess(np.max(np.abs(y - ref)) / np.max(np.abs(ref)), 1e-2, f"seed {SEED}")
        return args

    def test_bad_tensors(self):
        key = "conv2d:n=2,c=16,h=9,w=7,k=16,r=3,s=3,stride=2,pad=1,groups=16,bias=1,act=relu,dtype=f32"
        kern = blockfuse.Kernel(key, "", "cpu")
        x = np.zeros((2, 9, 7, 16), np.float32)
        out = np.zeros((2, 5, 4, 16), np.float32)
        w = np.zeros((3, 3, 1, 16), np.float32)
        b = np.zeros(16, np.float32)
        wide_ws = np.zeros(4096, np.uint8)
        args = kern.arguments()
        for a, t in zip(args, [x, w, b, out]):
            dense_arg(a, t) if t.ndim != 4 or t is w else activation_arg(a, t)
        self.assertIsNone(kern.workspace_bytes())  # measured by the first run
        kern.run(args)  # fits
        self.assertEqual(kern.workspace_bytes(), 0)  # a CPU kernel's heap tiles are Halide's
        with self.assertRaisesRegex(blockfuse.BadInput, "a workspace is device memory: CUDA kernels only"):
            kern.run(args, workspace=wide_ws.ctypes.data, workspace_bytes=wide_ws.nbytes)
        args[3].extents[1] = 5
        with self.assertRaisesRegex(blockfuse.BadInput, r"tensor 'output': extents \(16,5,5,2\)"):
            kern.run(args)
        args = kern.arguments()
        for a, t in zip(args, [x, w, b, out]):
            dense_arg(a, t) if t.ndim != 4 or t is w else activation_arg(a, t)
        args[2].dtype = 1
        with self.assertRaisesRegex(blockfuse.BadInput, "tensor 'bias': dtype f16, the kernel takes f32"):
            kern.run(args)
        with self.assertRaisesRegex(blockfuse.BadInput, "3 tensors given"):
            kern.run((blockfuse._lib.BfTensor * 3)(*args[:3]))
        # An input one element into an allocation: refused before the kernel runs (on CUDA a misaligned
        # vector load would fault inside it).
        args = kern.arguments()
        wide = np.zeros(x.size + 4, np.float32)
        shifted = wide[1:1 + x.size].reshape(x.shape)
        for a, t in zip(args, [shifted, w, b, out]):
            dense_arg(a, t) if t.ndim != 4 or t is w else activation_arg(a, t)
        self.assertNotEqual(shifted.ctypes.data % 16, 0)
        with self.assertRaisesRegex(blockfuse.BadInput,
                                    "tensor 'input': data pointer 0x[0-9a-f]+ is not 16-byte aligned"):
            kern.run(args)


if __name__ == "__main__":
    unittest.main()
