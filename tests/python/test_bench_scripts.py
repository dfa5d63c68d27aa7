#!/usr/bin/env python3
"""Self-check of bench/pytorch_baseline.py (conv2d and fused-block key parsing, the block call
plan and its wiring with stand-ins for torch: no torch needed), bench/merge_results.py (on synthetic
JSON), bench/torch_convpool.py's key reading and bench/convpool_report.py. Run: python3 tests/python/test_bench_scripts.py
Runs every check, exits non-zero if any failed. Also collectable by pytest (test_* functions)."""
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import pytorch_baseline as pb  # noqa: E402


def expect_error(key, fragment):
    """parse_conv2d(key) must raise WorkloadError whose message contains `fragment`."""
    try:
        pb.parse_conv2d(key)
    except pb.WorkloadError as e:
        assert fragment in str(e), f"error for {key!r} is {str(e)!r}, expected to mention {fragment!r}"
        assert key in str(e), f"error for {key!r} does not quote the key: {e}"
        return
    raise AssertionError(f"{key!r} parsed but should have failed ({fragment})")


def test_parse_basic():
    w = pb.parse_conv2d("conv2d:n=2,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,groups=1,dtype=f16")
    assert (w.n, w.c, w.h, w.w, w.k, w.r, w.s) == (2, 64, 56, 56, 64, 3, 3)
    assert (w.stride_h, w.stride_w, w.dil_h, w.dil_w, w.groups) == (1, 1, 1, 1, 1)
    assert (w.pad_t, w.pad_b, w.pad_l, w.pad_r) == (1, 1, 1, 1)
    assert (w.bias, w.act, w.dtype) == (False, "none", "f16")
    assert (w.out_h(), w.out_w()) == (56, 56)
    # Defaults when optional fields are absent.
    w = pb.parse_conv2d("conv2d:n=1,c=8,h=5,w=7,k=4,r=1,s=1")
    assert (w.stride_h, w.pad_t, w.dil_w, w.groups, w.bias, w.act, w.dtype) == (1, 0, 1, 1, False, "none", "f32")


def test_parse_asymmetric_dilation_bias_act():
    key = ("conv2d:n=1,c=32,h=17,w=20,k=16,r=3,s=5,stride_h=2,stride_w=1,"
           "pad_t=0,pad_b=1,pad_l=2,pad_r=3,dil_h=2,dil_w=1,groups=4,bias=1,act=gelu,dtype=bf16")
    w = pb.parse_conv2d(key)
    assert (w.stride_h, w.stride_w) == (2, 1)
    assert (w.pad_t, w.pad_b, w.pad_l, w.pad_r) == (0, 1, 2, 3)
    assert (w.dil_h, w.dil_w) == (2, 1)
    assert (w.groups, w.bias, w.act, w.dtype) == (4, True, "gelu", "bf16")
    # out_h = (17 + 0 + 1 - 2*2 - 1)//2 + 1 = 7; out_w = (20 + 5 - 4 - 1)//1 + 1 = 21
    assert (w.out_h(), w.out_w()) == (7, 21)
    # The canonical key round-trips and matches the C++ to_key() field order.
    assert pb.to_key(w) == key
    assert pb.to_key(pb.parse_conv2d(pb.to_key(w))) == key
    # torch call plan: top != bottom, so F.pad(left, right, top, bottom) then padding 0.
    a = pb.conv_call_args(w)
    assert a["pre_pad"] == (2, 3, 0, 1) and a["padding"] == (0, 0)
    assert a["stride"] == (2, 1) and a["dilation"] == (2, 1) and a["groups"] == 4
    # Per-side pads that conv2d can express (t == b, l == r) use its own padding.
    a = pb.conv_call_args(pb.parse_conv2d("conv2d:n=1,c=4,h=8,w=8,k=4,r=3,s=1,pad_t=1,pad_b=1,pad_l=0,pad_r=0"))
    assert a["pre_pad"] is None and a["padding"] == (1, 0)
    # Every activation name is accepted; relu with bias.
    for act in pb.ACTIVATIONS:
        assert pb.parse_conv2d(f"conv2d:n=1,c=4,h=4,w=4,k=4,r=1,s=1,bias=1,act={act}").act == act


def test_canonical_key():
    sym = "conv2d:n=1,c=8,h=8,w=8,k=8,r=3,s=3,stride=1,pad=1,groups=1,dtype=f32"
    long = "conv2d:dtype=f32,s=3,r=3,k=8,w=8,h=8,c=8,n=1,pad_t=1,pad_b=1,pad_l=1,pad_r=1,dil=1,bias=0,act=none"
    assert pb.canonical_key(long) == sym
    assert pb.canonical_key(" mbconv:n=1,c=8 ") == "mbconv:n=1,c=8"  # other families: unchanged


def test_invalid_keys():
    expect_error("conv2d:n=2,c=64,h=56,w=56,r=3,s=3", "missing field 'k'")
    expect_error("conv2d:n=1,c=4,h=4,w=4,k=4,r=3,s=3,pad=1,pad_t=0", "'pad' and 'pad_t' are both given")
    expect_error("conv2d:n=1,c=4,h=4,w=4,k=4,r=3,s=3,act=tanh", "field 'act' = 'tanh'")
    expect_error("conv2d:n=1,c=4,h=4,w=4,k=4,r=3,s=3,dtype=f64", "field 'dtype' = 'f64'")
    expect_error("conv2d:n=1,c=4,h=4x,w=4,k=4,r=3,s=3", "'4x' is not an integer")
    expect_error("conv2d:n=1,c=4,h=4,w=4,k=4,r=3,s=3,bias=2", "must be 0 or 1")
    expect_error("conv2d:n=1,c=6,h=4,w=4,k=4,r=1,s=1,groups=4", "does not divide c = 6")
    expect_error("conv2d:n=1,c=4,h=2,w=4,k=4,r=3,s=1,dil_h=2", "empty output")
    expect_error("conv2d:n=1,c=4,h=4,w=4,k=4,r=1,s=1,foo=3", "unknown field 'foo'")
    expect_error("conv2d:n=1,n=2,c=4,h=4,w=4,k=4,r=1,s=1", "given twice")
    expect_error("conv2d:n=1,c=4,h=4,w=4,k=4,r=1,s=1,", "trailing ','")
    expect_error("n=1,c=4", "no ':' found")
    expect_error("conv2d:n=0,c=4,h=4,w=4,k=4,r=1,s=1", "must be positive")


