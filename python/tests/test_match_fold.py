"""The module matcher and the folding, without torch: torchvision-shaped mock modules with random float64
parameters; each matched block's folded weights, run through the block family's math, against the
original module's float64 forward (torchvision's math: BatchNorm, LayerNorm affine, layer scale, erf
GELU, Squeeze-Excitation as torchvision computes them)."""
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from blockfuse import fold, match, models  # noqa: E402
import mocks  # noqa: E402

SEED = int(os.environ.get("BLOCKFUSE_TEST_SEED", np.random.SeedSequence().entropy % 2**31))


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


class FoldTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(SEED)

    def test_batchnorm(self):
        r = self.rng
        c = mocks.conv(r, 6, 10, 3, bias=True)
        b = mocks.bn(r, 10, eps=1e-3)
        x = r.standard_normal((2, 6, 7, 5))
        ref = mocks.forward(b, mocks.forward(c, x))
        w, bias = fold.fold_batchnorm(c.weight, c.bias, b.weight, b.bias, b.running_mean, b.running_var, b.eps)
        self.assertLess(rel_err(mocks.conv2d(x, w, bias, pad=(1, 1, 1, 1)), ref), 1e-12, f"seed {SEED}")

    def test_layernorm_affine_and_layer_scale(self):
        r = self.rng
        g, be = r.uniform(0.5, 1.5, 8), r.uniform(-1, 1, 8)
        w1, b1 = r.standard_normal((32, 8)), r.standard_normal(32)
        xhat = r.standard_normal((5, 8))
        w, b = fold.fold_layernorm_affine(g, be, w1, b1)
        self.assertLess(rel_err(xhat @ w.T + b, (xhat * g + be) @ w1.T + b1), 1e-12)
        ls = r.uniform(0.1, 1, 8)
        w2, b2 = r.standard_normal((8, 32)), r.standard_normal(8)
        h = r.standard_normal((5, 32))
        w, b = fold.fold_layer_scale(w2, b2, ls)
        self.assertLess(rel_err(h @ w.T + b, ls * (h @ w2.T + b2)), 1e-12)

    def test_layout(self):
        w = self.rng.standard_normal((10, 3, 5, 7))  # (K, Cg, R, S)
        k = fold.conv_weight_layout(w)
        self.assertEqual(k.shape, (5, 7, 3, 10))
        self.assertEqual(k[4, 6, 2, 9], w[9, 2, 4, 6])
        self.assertTrue(k.flags["C_CONTIGUOUS"])
        self.assertEqual(fold.conv_weight_layout(w[:, :, 0, 0]).shape, (1, 1, 3, 10))


class MatchTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(SEED)

    def one(self, m):
        es = match.plan(m)
        self.assertEqual(es[0].path, "")
        return es

    def check_block(self, m, family, x, tol=1e-10, forward=mocks.forward):
        es = self.one(m)
        self.assertEqual(es[0].kind, "block", es[0].reason)
        self.assertEqual(es[0].shape.family, family)
        folded = match.fold_entry(es[0])
        y = mocks.family_forward(es[0].shape, folded, x)
        self.assertLess(rel_err(y, forward(m, x)), tol, f"{family}, seed {SEED}")
        return es[0]

    def test_inverted_residual(self):
        m = mocks.inverted_residual(self.rng, 8, 8, 1, 6)
        e = self.check_block(m, "mbconv", self.rng.standard_normal((2, 8, 9, 7)) * 2)
        self.assertEqual((e.shape.c, e.shape.e, e.shape.k, e.shape.act, e.shape.se), (8, 6, 3, "relu6", False))
        self.assertEqual(e.shape.key(2, 9, 7, "f16"), "mbconv:n=2,c=8,h=9,w=7,e=6,k=3,stride=1,act=relu6,dtype=f16")

    def test_mbconv_se(self):
        m = mocks.mbconv(self.rng, 16, 16, 5, 1, 6)
        e = self.check_block(m, "mbconv", self.rng.standard_normal((2, 16, 7, 6)))
        self.assertEqual((e.shape.k, e.shape.se, e.shape.act), (5, True, "silu"))

    def test_fused_mbconv(self):
        m = mocks.fused_mbconv(self.rng, 8, 8, 3, 1, 4)
        self.check_block(m, "fused_mbconv", self.rng.standard_normal((1, 8, 6, 6)))

    def test_cnblock(self):
        m = mocks.cnblock(self.rng, 8)
        e = self.check_block(m, "convnext", self.rng.standard_normal((2, 8, 9, 9)))
        self.assertEqual((e.shape.act, e.shape.e, e.shape.k), ("gelu_erf", 4, 7))
        m = mocks.cnblock(self.rng, 8, approximate="tanh")
        self.assertEqual(self.one(m)[0].shape.act, "gelu")

    def test_left_blocks_and_their_convolutions(self):
        r = self.rng
        cases = [(mocks.inverted_residual(r, 8, 16, 2, 6), "no residual", 3),
                 (mocks.inverted_residual(r, 8, 8, 1, 1), "no expand layer", 2),
                 (mocks.mbconv(r, 16, 24, 3, 2, 6), "no residual", 3),
                 (mocks.cnblock(r, 8, eps=1e-5), "eps", 1)]
        for m, why, convs in cases:
            es = self.one(m)
            self.assertEqual(es[0].kind, "left")
            self.assertIn(why, es[0].reason)
            self.assertNotIn("?", es[0].reason)
            conv_entries = [e for e in es if e.kind == "conv"]
            self.assertEqual(len(conv_entries), convs, [e.path for e in es])
        # InvertedResidual without residual: expand and depthwise as whole Conv2dNormActivation, the
        # projection Conv2d with its BatchNorm sibling absorbed (-> Identity)
        es = match.plan(mocks.inverted_residual(r, 8, 16, 2, 6))
        self.assertEqual([e.path for e in es], ["", "conv.0", "conv.1", "conv.2"])
        self.assertEqual(es[3].identity, ["conv.3"])
        self.assertEqual(es[2].shape.key(1, 9, 9, "f16"),
                         "conv2d:n=1,c=48,h=9,w=9,k=48,r=3,s=3,stride=2,pad=1,groups=48,bias=1,act=relu6,dtype=f16")
        # Squeeze-Excitation's 1x1 convolutions stay inside it
        es = match.plan(mocks.mbconv(r, 16, 24, 3, 2, 6))
        self.assertEqual([(e.path, e.kind) for e in es],
                         [("", "left"), ("block.0", "conv"), ("block.1", "conv"), ("block.2", "left"), ("block.3", "conv")])
        self.assertIn("Squeeze-Excitation", es[3].reason)

    def test_conv_runs_fold(self):
        r = self.rng
        for act in (mocks.ReLU6, mocks.SiLU, None):
            m = mocks.cna(r, 6, 12, 3, 2, act=act)
            es = match.plan(m)
            self.assertEqual([(e.path, e.kind) for e in es], [("", "conv")])
            x = r.standard_normal((2, 6, 9, 8))
            y = mocks.conv_forward(es[0].shape, match.fold_entry(es[0]), x)
            self.assertLess(rel_err(y, mocks.forward(m, x)), 1e-12)
        # an activation without a kernel stays outside the replaced convolution
        m = mocks.seq(mocks.conv(r, 4, 4, 1), mocks.bn(r, 4), mocks.Hardswish())
        es = match.plan(m)
        self.assertEqual([(e.path, e.identity, e.shape.act) for e in es], [("0", ["1"], "none")])
        self.assertEqual(match.plan(m, convs=False), [])

    def test_wrong_squeeze(self):
        m = mocks.mbconv(self.rng, 16, 16, 3, 1, 6)
        m.block._children[2][1].fc1.out_channels = 8
        self.assertIn("squeezes to 8", self.one(m)[0].reason)


class ModelsTest(unittest.TestCase):
    def test_keys(self):
        mv2 = models.mobilenet_v2()
        blocks = [s for _, s, _ in mv2 if isinstance(s, match.BlockShape)]
        self.assertEqual(len(blocks), 10)  # the stride-1 same-width blocks of 17
        self.assertEqual(len(mv2), 2 + 10 + 6 * 3 + 2)
        self.assertEqual(mv2[-1][2], 7)
        eb0 = models.efficientnet_b0()
        self.assertEqual(sum(isinstance(s, match.BlockShape) for _, s, _ in eb0), 9)
        self.assertEqual(eb0[-1][2], 7)
        cn = models.convnext_tiny()
        self.assertEqual(sum(isinstance(s, match.BlockShape) for _, s, _ in cn), 18)
        self.assertEqual(cn[-1][2], 7)
        ks = models.keys("mobilenet_v2", [1, 8])
        self.assertEqual(len(ks), len(set(ks)))
        self.assertIn("mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16", ks)
        with self.assertRaises(ValueError):
            models.keys("resnet50", [1])


if __name__ == "__main__":
    unittest.main()
