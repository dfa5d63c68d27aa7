"""blockfuse.torch where PyTorch (and torchvision) are installed (`./run install --torch`, as CI does where its disk
has room); exit 77 (ctest: skipped) where not.

Without a GPU: the ops' argument checks and fake implementations, the architectures as data
(blockfuse.models) against plan() on the real torchvision networks, and, on blockfuse's CPU kernels
(BLOCKFUSE_TORCH_CPU=1, generated on first use), optimize() on a small network of torchvision blocks
against the original in float64. With a GPU the same ops also run on CUDA tensors."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    import torch
    import torchvision
except ImportError as e:  # pragma: no cover
    print(f"skipped: PyTorch/torchvision not importable here ({e}); `./run install --torch` installs them")
    sys.exit(77)

import blockfuse.torch as bft  # noqa: E402
from blockfuse import match, models  # noqa: E402
from blockfuse.torch import ops  # noqa: E402,F401  (registers torch.ops.blockfuse)

SEED = int(os.environ.get("BLOCKFUSE_TEST_SEED", torch.seed() % 2**31))
CL = torch.channels_last


def cl(t):
    return t.contiguous(memory_format=CL)


class ArgumentChecks(unittest.TestCase):
    def test_bad_inputs(self):
        x = cl(torch.randn(2, 8, 9, 9))
        w, b = torch.randn(3, 3, 8, 16), torch.zeros(16)
        os.environ.pop("BLOCKFUSE_TORCH_CPU", None)
        with self.assertRaisesRegex(ValueError, "'x' is a CPU tensor; blockfuse kernels take CUDA tensors"):
            bft.conv2d(x, w, b, padding=1)
        os.environ["BLOCKFUSE_TORCH_CPU"] = "1"
        try:
            with self.assertRaisesRegex(ValueError, "'x' is not channels_last"):
                bft.conv2d(x.contiguous(), w, b, padding=1)
            with self.assertRaisesRegex(TypeError, "'x' has dtype float64"):
                bft.conv2d(x.double(), w, b, padding=1)
            with self.assertRaisesRegex(TypeError, "'bias' has dtype f16, expected f32"):
                bft.conv2d(x, w, b.half(), padding=1)
            with self.assertRaisesRegex(ValueError, r"'bias' has shape \(8,\), expected \(16,\)"):
                bft.conv2d(x, w, torch.zeros(8), padding=1)
            off = torch.empty(1 + x.numel())[1:].view(2, 9, 9, 8).permute(0, 3, 1, 2)  # channels_last, 4 bytes in
            with self.assertRaisesRegex(ValueError, "'x' starts at an address not 16-byte aligned"):
                bft.conv2d(off, w, b, padding=1)
            with self.assertRaisesRegex(ValueError, r"'weight' of shape \(3, 3, 4, 16\)"):
                bft.conv2d(x, torch.randn(3, 3, 4, 16), b, padding=1)
            with self.assertRaisesRegex(ValueError, "act='swish' is not one of"):
                bft.conv2d(x, w, b, padding=1, act="swish")
            with self.assertRaisesRegex(ValueError, "'out' has shape"):
                bft.conv2d(x, w, b, padding=1, out=cl(torch.empty(2, 16, 8, 9)))
            with self.assertRaisesRegex(ValueError, "family='resnet'"):
                bft.block("resnet", x, [], [], 4)
            with self.assertRaisesRegex(ValueError, "0 weight and bias tensors given"):
                bft.block("mbconv", x, [], [], 2)
        finally:
            os.environ.pop("BLOCKFUSE_TORCH_CPU", None)

    def test_fake(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            x = cl(torch.empty(2, 8, 9, 9, dtype=torch.half))
            y = torch.ops.blockfuse.conv2d(x, torch.empty(3, 3, 8, 16), torch.empty(16), [2, 2], [1, 1], [1, 1], 1,
                                           "relu", "")
            self.assertEqual(tuple(y.shape), (2, 16, 5, 5))
            self.assertTrue(y.is_contiguous(memory_format=CL))
            self.assertEqual(tuple(torch.ops.blockfuse.mbconv(x, [], [], 6, 5, 2, True, "silu", "").shape), (2, 8, 5, 5))


class Architectures(unittest.TestCase):
    """blockfuse.models (what prebuild lists) is what plan() finds in torchvision's networks."""

    def test_models_as_data(self):
        for name in models.MODELS:
            net = getattr(torchvision.models, name)().eval()
            entries = [e for e in match.plan(net) if e.kind != "left"]
            shapes = {}
            hooks = [bft._get(net, e.path).register_forward_pre_hook(
                lambda m, a, p=e.path: shapes.setdefault(p, tuple(a[0].shape)) and None) for e in entries]
            with torch.no_grad():
                net(torch.zeros(1, 3, 224, 224))
            for h in hooks:
                h.remove()
            got = [(e.path, e.shape.key(1, shapes[e.path][2], shapes[e.path][3], "f16")) for e in entries]
            want = [(p, s.key(1, h, h, "f16")) for p, s, h in models.MODELS[name]()]
            self.assertEqual(got, want, name)