def test_suite_file():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "suite.txt")
        with open(path, "w") as fh:
            fh.write("# comment line\n\n"
                     "a conv2d:n=1,c=4,h=4,w=4,k=4,r=1,s=1  # trailing comment\n"
                     "   \n"
                     "b mbconv:n=1,c=8,h=8,w=8,expand=4\n")
        entries = pb.load_suite(path)
        assert [n for n, _ in entries] == ["a", "b"]
        assert [pb.key_family(k) for _, k in entries] == ["conv2d", "mbconv"]
        with open(path, "a") as fh:
            fh.write("broken\n")
        try:
            pb.load_suite(path)
        except pb.WorkloadError as e:
            assert f"{path}:6:" in str(e), str(e)
        else:
            raise AssertionError("a line without a key should be rejected")


def test_select_entries():
    entries = [("a", "conv2d:n=1,c=4,h=4,w=4,k=4,r=1,s=1,dtype=f16"),
               ("b", "conv2d:n=1,c=4,h=4,w=4,k=4,r=1,s=1"),  # f32 by default
               ("m", "mbconv:n=1,c=8"), ("bad", "conv2d:n=1,c=4")]
    kept, unknown = pb.select_entries(entries, dtype="f16")
    assert [n for n, _ in kept] == ["a", "m", "bad"] and unknown == [], kept
    kept, unknown = pb.select_entries(entries, only=["b", "a"], dtype="f32")
    assert [n for n, _ in kept] == ["b"] and unknown == [], kept
    assert pb.select_entries(entries, only=["a", "zz"])[1] == ["zz"]


# --- fused-block keys (mirror of runtime/block.cpp) -------------------------------------------

BLOCK_KEYS = [  # canonical forms, as the C++ to_key(BlockWorkload) prints them
    "mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16",
    "fused_mbconv:n=128,c=48,h=56,w=56,e=4,k=3,stride=1,act=silu,dtype=f16",
    "ffn:n=128,c=256,h=14,w=14,e=4,act=relu,dtype=f16",
    "convfirst:n=128,c=64,h=56,w=56,e=4,k=3,stride=1,act=relu,dtype=f16",
    "convnext:n=128,c=96,h=56,w=56,e=4,k=7,stride=1,act=gelu,dtype=f16",
    "mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,blocks=3,act=relu6,dtype=f16",
    "mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,se=1,act=relu6,dtype=f16",
]


def expect_block_error(key, fragment):
    """parse_block(key) must raise WorkloadError whose message contains `fragment`."""
    try:
        pb.parse_block(key)
    except pb.WorkloadError as e:
        assert fragment in str(e), f"error for {key!r} is {str(e)!r}, expected to mention {fragment!r}"
        assert f"invalid workload '{key}'" in str(e), f"error for {key!r} does not quote the key: {e}"
        return
    raise AssertionError(f"{key!r} parsed but should have failed ({fragment})")


def test_parse_block_round_trip():
    for key in BLOCK_KEYS:
        assert pb.is_block_key(key) and pb.key_family(key) in pb.BLOCK_FAMILIES, key
        b = pb.parse_block(key)
        assert pb.to_key(b) == key and pb.block_to_key(b) == key, (pb.to_key(b), key)
        assert pb.to_key(pb.parse_block(pb.to_key(b))) == key
        assert pb.canonical_key(f"  {key} ") == key
        assert pb.parse_key(key) == b
    b = pb.parse_block(BLOCK_KEYS[0])
    assert (b.family, b.n, b.c, b.h, b.w, b.e, b.k, b.stride, b.act, b.dtype) == \
        ("mbconv", 128, 24, 56, 56, 6, 3, 1, "relu6", "f16")
    # Fields in any order, other activations and dtypes, stride 2 and k=5 round-trip too.
    key = "mbconv:dtype=bf16,act=gelu,stride=2,k=5,e=2,w=7,h=9,c=8,n=2"
    assert pb.canonical_key(key) == "mbconv:n=2,c=8,h=9,w=7,e=2,k=5,stride=2,act=gelu,dtype=bf16"
    for act in ("relu", "relu6", "silu", "gelu", "sigmoid"):
        assert pb.parse_block(f"fused_mbconv:n=1,c=8,h=4,w=4,e=2,act={act}").act == act
    assert not pb.is_block_key("conv2d:n=1,c=4") and not pb.is_block_key("attention:n=1")
    assert pb.parse_key("conv2d:n=1,c=4,h=4,w=4,k=4,r=1,s=1").k == 4  # conv2d keys still go to parse_conv2d


def test_block_defaults():
    # k=3 (ffn: 1), stride=1, act by family, dtype f32 when left out; the canonical key spells them.
    expect = {
        "mbconv": "mbconv:n=1,c=8,h=5,w=5,e=2,k=3,stride=1,act=relu6,dtype=f32",
        "fused_mbconv": "fused_mbconv:n=1,c=8,h=5,w=5,e=2,k=3,stride=1,act=silu,dtype=f32",
        "ffn": "ffn:n=1,c=8,h=5,w=5,e=2,act=relu,dtype=f32",
        "convfirst": "convfirst:n=1,c=8,h=5,w=5,e=2,k=3,stride=1,act=relu,dtype=f32",
        "convnext": "convnext:n=1,c=8,h=5,w=5,e=2,k=7,stride=1,act=gelu,dtype=f32",
    }
    for family, canon in expect.items():
        b = pb.parse_block(f"{family}:n=1,c=8,h=5,w=5,e=2")
        assert (b.k, b.stride, b.dtype) == ({"ffn": 1, "convnext": 7}.get(family, 3), 1, "f32"), b
        assert b.act == pb.BLOCK_DEFAULT_ACT[family]
        assert pb.to_key(b) == canon, pb.to_key(b)
    # ffn accepts k=1 and stride=1 spelled out, and prints neither.
    assert pb.canonical_key("ffn:n=1,c=8,h=5,w=5,e=2,k=1,stride=1") == expect["ffn"]
    # Other families and unparsable block keys stay as they are.
    assert pb.canonical_key("mbconv:n=1,c=8,h=5,w=5,e=2,k=4") == "mbconv:n=1,c=8,h=5,w=5,e=2,k=4"


