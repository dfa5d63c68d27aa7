#!/usr/bin/env python3
"""Self-check of bench/pytorch_baseline.py (key parsing, no torch needed) and
bench/merge_results.py (on synthetic JSON). Run: python3 tests/test_bench_scripts.py
Runs every check, exits non-zero if any failed. Also collectable by pytest (test_* functions)."""
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
    assert a["GB/s"] == "5.0" and a["% copy BW"] == "50.0", a
    # No torch row: torch columns and ratios are n/a.
    assert b["variant"] == "pw" and b["torch eager ms"] == "n/a" and b["eager/ours"] == "n/a", b
    assert b["compile/ours"] == "n/a" and b["check"] == "ok", b
    # The Markdown table holds the same cells.
    assert "| a | f16 | 0.2 | tiled |" in md_text and "| 2.50 | 1.50 |" in md_text, md_text
    assert "b: no torch row" in md_text
    assert "noisy" not in md_text  # eager 0.5 vs repeat 0.51 ms is within the 20% band
    # Without measured ceilings the harness writes 0 for the percentages: shown as n/a.
    import merge_results as mr
    del ours["context"]["ceilings"]
    table, _ = mr.merge(ours, torch_doc)
    row_a = dict(zip(mr.COLUMNS, table[0]))
    assert row_a["% copy BW"] == "n/a" and row_a["% FFMA"] == "n/a" and row_a["GB/s"] == "5.0", row_a


def test_help_without_torch():
    # --help must work where torch is not installed (imports are lazy).
    for script in ("pytorch_baseline.py", "merge_results.py"):
        proc = subprocess.run([sys.executable, os.path.join(BENCH, script), "--help"],
                              capture_output=True, text=True)
        assert proc.returncode == 0 and "usage:" in proc.stdout, (script, proc.stderr)


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