def tiny_network():
    from torchvision.models.mobilenetv2 import InvertedResidual
    from torchvision.models.efficientnet import MBConv, MBConvConfig
    from torchvision.models.convnext import CNBlock
    from torchvision.ops.misc import Conv2dNormActivation
    torch.manual_seed(SEED)
    net = torch.nn.Sequential(
        Conv2dNormActivation(3, 16, stride=2, activation_layer=torch.nn.ReLU6),
        InvertedResidual(16, 16, 1, 3),
        InvertedResidual(16, 24, 2, 2),  # no residual: its convolutions
        MBConv(MBConvConfig(3, 3, 1, 24, 24, 1), 0.0, torch.nn.BatchNorm2d),
        CNBlock(24, 0.5, 0.0),
    ).eval()
    for m in net.modules():  # BatchNorm statistics and affine not at their defaults
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
        if isinstance(m, torch.nn.LayerNorm):
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return net


@unittest.skipUnless(os.environ.get("BLOCKFUSE_TORCH_KERNELS", "1") == "1", "BLOCKFUSE_TORCH_KERNELS=0")
class OptimizeOnCpuKernels(unittest.TestCase):
    # the ops take CPU tensors and run blockfuse's CPU kernels (ops.allow_cpu)
    def setUp(self):
        os.environ["BLOCKFUSE_TORCH_CPU"] = "1"

    def tearDown(self):
        os.environ.pop("BLOCKFUSE_TORCH_CPU", None)

    def test_optimize(self):
        net = tiny_network()
        ref = tiny_network().double()
        x = cl(torch.randn(2, 3, 17, 15))
        import io
        buf = io.StringIO()
        bft.optimize(net, x, file=buf)
        table = buf.getvalue()
        rows = net.blockfuse_table
        acts = {r["path"]: r["action"] for r in rows}
        self.assertEqual(acts["1"], "blockfuse block mbconv", table)
        self.assertEqual(acts["2"], "not fused (layers below)", table)
        self.assertEqual(acts["2.conv.2"], "blockfuse conv2d", table)
        self.assertEqual(acts["3"], "blockfuse block mbconv", table)
        self.assertEqual(acts["4"], "blockfuse block convnext", table)
        self.assertIsInstance(net[1], bft.modules.Block)
        self.assertIsInstance(net[2].conv[3], torch.nn.Identity)
        with torch.no_grad():
            y = net(x)
            r = ref(x.double())
        err = float((y.double() - r).abs().max() / r.abs().max())
        self.assertLess(err, 1e-4, f"seed {SEED}\n{table}")
        # a second input shape after the first: the modules check and bind their kernels for it (each keeps
        # its calls per input shape), and the first shape's calls still serve it; fresh inputs each time, so that
        # an output buffer reused from an earlier call cannot hold this call's answer
        for xs in (cl(torch.randn(1, 3, 11, 13)), cl(torch.randn(2, 3, 17, 15))):
            with torch.no_grad():
                ys, rs = net(xs).double(), ref(xs.double())
            self.assertLess(float((ys - rs).abs().max() / rs.abs().max()), 1e-4, f"seed {SEED}, {tuple(xs.shape)}")
        self.assertEqual(len(net[1]._prepared), 2)
        # the op's out= form writes the caller's tensor
        out = cl(torch.full((2, 16, 9, 8), float("nan")))
        blk = net[1]
        got = bft.block("mbconv", out.new_zeros(2, 16, 9, 8).contiguous(memory_format=CL), blk.weights(),
                        blk.biases(), 3, out=out)
        self.assertIs(got, out)
        self.assertFalse(torch.isnan(out).any())

    def test_compile_traces_the_ops(self):
        # torch.compile traces the replaced modules through the ops' fake implementations, in one graph
        net = tiny_network()
        x = cl(torch.randn(2, 3, 17, 15))
        bft.optimize(net, x, verbose=False)
        comp = torch.compile(net, backend="aot_eager", fullgraph=True)
        with torch.no_grad():
            self.assertTrue(torch.equal(comp(x), net(x)))

    def test_choices_rebuild_the_model(self):
        # a strategy per module path ("pytorch" keeps the original); choices() gives them back, and a fresh
        # copy optimized with them is the same model
        net = tiny_network()
        x = cl(torch.randn(1, 3, 13, 11))
        bft.optimize(net, x, strategy={"1": "pytorch", "3": "fused", "mbconv": "layer_by_layer"}, verbose=False)
        self.assertNotIsInstance(net[1], bft.modules.Block)
        self.assertEqual(net[3].strategy, "fused")
        chosen = bft.choices(net)
        self.assertEqual(chosen["1"], "pytorch")
        self.assertEqual(chosen["3"], "fused")
        self.assertEqual(chosen["2.conv.2"], "direct")
        again = tiny_network()
        bft.optimize(again, x, strategy=chosen, verbose=False)
        self.assertEqual(bft.choices(again), chosen)
        with torch.no_grad():
            y, r = again(x), tiny_network().double()(x.double())
            self.assertLess(float((y.double() - r).abs().max() / r.abs().max()), 1e-4, f"seed {SEED}")
            self.assertTrue(torch.equal(y, net(x)))

    def test_tensor_core_strategies(self):
        # f16 on the tensor-core kernels (emulated on the CPU): their weights in the tensor-core layout, laid out
        # from PyTorch's (R, S, Cg, K) by the ops (the stem's 3 channels two taps to each 8), against float64
        net = tiny_network().half()
        ref = tiny_network().double()
        x = cl(torch.randn(2, 3, 17, 15))
        want = {"0": "tensor_cores", "1": "fused_tc", "2.conv.0": "tensor_cores", "2.conv.1": "direct",
                "2.conv.2": "tensor_cores", "3": "layer_by_layer_tc", "4": "layer_by_layer_tc"}
        bft.optimize(net, x.half(), strategy=want, verbose=False)
        self.assertEqual(bft.choices(net), want, bft.format_table(net.blockfuse_table))
        keys = {r["path"]: r["key"] for r in net.blockfuse_table}
        for path in ("0", "1"):
            names = [t["name"] for t in bft.kernel(keys[path], want[path], "cpu").tensors]
            self.assertTrue(any(n.endswith("_tc") for n in names), names)
        with torch.no_grad():
            y = net(x.half()).double()
            r = ref(x.double())
        err = float((y - r).abs().max() / r.abs().max())
        self.assertLess(err, 1e-2, f"seed {SEED}\n{bft.format_table(net.blockfuse_table)}")
        # a bad weight shape for a tensor-core kernel is named
        blk = net[0]
        bad = blk.weight0[:, :, :2].contiguous()
        with self.assertRaisesRegex(ValueError, "weight"):
            bft.conv2d(x.half(), bad, blk.bias0, stride=2, padding=1, act="relu6", strategy="tensor_cores")

    def test_grouped_tensor_cores(self):
        # grouped convolutions on the tensor-core kernels (emulated on the CPU): the ops lay PyTorch's (R, S, Cg, K)
        # weights out per window of output channels (a group of 8; 8 channels of two groups of 4), against float64
        torch.manual_seed(SEED)
        for c, k, groups in ((32, 32, 4), (12, 12, 3)):
            x = torch.randn(2, c, 7, 9)
            w = torch.randn(k, c // groups, 3, 3) / 6
            b = torch.randn(k)
            ref = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), padding=1, groups=groups)
            y = bft.conv2d(cl(x.half()), w.half().permute(2, 3, 1, 0).contiguous(), b.float(), padding=1,
                           groups=groups, strategy="tensor_cores")
            err = float((y.double() - ref).abs().max() / ref.abs().max())
            self.assertLess(err, 1e-2, f"c={c} groups={groups} seed {SEED}")

    def test_training_mode(self):
        with self.assertRaisesRegex(ValueError, "training mode"):
            bft.optimize(tiny_network().train(), cl(torch.randn(1, 3, 9, 9)))


if __name__ == "__main__":
    unittest.main()