def test_block_invalid_keys():
    expect_block_error("mbconv:n=1,c=8,h=5,w=5", "missing field 'e'")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,k=4", "field 'k' = 4 must be odd (same padding)")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,stride=3", "field 'stride' = 3 must be 1 or 2")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,act=none",
                       "field 'act' = 'none' is not one of relu, relu6, silu, gelu, gelu_erf, sigmoid")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,act=tanh", "field 'act' = 'tanh'")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,dtype=f64", "field 'dtype' = 'f64' is not supported")
    expect_block_error("ffn:n=1,c=8,h=5,w=5,e=2,se=1", "Squeeze-Excitation is part of mbconv only")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,se=2", "field 'se' = 2 must be 0 or 1")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,blocks=2,se=1", "of blocks with se=1 is not supported")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,r=3", "unknown field 'r'")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=0", "field 'e' = 0 must be positive")
    expect_block_error("mbconv:n=1,c=8,h=5x,w=5,e=2", "field 'h' = '5x' is not an integer")
    expect_block_error("ffn:n=1,c=8,h=5,w=5,e=2,k=3", "ffn has no spatial kernel: k and stride must be 1")
    expect_block_error("ffn:n=1,c=8,h=5,w=5,e=2,stride=2", "ffn has no spatial kernel")
    expect_block_error("convfirst:n=1,c=12,h=5,w=5,e=2", "field 'c' = 12 must be a multiple of the group width 8")
    expect_block_error("convfirst:n=1,c=16,h=5,w=5,e=2,act=silu", "convfirst uses ReLU (act=relu)")
    expect_block_error("mbconv:n=65536,c=64,h=64,w=64,e=6", "tensor has more than 2^31 elements")
    expect_block_error("se_block:n=1,c=8,h=5,w=5,e=2", "is not one of mbconv, fused_mbconv, ffn, convfirst")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,", "trailing ','")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,blocks=5", "field 'blocks' = 5 must be 1 to 4")
    expect_block_error("mbconv:n=1,c=8,h=5,w=5,e=2,blocks=0", "field 'blocks' = 0 must be 1 to 4")
    expect_block_error("mbconv:n=1,c=8,h=9,w=9,e=2,stride=2,blocks=2", "a stage (blocks = 2) needs stride 1")


def test_block_layers_and_flops():
    # mbconv (the brief's key): 1x1 c->E + act, depthwise 3x3 (groups=E) + act, 1x1 E->c, residual.
    b = pb.parse_block("mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16")
    plan = pb.block_call_plan(b)
    assert [L["weight_shape"] for L in plan["layers"]] == [(144, 24, 1, 1), (144, 1, 3, 3), (24, 144, 1, 1)]
    assert [L["groups"] for L in plan["layers"]] == [1, 144, 1]
    assert [L["padding"] for L in plan["layers"]] == [(0, 0), (1, 1), (0, 0)]
    assert [L["act"] for L in plan["layers"]] == ["relu6", "relu6", "none"]
    assert [L["bias_shape"] for L in plan["layers"]] == [(144,), (144,), (24,)]
    assert plan["residual"] and (b.out_h(), b.out_w()) == (56, 56)
    # 2 flops per MAC: 2 * N*H*W * (c*E + 9*E + E*c)
    assert pb.block_flops(b) == 2.0 * 128 * 56 * 56 * (24 * 144 + 9 * 144 + 144 * 24) == 6589513728.0
    # A stage of three: three times the flops, the same layers per block, residual per block.
    s = pb.parse_block("mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,blocks=3,act=relu6,dtype=f16")
    assert pb.block_flops(s) == 3 * 6589513728.0 and pb.block_call_plan(s)["blocks"] == 3
    assert pb.block_call_plan(s)["layers"] == plan["layers"] and pb.block_call_plan(s)["residual"]
    # Squeeze-Excitation: reduce to c // 4 = 6 channels and back, 2 flops per MAC per image (the C++
    # block_costs() total); its layers are the plain block's.
    se = pb.parse_block("mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,se=1,act=relu6,dtype=f16")
    assert pb.block_flops(se) == 6589513728.0 + 2.0 * 128 * 2 * 144 * 6
    assert pb.block_call_plan(se)["se"]["weight_shapes"] == [(6, 144, 1, 1), (144, 6, 1, 1)]
    assert pb.block_call_plan(se)["layers"] == plan["layers"]
    # Stride 2 on odd sizes: the depthwise layer downsamples, no residual.
    b = pb.parse_block("mbconv:n=1,c=8,h=9,w=11,e=2,k=5,stride=2,act=silu")
    plan = pb.block_call_plan(b)
    assert plan["layers"][1]["stride"] == (2, 2) and plan["layers"][1]["padding"] == (2, 2)
    assert not plan["residual"] and (b.out_h(), b.out_w()) == (5, 6)
    assert [(l.h, l.w) for l in b.layers()] == [(9, 11), (9, 11), (5, 6)]
    # fused_mbconv: kxk c->E + act, 1x1 E->c.
    plan = pb.block_call_plan(pb.parse_block("fused_mbconv:n=1,c=8,h=7,w=9,e=4,k=3"))
    assert [L["weight_shape"] for L in plan["layers"]] == [(32, 8, 3, 3), (8, 32, 1, 1)]
    assert [L["act"] for L in plan["layers"]] == ["silu", "none"] and plan["residual"]
    # ffn: two 1x1 convs, no residual.
    b = pb.parse_block("ffn:n=2,c=12,h=5,w=7,e=4,act=gelu")
    plan = pb.block_call_plan(b)
    assert [L["weight_shape"] for L in plan["layers"]] == [(48, 12, 1, 1), (12, 48, 1, 1)]
    assert [L["act"] for L in plan["layers"]] == ["gelu", "none"] and not plan["residual"]
    assert pb.block_flops(b) == 2.0 * 2 * 5 * 7 * (12 * 48 * 2)
    # convfirst: grouped kxk c->c (group width 8) without act, 1x1 c->E + ReLU, 1x1 E->c, residual.
    b = pb.parse_block("convfirst:n=1,c=16,h=9,w=7,e=2")
    plan = pb.block_call_plan(b)
    assert [L["weight_shape"] for L in plan["layers"]] == [(16, 8, 3, 3), (32, 16, 1, 1), (16, 32, 1, 1)]
    assert [L["groups"] for L in plan["layers"]] == [2, 1, 1]
    assert [L["act"] for L in plan["layers"]] == ["none", "relu", "none"] and plan["residual"]
    assert pb.block_flops(b) == 2.0 * 9 * 7 * (16 * 8 * 9 + 16 * 32 + 32 * 16)
    assert not pb.block_call_plan(pb.parse_block("convfirst:n=1,c=16,h=9,w=7,e=2,stride=2"))["residual"]
    # convnext: depthwise 7x7 (groups=c) then LayerNorm, 1x1 c->E + GELU, 1x1 E->c, residual.
    b = pb.parse_block("convnext:n=1,c=8,h=9,w=7,e=4")
    plan = pb.block_call_plan(b)
    assert [L["weight_shape"] for L in plan["layers"]] == [(8, 1, 7, 7), (32, 8, 1, 1), (8, 32, 1, 1)]
    assert [L["groups"] for L in plan["layers"]] == [8, 1, 1] and plan["layers"][0]["padding"] == (3, 3)
    assert [L["act"] for L in plan["layers"]] == ["none", "gelu", "none"] and plan["residual"]
    assert [L["norm_after"] for L in plan["layers"]] == [True, False, False]
    assert pb.block_flops(b) == 2.0 * 9 * 7 * (8 * 49 + 8 * 32 + 32 * 8)
    assert not any(L["norm_after"] for L in pb.block_call_plan(pb.parse_block(BLOCK_KEYS[0]))["layers"])


class _FakeT:
    """Shape-only stand-in for a tensor (make_block_forward's wiring, without torch)."""
    def __init__(self, shape, log):
        self.shape, self.log = tuple(shape), log

    def __add__(self, other):
        assert other.shape == self.shape, (self.shape, other.shape)
        self.log.append(("add", self.shape))
        return _FakeT(self.shape, self.log)

    def __mul__(self, other):  # broadcast (N, C, 1, 1) over (N, C, H, W), as the SE gate does
        assert other.shape[:2] == self.shape[:2] and other.shape[2:] in ((1, 1), self.shape[2:]), (self.shape, other.shape)
        self.log.append(("mul", self.shape))
        return _FakeT(self.shape, self.log)


def test_block_forward_wiring():
    log = []

    def conv2d(x, w, b, stride, padding, dilation, groups):
        n, c, h, wd = x.shape
        k, cg, r, s = w.shape
        assert c == cg * groups and b.shape == (k,), (x.shape, w.shape, b.shape, groups)
        log.append(("conv2d", x.shape, w.shape, stride, padding, groups))
        return _FakeT((n, k, (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1,
                       (wd + 2 * padding[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1), log)

    def act(name):
        return lambda y: (log.append((name,)), y)[1]

    acts = {a: act(a) for a in pb.ACTIVATIONS if a != "none"}
    for key, expect_ops in (
            ("mbconv:n=2,c=8,h=9,w=7,e=3,k=5,stride=1,act=gelu",
             ["conv2d", "gelu", "conv2d", "gelu", "conv2d", "add"]),
            ("mbconv:n=2,c=8,h=9,w=7,e=3,k=5,stride=2", ["conv2d", "relu6", "conv2d", "relu6", "conv2d"]),
            ("fused_mbconv:n=1,c=8,h=4,w=4,e=2", ["conv2d", "silu", "conv2d", "add"]),
            ("ffn:n=1,c=8,h=4,w=4,e=2", ["conv2d", "relu", "conv2d"]),
            ("convfirst:n=1,c=16,h=5,w=3,e=2", ["conv2d", "conv2d", "relu", "conv2d", "add"]),
            ("convnext:n=1,c=8,h=9,w=9,e=4", ["conv2d", "norm", "conv2d", "gelu", "conv2d", "add"]),
            ("ffn:n=1,c=8,h=4,w=4,e=2,blocks=2", ["conv2d", "relu", "conv2d"] * 2),
            ("mbconv:n=1,c=8,h=5,w=7,e=2,blocks=3",
             ["conv2d", "relu6", "conv2d", "relu6", "conv2d", "add"] * 3),
            ("mbconv:n=1,c=8,h=5,w=7,e=2,se=1,act=silu",
             ["conv2d", "silu", "conv2d", "silu", "mean", "conv2d", "silu", "conv2d", "sigmoid", "mul", "conv2d",
              "add"])):
        log.clear()
        b = pb.parse_block(key)
        plan = pb.block_call_plan(b)
        params = []
        for wshape, bshape in pb.plan_param_shapes(plan):
            params += [_FakeT(wshape, log), _FakeT(bshape, log)]

        def mean(y):
            log.append(("mean",))
            return _FakeT((y.shape[0], y.shape[1], 1, 1), log)
        y = pb.make_block_forward(plan, conv2d, acts, act("norm"), mean)(_FakeT((b.n, b.c, b.h, b.w), log), *params)
        assert [op[0] for op in log] == expect_ops, (key, log)
        assert y.shape == (b.n, b.c, b.out_h(), b.out_w()), (key, y.shape)
        layer_shapes = [L["weight_shape"] for L in plan["layers"]]
        used = (layer_shapes[:2] + plan["se"]["weight_shapes"] + layer_shapes[2:]) if b.se else layer_shapes * b.blocks
        assert [op[2] for op in log if op[0] == "conv2d"] == used, (key, log)
    # A block with a LayerNorm and no norm function is refused, not run without its norm.
    try:
        pb.make_block_forward(pb.block_call_plan(pb.parse_block("convnext:n=1,c=8,h=9,w=9,e=4")), conv2d, acts)
    except ValueError as e:
        assert "LayerNorm" in str(e)
    else:
        raise AssertionError("convnext without channel_norm was accepted")


def test_stem_keys():
    # Mirror of runtime/stem.cpp: c=3 and k=64 by default, canonical order n,h,w,c,k,dtype.
    s = pb.parse_stem("stem:w=224,h=224,n=128,dtype=f16")
    assert pb.to_key(s) == "stem:n=128,h=224,w=224,c=3,k=64,dtype=f16" == pb.canonical_key("stem:n=128,h=224,w=224,dtype=f16")
    assert pb.parse_key(pb.to_key(s)) == s and pb.is_stem_key(pb.to_key(s)) and not pb.is_block_key(pb.to_key(s))
    assert (s.conv().out_h(), s.out_h(), s.out_w()) == (112, 56, 56)
    assert (pb.parse_stem("stem:n=1,h=7,w=5").out_h(), pb.parse_stem("stem:n=1,h=7,w=5").out_w()) == (2, 2)
    assert pb.stem_flops(s) == 2.0 * 128 * 112 * 112 * 64 * 3 * 9
    for key, fragment in (("stem:n=1,h=8", "missing field 'w'"), ("stem:n=1,h=8,w=8,k=0", "field 'k' = 0 must be positive"),
                          ("stem:n=1,h=8,w=8,r=3", "unknown field 'r'"), ("stem:n=1,h=8,w=8,dtype=i8", "field 'dtype' = 'i8'"),
                          ("stem:n=1,h=8,w=x", "field 'w' = 'x' is not an integer")):
        try:
            pb.parse_stem(key)
        except pb.WorkloadError as e:
            assert fragment in str(e) and f"invalid workload '{key}'" in str(e), (key, str(e))
        else:
            raise AssertionError(f"{key} parsed")


def test_select_entries_blocks():
    entries = [("m16", "mbconv:n=1,c=8,h=5,w=5,e=2,dtype=f16"), ("m32", "mbconv:n=1,c=8,h=5,w=5,e=2"),
               ("f16", "ffn:n=1,c=8,h=5,w=5,e=2,dtype=f16"), ("badblock", "ffn:n=1,c=8,h=5,w=5,e=2,k=3"),
               ("other", "attention:n=1")]
    kept, unknown = pb.select_entries(entries, dtype="f16")
    assert [n for n, _ in kept] == ["m16", "f16", "badblock", "other"] and unknown == [], kept
    kept, _ = pb.select_entries(entries, dtype="f32")
    assert [n for n, _ in kept] == ["m32", "badblock", "other"], kept


def test_blocks_suite_file():
    # workloads/blocks.txt (when present): every key parses, its family is a block family (or
    # conv2d: Conv-BN-Act is a conv2d with folded BN and an activation), and it is written in
    # canonical form (so that result rows join on it unchanged).
    path = os.path.join(ROOT, "workloads", "blocks.txt")
    if not os.path.exists(path):
        return
    entries = pb.load_suite(path)
    assert entries, path
    for name, key in entries:
        assert pb.key_family(key) in pb.SUPPORTED_FAMILIES, (name, key)
        b = pb.parse_key(key)
        assert pb.to_key(b) == key, (name, key, pb.to_key(b))
        if pb.key_family(key) != "conv2d":  # conv2d rows carry no flops on the PyTorch side
            assert pb.workload_flops(b) > 0


def _ours_row(name, key, strategy, ms, ok=True, default=False, dtype="f16"):
    return {"workload": name, "key": key, "strategy": strategy, "default": default, "dtype": dtype,
            "flops": 1e9, "bytes": 1e6, "flops_per_byte": 1e3, "runtime_ms": ms, "min_ms": ms * 0.9,
            "max_ms": ms * 1.1, "host_ms": ms * 1.2, "gbps": 1e6 / (ms * 1e-3) / 1e9,
            "gflops": 1e9 / (ms * 1e-3) / 1e9, "pct_copy_bw": 10.0 / ms, "pct_ffma": 5.0 / ms,
            "check_ok": ok, "rel_l2": 1e-4 if ok else 0.5}


def test_merge():
    key_a = "conv2d:n=2,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,groups=1,dtype=f16"
    key_b = "conv2d:n=1,c=32,h=28,w=28,k=32,r=1,s=1,stride=1,pad=0,groups=1,dtype=f16"
    ours = {"context": {"device": "cuda", "gpu": {"name": "Test GPU"}, "halide_version": "21.0.0",
                        "ceilings": {"copy_gbps": 4000.0, "ffma_f32_tflops": 60.0, "hfma2_f16_tflops": 120.0}},
            "results": [
                _ours_row("a", key_a, "direct", 0.40, default=True),
                _ours_row("a", key_a, "tiled", 0.20),
                _ours_row("a", key_a, "broken_fast", 0.05, ok=False),  # fastest, but failed its check
                _ours_row("b", key_b, "pw", 0.10, default=True),
            ]}
    # Torch side: row "a" written with a non-canonical but equivalent key; no row for "b".
    torch_doc = {"context": {"gpu": "Test GPU", "torch_version": "2.11"},
                 "results": [{"name": "a", "dtype": "f16", "eager_ms": 0.5, "eager_ms_repeat": 0.51,
                              "compile_ms": 0.3, "compile_error": None, "compile_check_ok": True,
                              "eager_host_ms": 0.6,
                              "key": key_a.replace("pad=1", "pad_t=1,pad_b=1,pad_l=1,pad_r=1")}]}
    with tempfile.TemporaryDirectory() as d:
        po, pt = os.path.join(d, "ours.json"), os.path.join(d, "torch.json")
        md, cs = os.path.join(d, "summary.md"), os.path.join(d, "merged.csv")
        json.dump(ours, open(po, "w"))
        json.dump(torch_doc, open(pt, "w"))
        proc = subprocess.run([sys.executable, os.path.join(BENCH, "merge_results.py"), "--ours", po,
                               "--torch", pt, "--out-md", md, "--out-csv", cs],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        with open(cs, newline="") as fh:
            rows = {r["workload"]: r for r in csv.DictReader(fh)}
        with open(md) as fh:
            md_text = fh.read()
    assert proc.stdout == md_text, "stdout should carry the same Markdown as --out-md"
    a, b = rows["a"], rows["b"]
    # Best = lowest runtime among rows that passed the check (not the failing 0.05 ms one).
    assert a["variant"] == "tiled" and a["ours best ms"] == "0.2", a
    assert a["default variant"] == "direct" and a["default ms"] == "0.4", a
    assert a["eager/ours"] == "2.50" and a["compile/ours"] == "1.50", a
    assert a["torch eager ms"] == "0.5" and a["torch.compile ms"] == "0.3", a
    assert a["check"].startswith("ok (1/3 variants failed)"), a
    # Host-inclusive latency: the best row's host_ms (1.2x its runtime here) against torch's eager_host_ms.
    assert a["ours host ms"] == "0.24" and a["torch eager host ms"] == "0.6" and a["eager host/ours host"] == "2.50", a
    assert b["ours host ms"] == "0.12" and b["torch eager host ms"] == "n/a" and b["eager host/ours host"] == "n/a", b
    assert a["GB/s"] == "5.0" and a["% copy BW"] == "50.0", a
    # No torch row: torch columns and ratios are n/a.
    assert b["variant"] == "pw" and b["torch eager ms"] == "n/a" and b["eager/ours"] == "n/a", b
    assert b["compile/ours"] == "n/a" and b["check"] == "ok", b
    # The Markdown table holds the same cells.
    assert "| a | f16 | 0.2 | tiled |" in md_text and "| 2.50 | 1.50 |" in md_text, md_text
    assert "b: no torch row" in md_text
    assert "noisy" not in md_text  # eager 0.5 vs repeat 0.51 ms is within the 20% band
    # Neither file names its L2 flush: both were memsets (the only flush before --l2-flush), no warning.
    assert md_text.count("L2 flush: write") == 2 and "flushes differ" not in md_text, md_text
    import merge_results as mr
    ours["context"]["l2_flush"] = "read"
    md_read = mr.to_markdown(mr.merge(ours, torch_doc)[0], ours, torch_doc, [])
    assert "L2 flush: read" in md_read and "**warning: L2 flushes differ** (ours 'read', torch 'write')" in md_read, md_read
    torch_doc["context"]["timing"] = {"l2_flush_kind": "read"}
    md_same = mr.to_markdown(mr.merge(ours, torch_doc)[0], ours, torch_doc, [])
    assert "flushes differ" not in md_same and md_same.count("L2 flush: read") == 2, md_same
    del ours["context"]["l2_flush"], torch_doc["context"]["timing"]
    # Without measured ceilings the harness writes 0 for the percentages: shown as n/a.
    del ours["context"]["ceilings"]
    table, _, _ = mr.merge(ours, torch_doc)
    row_a = dict(zip(mr.COLUMNS, table[0]))
    assert row_a["% copy BW"] == "n/a" and row_a["% FFMA"] == "n/a" and row_a["GB/s"] == "5.0", row_a


def test_help_without_torch():
    # --help must work where torch is not installed (imports are lazy).
    for script in ("pytorch_baseline.py", "merge_results.py", "onnxruntime_baseline.py"):
        proc = subprocess.run([sys.executable, os.path.join(BENCH, script), "--help"],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and "usage:" in proc.stdout, (script, proc.stderr)


def test_sass_mix_parsing():
    # tools/sass_mix.py: the PTX Halide embeds in a kernel's host assembly is found and unescaped,
    # a file without one is refused, and a loop is a backward branch's body, counted by opcode.
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import sass_mix
    asm = '.section .rodata\n__ptx:\n\t.asciz "//\\n.version 8.0\\n.target sm_80\\n.entry k() {\\n}\\n"\n'
    ptx = sass_mix.embedded_ptx(asm)
    assert len(ptx) == 1 and ".target sm_80\n" in ptx[0], ptx
    assert sass_mix.embedded_ptx('\t.asciz "hello"\n') == []
    func = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   FFMA R2, R3, R4, R2 ;
        /*0020*/                   FFMA R5, R3, R4, R5 ;
        /*0030*/                   LDG.E.64 R6, desc[UR4][R8.64] ;
        /*0040*/              @P0 BRA 0x10 ;
        /*0050*/                   EXIT ;
        /*0060*/                   BRA 0x60;
"""
    # the whole function's instructions, in order (the mix printed for kernels without a loop)
    assert [op for _, op, _ in sass_mix.instructions(func)] == ["MOV", "FFMA", "FFMA", "LDG.E.64", "BRA", "EXIT",
                                                                "BRA"]
    found = list(sass_mix.loops(func))
    assert len(found) == 1, found  # the self-branch at 0x60 is not a loop with a body before it
    start, end, ops = found[0]
    assert (start, end) == (0x10, 0x40) and ops == ["FFMA", "FFMA", "LDG.E.64", "BRA"], found
    with tempfile.TemporaryDirectory() as d:
        plain = os.path.join(d, "cpu.s")
        open(plain, "w").write("\t.text\nmain:\n\tret\n")
        env = dict(os.environ, PATH=d + os.pathsep + os.environ.get("PATH", ""))
        for tool in ("ptxas", "cuobjdump", "nvdisasm"):  # stand-ins: the check for embedded PTX comes first
            exe = os.path.join(d, tool)
            open(exe, "w").write("#!/bin/sh\nexit 1\n")
            os.chmod(exe, 0o755)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "sass_mix.py"), plain], capture_output=True,
                           text=True, env=env)
        assert r.returncode == 2 and "holds no embedded PTX" in r.stderr, (r.returncode, r.stderr)


def test_stall_phases():
    # tools/stall_phases.py: an ncu source table is cut after each BAR.SYNC; each phase's share of the stall
    # samples, its FFMA share (predicated FFMA counted) and stall reasons; a file that is not such a table is
    # refused with one message and exit code 2.
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import stall_phases
    head = ('"Kernel Name","k",\n"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
            '"L1 Wavefronts Shared","L1 Wavefronts Shared Ideal","stall_long_sb","stall_mio","stall_barrier"\n')
    body = [("0x10", "LDG.E R1, [R2.64] ;", 30, 10, 0, 0, 30, 0, 0),
            ("0x20", "BAR.SYNC.DEFER_BLOCKING 0x0 ;", 10, 10, 0, 0, 0, 0, 10),
            ("0x30", "FFMA R3, R1, R1, R3 ;", 20, 40, 0, 0, 0, 0, 0),
            ("0x40", "@P0 FFMA R4, R1, R1, R4 ;", 20, 40, 0, 0, 0, 0, 0),
            ("0x50", "LDS.128 R8, [R9] ;", 20, 20, 40, 20, 0, 20, 0)]
    text = head + "".join(",".join(f'"{v}"' for v in row) + "\n" for row in body)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sass.csv")
        open(path, "w").write(text)
        res = stall_phases.summarize(stall_phases.read_rows(path))
        assert len(res) == 2, res
        assert abs(res[0]["share"] - 0.4) < 1e-9 and abs(res[1]["share"] - 0.6) < 1e-9, res
        assert res[0]["ffma"] == 0 and res[1]["ffma"] == 80 and res[1]["executed"] == 100, res
        assert (res[1]["wavefronts"], res[1]["ideal"]) == (40, 20), res
        assert res[0]["stalls"][0] == ("stall_long_sb", 30), res
        out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "stall_phases.py"), path],
                             capture_output=True, text=True)
        assert out.returncode == 0 and "| 60.0% |" in out.stdout and "| 80% |" in out.stdout, out.stdout
        bad = os.path.join(d, "bad.csv")
        open(bad, "w").write("a,b\n1,2\n")
        for f in (bad, os.path.join(d, "missing.csv")):
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "stall_phases.py"), f],
                               capture_output=True, text=True)
            assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr, r.stderr


def test_kernel_spills_parsing():
    # tools/kernel_spills.py: CUDA lines of `blockfuse info` (threads, register cap), the PTX embedded in an object
    # file, ptxas -v's registers and spills per entry; a build folder without blockfuse: one message, exit 2.
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import kernel_spills
    import sass_mix
    info = ("device: cpu -- no CUDA driver\n"
            "conv2d_general_f32_cpu                   cpu     f32   general    threads=0\n"
            "block_ffn256_fusedwi_f16_cuda            cuda    f16   general    threads=224 regs=128\n")
    assert kernel_spills.cuda_variants(info) == [("block_ffn256_fusedwi_f16_cuda", 224, 128)]
    obj = b"\x7fELF\0\0junk//\n// Generated by LLVM NVPTX Back-End\n//\n.target sm_80\n.entry k()\0more"
    ptx = sass_mix.embedded_ptx_in_object(obj)
    assert len(ptx) == 1 and ptx[0].startswith("//\n// Generated") and ptx[0].endswith(".entry k()"), ptx
    assert sass_mix.embedded_ptx_in_object(b"no ptx here") == []
    verbose = ("ptxas info    : Compiling entry function '_kernel_a' for 'sm_90'\n"
               "ptxas info    : Function properties for _kernel_a\n"
               "    24 bytes stack frame, 20 bytes spill stores, 28 bytes spill loads\n"
               "ptxas info    : Used 64 registers, used 1 barriers\n")
    assert sass_mix.parse_ptxas_verbose(verbose) == {"_kernel_a": {"stack": 24, "spill": (20, 28), "regs": 64}}
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "kernel_spills.py"), "--build", d,
                            "--out", os.path.join(d, "x.csv")], capture_output=True, text=True)
        assert r.returncode == 2 and "not found: build first" in r.stderr, (r.returncode, r.stderr)


def test_onnxruntime_reference_conv():
    # bench/onnxruntime_baseline.py's float64 NumPy convolution against a loop over every output and tap,
    # on an odd shape: two groups, stride 2 x 1, dilation 1 x 2, asymmetric padding, bias.
    import numpy as np
    import onnxruntime_baseline as ob

    rng = np.random.default_rng(5)
    x, w, b = rng.standard_normal((2, 4, 7, 6)), rng.standard_normal((6, 2, 3, 2)), rng.standard_normal(6)
    pads, stride, dil, groups = (1, 0, 0, 1), (2, 1), (1, 2), 2
    got = ob.np_conv2d(x, w, b, stride, None, dil, groups, pads=pads)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 0), (0, 1)))
    oh, ow = (xp.shape[2] - dil[0] * 2 - 1) // 2 + 1, (xp.shape[3] - dil[1] * 1 - 1) // 1 + 1
    want = np.zeros((2, 6, oh, ow))
    for n in range(2):
        for k in range(6):
            g = k // 3
            for y in range(oh):
                for xx in range(ow):
                    acc = b[k]
                    for c in range(2):
                        for i in range(3):
                            for j in range(2):
                                acc += xp[n, g * 2 + c, y * 2 + i * dil[0], xx + j * dil[1]] * w[k, c, i, j]
                    want[n, k, y, xx] = acc
    assert got.shape == want.shape and np.allclose(got, want, rtol=0, atol=1e-12), float(np.abs(got - want).max())


def test_onnxruntime_graphs():
    # Where ONNX Runtime is installed (./run install --anchors): odd conv2d, SE, ConvNeXt and stem graphs
    # pass the float64 check, and a graph that differs from the reference (a planted wrong activation)
    # fails it.
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("  (onnxruntime not installed: graph checks skipped)")
        return
    import argparse
    import numpy as np
    import onnxruntime_baseline as ob

    args = argparse.Namespace(seed=3, threads=1, min_samples=1, min_seconds=0.0)
    for key in ("conv2d:n=1,c=6,h=9,w=7,k=4,r=3,s=2,stride_h=2,stride_w=1,pad_t=1,pad_b=0,pad_l=0,pad_r=1,"
                "dil_h=1,dil_w=2,groups=2,bias=1,act=silu,dtype=f32",
                "mbconv:n=1,c=8,h=7,w=5,e=2,k=3,stride=1,se=1,act=silu,dtype=f32",
                "convnext:n=2,c=8,h=5,w=6,e=2,k=7,stride=1,act=gelu,dtype=f32",
                "stem:n=1,h=13,w=11,dtype=f32"):
        rec = ob.run_workload("t", key, args)
        assert rec["check_ok"] is True and rec["eager_ms"] > 0, rec
    wl = pb.parse_key("conv2d:n=1,c=4,h=6,w=6,k=4,r=3,s=3,stride=1,pad=1,groups=1,act=relu,dtype=f32")
    x, params, forward, shape = ob.make_workload(wl, np.random.default_rng(0))
    sess = onnxruntime.InferenceSession(ob.build_model(wl, x, params, forward, shape).SerializeToString(),
                                        providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": x})[0]
    assert ob.rel_l2(y, ob.reference(wl, x, params, forward)) < ob.REL_L2_TOL
    wrong = lambda conv2d, acts, *rest: forward(conv2d, dict(acts, relu=acts["sigmoid"]), *rest)  # noqa: E731
    assert ob.rel_l2(y, ob.reference(wl, x, params, wrong)) > 10 * ob.REL_L2_TOL


def test_merge_by_provider():
    # --by-provider: blockfuse's default row, each autoscheduler's and the baseline's, medians over the runs
    # with their spread; a failed check leaves its cell out; the plain merge does not take an autoscheduler's
    # faster row as ours.
    import merge_results as mr

    key = "conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,stride=1,pad=1,groups=1,dtype=f32"

    def run(ours_ms, adams_ms, other_ms, adams_ok=True):
        return {"context": {}, "results": [
            {"workload": "a", "key": key, "default": True, "check_ok": True, "runtime_ms": ours_ms, "strategy": "direct"},
            {"workload": "a", "key": key, "default": False, "check_ok": True, "runtime_ms": other_ms, "strategy": "x"},
            {"workload": "a", "key": key, "default": False, "check_ok": adams_ok, "runtime_ms": adams_ms,
             "provider": "halide-autoscheduler-Adams2019", "strategy": "Adams2019 (Halide autoscheduler)"}]}

    base = lambda ms: {"context": {"provider": "onnxruntime"}, "results": [{"name": "a", "key": key, "eager_ms": ms}]}  # noqa: E731
    header, rows = mr.provider_table([run(1.0, 4.0, 9.0), run(3.0, 0.1, 9.0, adams_ok=False), run(2.0, 6.0, 9.0)],
                                     [base(0.5), base(1.5)])
    assert header == ["workload", "blockfuse ms", "halide-autoscheduler-Adams2019 ms", "onnxruntime ms",
                      "halide-autoscheduler-Adams2019 / blockfuse", "onnxruntime / blockfuse"], header
    assert rows == [["a", "2 [1-3]", "5 [4-6]", "1 [0.5-1.5]", "2.50", "0.50"]], rows
    table, _, _ = mr.merge(run(1.0, 0.1, 9.0), None)
    assert dict(zip(mr.COLUMNS, table[0]))["ours best ms"] == "1", table


def test_merge_summary_line():
    # The Markdown's Summary: best-PyTorch (the faster of eager and compile) over our fastest passing row, per row;
    # rows without a PyTorch time are left out, a torch.compile that did not match eager too; the rows below 0.7 named.
    import merge_results as mr

    def ours(name, ms):
        return {"workload": name, "key": f"conv2d:{name}", "dtype": "f16", "check_ok": True, "runtime_ms": ms,
                "default": True, "strategy": "direct"}
    doc = {"context": {}, "results": [ours("a", 1.0), ours("b", 2.0), ours("c", 1.0), ours("d", 1.0)]}
    torch_doc = {"context": {}, "results": [
        {"name": "a", "key": "conv2d:a", "dtype": "f16", "eager_ms": 4.0, "compile_ms": 2.0},  # 2.0
        {"name": "b", "key": "conv2d:b", "dtype": "f16", "eager_ms": 1.0, "compile_ms": None},  # 0.5
        {"name": "c", "key": "conv2d:c", "dtype": "f16", "eager_ms": 0.8, "compile_ms": 3.0},  # 0.8
        {"name": "d", "key": "conv2d:d", "dtype": "f16", "eager_ms": 2.0, "compile_ms": 0.1, "compile_check_ok": False},
        {"name": "e", "key": "conv2d:e", "dtype": "f16", "eager_ms": 1.0, "compile_ms": 1.0}]}
    table, _, ratios = mr.merge(doc, torch_doc)
    md = mr.to_markdown(table, doc, torch_doc, [], ratios)
    want = ("Summary: 4 rows; geomean best-PyTorch / ours 1.125 (eager / ours 1.337 over 4, compile / ours 2.449 over 2); "
            "2 rows below 1.0, 1 below 0.7: b f16 0.50")
    assert want in md, md

def test_convpool_op_names_and_chunks():
    """torch_convpool.py names every suite row by the op its pool.txt comment header gives (the table's names),
    and cuts ragged mean pooling into FLA's chunks."""
    import torch_convpool as tc

    op = None
    for line in open(os.path.join(ROOT, "workloads", "pool.txt"), encoding="utf-8"):
        t = line.split()
        if line.startswith("# ") and t[1].endswith("Fwd"):
            op = t[1]
        elif t and not line.startswith("#"):
            assert tc.op_name(t[1]) == op, (t[1], tc.op_name(t[1]), op)
    assert tc.op_name("conv1d:n=1,c=1,l=9,k=2,kernel=3,stride=1,pad=0,groups=1,dtype=f16") == "Conv1dFwd"
    assert tc.op_name("conv3d:n=1,c=1,d=3,h=3,w=3,k=2,kernel=3,stride=1,pad=0,groups=1,dtype=f16") == "Conv3dFwd"
    assert tc.chunk_lengths({"chunk": "32", "seq_lens": "100+200+300+400"})[:5] == [32, 32, 32, 4, 32]
    assert len(tc.chunk_lengths({"chunk": "32", "seq_lens": "100+200+300+400"})) == 34  # the table's NC
    assert tc.chunk_lengths({"chunk": "64", "seq_lens": "2048x4"}) == [64] * 128
    assert tc.dtype_label("mean_pooling:b=1,s=8,h=1,d=1,chunk=4,dtype=f16,out_dtype=f32") == "f16/f32"
    assert tc.per_axis({"kernel_d": "1", "kernel_h": "2", "kernel_w": "3"}, "kernel", ("d", "h", "w"), 1) == [1, 2, 3]


def test_convpool_report():
    """bench/convpool_report.py joins our rows with PyTorch's on (op, name, dtype), takes the faster PyTorch,
    picks the largest floor as the bound and counts the targets' misses."""
    import convpool_report as cr

    ctx = {"ceilings": {"copy_gbps": 4000.0, "ffma_f32_tflops": 60.0}, "gpu": {"l2_bytes": 60e6}}
    ours = {"context": ctx, "results": [
        {"workload": "a", "key": "maxpool2d:n=1,c=1,h=4,w=4,kernel=2,stride=2,pad=0,dtype=f16", "runtime_ms": 0.02,
         "check_ok": True, "bytes": 80e6, "flops": 1e6, "pct_copy_bw": 50.0, "default": True},
        {"workload": "a", "key": "maxpool2d:n=1,c=1,h=4,w=4,kernel=2,stride=2,pad=0,return_indices=1,dtype=f16",
         "runtime_ms": 0.01, "check_ok": True, "bytes": 1e3, "flops": 1e3, "pct_copy_bw": 1.0, "default": True}]}
    torch = {"context": {"empty_kernel_ms": 0.004}, "results": [
        {"op": "MaxPool2dFwd", "name": "a", "dtype": "f16", "eager_ms": 0.05, "compile_ms": 0.03},
        {"op": "MaxPool2dIndicesFwd", "name": "a", "dtype": "f16", "eager_ms": 0.008, "compile_ms": None}]}
    rs = {r["op"]: r for r in cr.rows([ours], [torch])}
    assert abs(rs["MaxPool2dFwd"]["ratio"] - 1.5) < 1e-9 and rs["MaxPool2dFwd"]["bound"] == "mem"
    assert abs(rs["MaxPool2dIndicesFwd"]["ratio"] - 0.8) < 1e-9 and rs["MaxPool2dIndicesFwd"]["bound"] == "lat"
    text = cr.report(list(rs.values()))
    assert "pooling rows below 1.0: 1: MaxPool2dIndicesFwd a f16 0.80x" in text, text
    assert "rows past the L2 at >= 80% of copy bandwidth: 0 of 1" in text, text
    # Two runs of one row (the heuristic's, a tuned one without ceilings): the faster passing one, floors from the
    # ceilings of the run that measured them.
    tuned = {"context": {"ceilings": {}, "gpu": ctx["gpu"]}, "results": [
        dict(ours["results"][0], runtime_ms=0.015), dict(ours["results"][1], runtime_ms=0.005, check_ok=False)]}
    rs = {r["op"]: r for r in cr.rows([ours, tuned], [torch])}
    assert abs(rs["MaxPool2dFwd"]["ratio"] - 2.0) < 1e-9 and abs(rs["MaxPool2dFwd"]["floors"]["mem"] - 0.02) < 1e-9
    assert abs(rs["MaxPool2dIndicesFwd"]["ratio"] - 0.8) < 1e-9  # the failed faster run is not picked


def main():
    tests = [(n, f) for n, f in sorted(globals().items()) if n.startswith("test_") and callable(f)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print(f"PASS {name}")
        except Exception as e:  # report every test, then fail overall
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
    print(f"{len(tests) - failed}/{len(tests)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
