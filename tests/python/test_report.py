#!/usr/bin/env python3
"""Checks of bench/model.py (hand-computed cases) and bench/report.py (synthetic results,
bad input). Run: python tests/python/test_report.py (exits non-zero on a failure; no pytest needed)."""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "bench", "report.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))

import model  # noqa: E402

R, B = 65e12, 4e12  # ops/s, bytes/s: op:byte = 16.25
MEM = (1e9, 1e9)  # n/b = 1 < 16.25: memory bound
COMP = (65e9, 0.1e9)  # n/b = 650 > 16.25: compute bound


class ModelTest(unittest.TestCase):
    def test_op_byte_and_macs(self):
        self.assertAlmostEqual(model.op_byte_ratio(R, B), 16.25)
        self.assertEqual(model.ops_from_macs(3), 6)

    def test_memory_bound_kernel(self):
        # Eq. 10: min(65e12, 4e12 * 1) = 4e12 ops/s; Eq. 11: 1e9 / 4e12 = 2.5e-4 s = b/B.
        self.assertAlmostEqual(model.attainable_throughput(*MEM, R, B), 4e12)
        self.assertAlmostEqual(model.min_latency(*MEM, R, B), 1e9 / 4e12)
        self.assertTrue(model.is_memory_bound(*MEM, R, B))

    def test_compute_bound_kernel(self):
        # Eq. 10: min(65e12, 4e12 * 650) = 65e12; Eq. 11: 65e9 / 65e12 = 1e-3 s = n/R.
        self.assertAlmostEqual(model.attainable_throughput(*COMP, R, B), 65e12)
        self.assertAlmostEqual(model.min_latency(*COMP, R, B), 1e-3)
        self.assertFalse(model.is_memory_bound(*COMP, R, B))

    def test_mixed_sequence_waterline_vs_mediant(self):
        seq = [MEM, COMP]
        # Eq. 12: 0.25 ms + 1 ms = 1.25 ms. Eq. 14: N = 66e9. Eq. 13: 66e9 / (1.25e-3 * 65e12) = 66/81.25.
        self.assertAlmostEqual(model.waterline_latency(seq, R, B), 1.25e-3)
        self.assertEqual(model.total_ops(seq), 66e9)
        self.assertAlmostEqual(model.max_efficiency(seq, R, B), 66 / 81.25)
        # Eq. 29: 66e9 / 1.1e9 = 60 > 16.25, so the roofline calls it compute bound: 66e9 / 65e12 s,
        # less than the waterline's 1.25 ms (it over-promises), and C_max = 1.
        self.assertAlmostEqual(model.mediant_intensity(seq), 60)
        self.assertAlmostEqual(model.roofline_latency(seq, R, B), 66e9 / 65e12)
        self.assertLess(model.roofline_latency(seq, R, B), model.waterline_latency(seq, R, B))
        self.assertAlmostEqual(model.roofline_max_efficiency(seq, R, B), 1.0)

    def test_all_memory_bound_sequence_agrees(self):
        # Section 4.3: Eq. 29 is exact when every kernel is memory bound: (1e9 + 1e9) / 4e12 = 0.5 ms both ways.
        seq = [(1e9, 1e9), (2e9, 1e9)]
        self.assertAlmostEqual(model.waterline_latency(seq, R, B), 0.5e-3)
        self.assertAlmostEqual(model.roofline_latency(seq, R, B), 0.5e-3)

    def test_efficiency_gap(self):
        # Eq. 1: t_i = 65e9 / 65e12 = 1 ms; measured 4 ms -> Eq. 3: R_a = 16.25e12; Eq. 7/8: C = 0.25.
        self.assertAlmostEqual(model.ideal_latency(65e9, R), 1e-3)
        self.assertAlmostEqual(model.actual_throughput(65e9, 4e-3), 16.25e12)
        self.assertAlmostEqual(model.computational_efficiency(65e9, 4e-3, R), 0.25)
        # Eq. 9: log t_a = log t_i - log C, gap = log10(4).
        self.assertAlmostEqual(model.efficiency_gap(65e9, 4e-3, R), math.log10(4))
        self.assertAlmostEqual(math.log10(4e-3), math.log10(1e-3) - math.log10(0.25))

    def test_zero_ops_or_bytes(self):
        self.assertEqual(model.operational_intensity(1, 0), math.inf)
        self.assertEqual(model.operational_intensity(0, 0), 0.0)
        self.assertAlmostEqual(model.min_latency(0, 4e9, R, B), 1e-3)  # a pure copy: b/B
        self.assertAlmostEqual(model.min_latency(65e9, 0, R, B), 1e-3)  # no DRAM traffic: n/R
        self.assertEqual(model.attainable_throughput(65e9, 0, R, B), R)
        self.assertEqual(model.max_efficiency([(0, 4e9)], R, B), 0.0)
        with self.assertRaises(ValueError):
            model.max_efficiency([(0, 0)], R, B)

    def test_per_kernel_peaks(self):
        # A CUDA-core kernel at R and two tensor-core kernels at R_k = 600 TFLOP/s (ridge 600/4 = 150 FLOP/byte):
        #   MEM (1e9, 1e9):              max(1e9/65e12 = 15.38 µs, 1e9/4e12 = 250 µs)   = 250 µs, memory bound
        #   TC  (600e9, 1e9, 600e12):    max(600e9/600e12 = 1 ms, 250 µs)               = 1 ms, compute bound
        #   TCM (60e9, 1e9, 600e12):     max(60e9/600e12 = 100 µs, 250 µs)              = 250 µs, memory bound at
        #                                its own ridge (n/b = 60 < 150), though compute bound at FFMA's (60 > 16.25)
        R_mma = 600e12
        TC, TCM = (600e9, 1e9, R_mma), (60e9, 1e9, R_mma)
        seq = [MEM, TC, TCM]
        self.assertAlmostEqual(model.waterline_latency(seq, R, B), 1.5e-3)  # Eq. 12: 0.25 + 1 + 0.25 ms
        self.assertEqual(model.total_ops(seq), 661e9)
        self.assertTrue(model.is_memory_bound(*TCM[:2], R_mma, B))
        self.assertFalse(model.is_memory_bound(*TCM[:2], R, B))
        # t_i = 1e9/65e12 + 600e9/600e12 + 60e9/600e12 = (1/65 + 1.1) ms = 72.5/65 ms
        t_i = 72.5 / 65 * 1e-3
        self.assertAlmostEqual(model.sequence_ideal_latency(seq, R), t_i)
        # Eq. 13: C_max = t_i / T_min = (72.5/65) / 1.5 = 72.5/97.5; Eq. 8 at t_a = 2 ms: C = 72.5/130
        self.assertAlmostEqual(model.max_efficiency(iter(seq), R, B), 72.5 / 97.5)
        self.assertAlmostEqual(model.sequence_efficiency(seq, 2e-3, R), 72.5 / 130)
        # Eq. 29: max(t_i, Σb/B = 3e9/4e12 = 0.75 ms) = t_i, below the waterline; its C_max = 1
        self.assertAlmostEqual(model.mediant_intensity(seq), 661 / 3)
        self.assertAlmostEqual(model.roofline_latency(seq, R, B), t_i)
        self.assertAlmostEqual(model.roofline_max_efficiency(seq, R, B), 1.0)
        # R_k overrides the scalar R; a triple at R is the pair; one R gives the paper's N/R and N/(T_min R)
        self.assertAlmostEqual(model.waterline_latency([TC], 1.0, B), 1e-3)
        self.assertEqual(model.waterline_latency([(*COMP, R)], R, B), model.waterline_latency([COMP], R, B))
        self.assertEqual(model.sequence_ideal_latency([MEM, COMP], R), model.ideal_latency(66e9, R))
        self.assertAlmostEqual(model.sequence_efficiency([MEM, COMP], 4e-3, R), 66e9 / (4e-3 * R))
        with self.assertRaises(ValueError):
            model.waterline_latency([(1e9, 1e9, 0)], R, B)  # a peak must be positive
        with self.assertRaises(ValueError):
            model.waterline_latency([(1e9, 1e9, R, 1)], R, B)  # (n, b) or (n, b, R_k) only

    def test_bad_inputs_raise(self):
        for args in [(-1, 1, R, B), (1, math.nan, R, B), (1, 1, 0, B), (1, 1, R, math.inf), ("x", 1, R, B)]:
            with self.assertRaises(ValueError, msg=str(args)):
                model.min_latency(*args)
        with self.assertRaises(ValueError):
            model.computational_efficiency(1e9, 0, R)  # no measured time
        with self.assertRaisesRegex(ValueError, "non-negative"):
            model.waterline_latency([(1e9, -5)], R, B)


def row(workload, strategy, flops, nbytes, ms, ok=True, **extra):
    r = {"workload": workload, "key": f"conv2d:{workload}", "strategy": strategy, "default": False, "dtype": "f16",
         "flops": flops, "bytes": nbytes, "flops_per_byte": flops / nbytes, "runtime_ms": ms, "check_ok": ok}
    r.update(extra)
    return r


CEIL = {"copy_gbps": 4000.0, "ffma_f32_tflops": 65.0, "hfma2_f16_tflops": 130.0}
ROWS = [
    row("dw-small", "conv2d_depthwise_k3a_f16_cuda", 1e9, 1e9, 0.5),
    row("dw-small", "conv2d_depthwise_k3b_f16_cuda", 1e9, 1e9, 0.1, ok=False, check="3 beyond tolerance"),
    row("conv-big", "conv2d_general_f16_cuda", 65e9, 0.1e9, 4.0),
    row("conv-big", "conv2d_general_a_f16_cuda", 65e9, 0.1e9, 3.0),
    row("block-fused", "blockfuse_mbconv_f16_cuda", 66e9, 1.1e9, 2.0,
        kernels=[{"name": "expand+dw", "flops": 1e9, "executed_flops": 2e9, "bytes": 1e9, "runtime_ms": 0.5},
                 {"name": "project", "flops": 65e9, "bytes": 0.1e9}]),
    row("all-fail", "conv2d_general_b_f16_cuda", 1e9, 1e8, 1.0, ok=False),
]


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def run_report(*args):
    return subprocess.run([sys.executable, REPORT, *args], capture_output=True, text=True, timeout=300)


def write_json(folder, doc, name="results.json"):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as fh:
        fh.write(doc if isinstance(doc, str) else json.dumps(doc))
    return path


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "res")

    def tearDown(self):
        self.tmp.cleanup()

    def test_variant_tags_group_into_families(self):
        import report  # matplotlib: imported here so the model tests above run without it
        for strategy, fam in [("conv2d_depthwise_k3a_f16_cuda", "conv2d_depthwise"),
                              ("conv2d_depthwise_k3sw_f16_cuda", "conv2d_depthwise"),
                              ("conv2d_depthwise_k5fa_f32_opencl", "conv2d_depthwise"),
                              ("conv2d_pointwise_b_f16_cuda", "conv2d_pointwise"), ("fused_f16_cuda", "fused")]:
            self.assertEqual(report.family(strategy), fam, strategy)

    def test_full_report(self):
        gpu = {"name": "Test GPU", "driver_version": "580.1.2", "sm_clock_mhz_at_start": 1980, "sm_clock_mhz_at_end": 1755,
               "sm_clock_mhz_board_max": 1980}
        write_json(self.dir, {"context": {"device": "cuda", "gpu": gpu, "halide_version": "21.0.0",
                                          "command": "blockfuse bench --out res", "ceilings": CEIL},
                              "results": ROWS})
        torch = write_json(self.tmp.name, {"results": [{"name": "conv-big", "key": "conv2d:conv-big",
                                                        "eager_ms": 1.5, "compile_ms": 6.0}]}, "pytorch.json")
        p = run_report(self.dir, "--torch", torch)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = os.path.join(self.dir, "report")  # the default OUTDIR
        for name in ("waterline", "roofline", "efficiency_gap"):
            with open(os.path.join(out, name + ".png"), "rb") as fh:
                self.assertEqual(fh.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn("<svg", read(os.path.join(out, name + ".svg")))
        md = read(os.path.join(out, "summary.md"))
        for w in ("dw-small", "conv-big", "block-fused", "Test GPU", "21.0.0", "HFMA2"):
            self.assertIn(w, md)
        # the GPU state the run recorded (NVML): driver, SM clock at both ends of the run
        self.assertIn("driver 580.1.2, SM clock 1980 MHz at the start, SM clock 1755 MHz at the end, board max 1980", md)
        self.assertIn("`conv2d_general_a_f16_cuda` (2)", md)  # best = fastest passing variant
        self.assertIn("| 0.50 | 2.00 |", md)  # torch/ours: 1.5/3.0 and 6.0/3.0
        self.assertIn("all-fail: no variant passed", md)
        failed = md.split("## Failed rows")[1]
        self.assertIn("conv2d_depthwise_k3b_f16_cuda", failed)  # the failing dw variant, faster or not
        self.assertIn("3 beyond tolerance", failed)
        self.assertIn("| 3.1 | expand+dw |", md)  # kernels of the multi-kernel row
        # executed/n: block-fused's first kernel executes its 1e9 flops twice (a halo), so (2 + 65) / 66 = 1.02;
        # a row without per-kernel executed_flops does not say (n/a).
        self.assertIn("| 60.0 | 1.02 | 2000 |", md)
        self.assertIn("| 650.0 | n/a | 3000 |", md)
        # block-fused (#3): t_i = 66e9/65e12 = 1015 µs, T_min = 250 + 1000 = 1250 µs; C = 1015.4/2000 = 50.8%,
        # C_max = 66/81.25 = 81.2%, T_min/t_a = 62.5%; 250/1250 = 20% of T_min is memory-bound.
        self.assertIn("| 1015 | 1250 | 50.8% | 81.2% | 62.5% | mixed (20% of T_min memory-bound) |", md)
        self.assertIn("less than the waterline", md)
        self.assertNotIn("What fusion can gain at most", md)  # no workload with both strategies

    def test_workspace_plot_and_table(self):
        rows = [row("blk", "layer_by_layer", 1e9, 1e8, 2.0, workspace_bytes=4.0e6, peak_bytes=4.1e6),
                row("blk", "fused", 1e9, 1e8, 1.0, workspace_bytes=0.0, peak_bytes=1e8),
                row("blk", "depth_first", 1e9, 1e8, 3.0, ok=False, workspace_bytes=9e9)]  # failed: left out
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": CEIL}, "results": rows})
        p = run_report(self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = os.path.join(self.dir, "report")
        with open(os.path.join(out, "workspace.png"), "rb") as fh:
            self.assertEqual(fh.read(8), b"\x89PNG\r\n\x1a\n")
        md = read(os.path.join(out, "summary.md"))
        mem = md.split("## Memory: workspace and peak per strategy")[1].split("## ")[0]
        self.assertIn("| blk | `fused` | 1000 | 0.000 | 100.000 |", mem)  # fastest first
        self.assertIn("| blk | `layer_by_layer` | 2000 | 4.000 | 4.100 |", mem)
        self.assertNotIn("depth_first", mem)
        # Without the field: said so, and no stale plot.
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": CEIL},
                              "results": [row("blk", "fused", 1e9, 1e8, 1.0)]})
        p = run_report(self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "workspace.png")))
        self.assertIn("None measured", read(os.path.join(out, "summary.md")))

    def test_fusion_bound(self):
        # One block workload in both strategies (B = 4 TB/s, R = 65 TFLOP/s). Layer by layer: two kernels, 1e9 bytes
        # each and no flops (250 µs each), then 65e9 flops on 0.1e9 bytes (1000 µs): T_min = 1500 µs. Fused: one
        # kernel, 65e9 flops on 0.2e9 bytes: T_min = 1000 µs. The most fusion gains: 1.50x. Measured: layer by
        # layer's best 2.0 ms (a slower 2.4 ms variant too), fused 2.5 ms: 0.80x. A failing fused row (0.1 ms) is
        # left out.
        lbl = [{"name": "a", "flops": 0, "bytes": 1e9}, {"name": "b", "flops": 0, "bytes": 1e9},
               {"name": "c", "flops": 65e9, "bytes": 0.1e9}]
        rows = [row("blk", "layer_by_layer (block_x_layer_by_layer_f16_cuda)", 65e9, 2.1e9, 2.4, kernels=lbl),
                row("blk", "layer_by_layer (block_x_layer_by_layer_s_f16_cuda)", 65e9, 2.1e9, 2.0, kernels=lbl),
                row("blk", "fused (block_x_fused_f16_cuda)", 65e9, 0.2e9, 2.5,
                    kernels=[{"name": "block", "flops": 65e9, "bytes": 0.2e9}]),
                row("blk", "fused (block_x_fusedb_f16_cuda)", 65e9, 0.2e9, 0.1, ok=False,
                    kernels=[{"name": "block", "flops": 65e9, "bytes": 0.2e9}])]
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": CEIL}, "results": rows})
        p = run_report(self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        md = read(os.path.join(self.dir, "report", "summary.md"))
        self.assertIn("## What fusion can gain at most", md)
        self.assertIn("| blk | fused | 1500 | 1000 | 1.50x | 0.80x |", md)

    def test_tensor_core_peaks(self):
        # R_k = mma.sync of the row's dtype for kernels marked tensor_cores (f16 600, bf16 500 TFLOP/s), FFMA 65
        # for the others; B = 4 TB/s.
        #   mb fused_tc (f16), 600e9 flops on 1e9 bytes, 1.2 ms: T_min = max(600e9/600e12, 1e9/4e12) = 1000 µs;
        #     t_a/T_min = 1.20, within 25%; C = t_i/t_a = 1000/1200 = 83.3%; compute-bound on mma.sync.
        #   mb fused (CUDA cores), 601e9 flops on 0.5e9 bytes, 10 ms: T_min = 601e9/65e12 = 9246 µs, C = 92.5%.
        #   mb-lbl layer_by_layer_tc (f16): expand 300e9/1e9 on mma (500 µs), dw 1e9/1e9 on FFMA (memory: 250 µs),
        #     project 300e9/1e9 on mma (500 µs): T_min = 1250 µs, t_i = 500 + 1e9/65e12 (15.38 µs) + 500 = 1015.4 µs;
        #     2.5 ms: t_a/T_min = 2.00 (no), C = 1015.4/2500 = 40.6%, C_max = 1015.4/1250 = 81.2%, 20% memory-bound.
        #   mb-bf16 fused_tc (bf16), 500e9 flops on 1e9 bytes, 1.1 ms: T_min = 500e9/500e12 = 1000 µs (at the f16
        #     ceiling it would be 833 µs, 1.32x: not within), 1.10 within; C = 90.9%.
        tc = {"tensor_cores": True}
        lbl = [dict(name="expand", flops=300e9, bytes=1e9, **tc), dict(name="dw", flops=1e9, bytes=1e9),
               dict(name="project", flops=300e9, bytes=1e9, **tc)]
        rows = [row("mb", "fused_tc", 600e9, 1e9, 1.2, kernels=[dict(name="block", flops=600e9, bytes=1e9, **tc)]),
                row("mb", "fused", 601e9, 0.5e9, 10.0, kernels=[dict(name="block", flops=601e9, bytes=0.5e9)]),
                row("mb-lbl", "layer_by_layer_tc", 601e9, 3e9, 2.5, kernels=lbl),
                row("mb-bf16", "fused_tc", 500e9, 1e9, 1.1, dtype="bf16",
                    kernels=[dict(name="block", flops=500e9, bytes=1e9, **tc)])]
        ceil = dict(CEIL, mma_f16_tflops=600.0, mma_bf16_tflops=500.0)
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": ceil}, "results": rows})
        p = run_report(self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = os.path.join(self.dir, "report")
        for name in ("waterline", "roofline", "efficiency_gap"):
            with open(os.path.join(out, name + ".png"), "rb") as fh:
                self.assertEqual(fh.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertIn("mma.sync f16 R/B = 150.0", read(os.path.join(out, "waterline.svg")))  # its ridge, labelled
        self.assertIn("tensor-core kernel", read(os.path.join(out, "waterline.svg")))  # the hatched bars' legend
        roof = read(os.path.join(out, "roofline.svg"))
        self.assertIn("mma.sync bf16 roof 500.0", roof)
        self.assertNotIn("Halide emits no tensor-core code", roof)
        md = read(os.path.join(out, "summary.md"))
        self.assertIn("mma.sync f16 600.00 TFLOP/s, mma.sync bf16 500.00 TFLOP/s", md)
        self.assertIn("kernels marked tensor_cores by the mma.sync ceiling", md)
        self.assertNotIn("emits no tensor-core instructions", md)
        # per workload: n/b, executed/n, t_a, t_i, T_min, C, C_max, T_min/t_a, floor
        self.assertIn("| 600.0 | n/a | 1200 | 1000 | 1000 | 83.3% | 100.0% | 83.3% | compute on mma.sync |", md)
        self.assertIn("| 200.3 | n/a | 2500 | 1015 | 1250 | 40.6% | 81.2% | 50.0% | mixed (20% of T_min memory-bound) |",
                      md)
        self.assertIn("| 2.1 | expand | 3e+11 | 1e+09 | 300.0 | 500 | compute | mma.sync f16 |", md)
        self.assertIn("| 2.2 | dw | 1e+09 | 1e+09 | 1.0 | 250 | memory | FFMA |", md)
        every = md.split("## Every strategy")[1].split("\n## ")[0]
        self.assertIn("| mb | `fused_tc` | 1 | 1e+09 | 1000 | 1200 | 83.3% | 83.3% | 1.00 |", every)
        self.assertIn("| mb | `fused` | 1 | 5e+08 | 9246 | 10000 | 92.5% | 92.5% | 8.33 |", every)
        tcs = md.split("## Tensor-core rows: the waterline's prediction beside the measurement")[1].split("\n## ")[0]
        self.assertIn("2 of 3 rows within 25% of their waterline", tcs)
        self.assertIn("| mb | `fused_tc` | 1 (1 on mma.sync f16) | 1000 | 1200 | 1.20 | yes | 83.3% | "
                      "compute on mma.sync |", tcs)
        self.assertIn("| mb-lbl | `layer_by_layer_tc` | 3 (2 on mma.sync f16) | 1250 | 2500 | 2.00 | no, 2.0x | 40.6% | "
                      "mixed (20% of T_min memory-bound) |", tcs)
        self.assertIn("| mb-bf16 | `fused_tc` | 1 (1 on mma.sync bf16) | 1000 | 1100 | 1.10 | yes | 90.9% | "
                      "compute on mma.sync |", tcs)
        self.assertNotIn("`fused` |", tcs)  # the CUDA-core row
        self.assertIn("T_min is a lower bound", tcs)
        # The sequence of the best rows: T_min = 1000 + 1250 + 1000 = 3250 µs, t_i = 3015.4 µs: C_max = 92.8%;
        # Σ t_a = 1200 + 2500 + 1100 = 4800 µs: C = 62.8%; mediant roofline max(3015.4, 6e9/4e12 = 1500) µs.
        for text in ("| waterline T_min (Eq. 12) | 3250 µs |", "| C_max, waterline (Eq. 13) | 92.8% |",
                     "| C actual of the sequence, t_i / Σ t_a (Eq. 8) | 62.8% |", "Eq. 29 in Eq. 11) | 3015 µs |"):
            self.assertIn(text, md)
        self.assertNotIn("WARNING", md)

        # Results without the mma ceilings: tensor-core kernels fall back to FFMA, and the Notes say so first.
        # mb fused_tc: T_min = 600e9/65e12 = 9231 µs, C = 9231/1200 = 769.2% (overstated).
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": CEIL}, "results": rows})
        p = run_report(self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        md = read(os.path.join(out, "summary.md"))
        notes = md.split("## Notes")[1]
        self.assertIn("- **WARNING: the results have no mma.sync ceiling for bf16 or f16", notes)
        self.assertIn("the tensor-core kernels of 3 passing rows are counted against the FFMA peak", notes)
        self.assertIn("| mb | `fused_tc` | 1 (1 on FFMA (no mma.sync ceiling)) | 9231 | 1200 | 0.13 | yes | 769.2% | "
                      "compute |", md)
        # Only f16 measured: the bf16 row alone falls back.
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": dict(CEIL, mma_f16_tflops=600.0)},
                              "results": rows})
        self.assertEqual(run_report(self.dir).returncode, 0)
        md = read(os.path.join(out, "summary.md"))
        self.assertIn("no mma.sync ceiling for bf16 (context.ceilings.mma_bf16_tflops", md)
        self.assertIn("the tensor-core kernels of 1 passing rows", md)
        # A wgmma row (knob wgmma=1) counts against the wgmma ceiling where one was measured, mma.sync's otherwise.
        # mb fused_tc at 800 TFLOP/s: T_min = 600e9/800e12 = 750 µs, t_a/T_min = 1.60, C = 750/1200 = 62.5%.
        wg_rows = json.loads(json.dumps(rows[:1]))
        wg_rows[0]["knobs"] = {"wgmma": 1}
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": dict(
            CEIL, mma_f16_tflops=600.0, mma_bf16_tflops=500.0, wgmma_f16_tflops=800.0, wgmma_bf16_tflops=790.0)},
            "results": wg_rows + rows[1:2]})
        p = run_report(self.dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        md = read(os.path.join(out, "summary.md"))
        self.assertIn("| mb | `fused_tc` | 1 (1 on wgmma f16) | 750 | 1200 | 1.60 | no, 1.6x | 62.5% | compute on wgmma |",
                      md)
        self.assertIn(", wgmma f16 800.00 TFLOP/s, wgmma bf16 790.00 TFLOP/s", md)
        self.assertIn("wgmma roof bf16 790.0 / f16 800.0 TFLOP/s", read(os.path.join(out, "roofline.svg")))
        # Per kernel (the harness marks each): a block's layer on wgmma, the other on mma.sync, each at its own roof.
        # mb-lbl: expand 300e9 on mma.sync (500 µs), dw memory (250 µs), project 300e9 on wgmma 800 (375 µs).
        mixed = json.loads(json.dumps(rows[2:3]))
        mixed[0]["kernels"][2]["wgmma"] = True
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": dict(
            CEIL, mma_f16_tflops=600.0, mma_bf16_tflops=500.0, wgmma_f16_tflops=800.0)}, "results": mixed})
        self.assertEqual(run_report(self.dir).returncode, 0)
        md = read(os.path.join(out, "summary.md"))
        self.assertIn("| 1.1 | expand | 3e+11 | 1e+09 | 300.0 | 500 | compute | mma.sync f16 |", md)
        self.assertIn("| 1.3 | project | 3e+11 | 1e+09 | 300.0 | 375 | compute | wgmma f16 |", md)
        self.assertIn("| 3 (2 on mma.sync f16, wgmma f16) | 1125 | 2500 |", md)
        write_json(self.dir, {"context": {"device": "cuda", "ceilings": ceil}, "results": wg_rows})
        self.assertEqual(run_report(self.dir).returncode, 0)
        self.assertIn("| mb | `fused_tc` | 1 (1 on mma.sync f16) | 1000 | 1200 |", read(os.path.join(out, "summary.md")))
        # tensor_cores must be a boolean
        bad = json.loads(json.dumps(rows))
        bad[0]["kernels"][0]["tensor_cores"] = "yes"
        write_json(self.dir, {"results": bad})
        self.assertIn("'tensor_cores' must be a bool", self.expect_error([self.dir], "kernels[0]"))

    def test_no_ceilings(self):
        write_json(self.dir, {"context": {"device": "cpu"}, "results": ROWS[:4]})
        out = os.path.join(self.tmp.name, "out")
        p = run_report(self.dir, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(out)), ["summary.md"])
        md = read(os.path.join(out, "summary.md"))
        self.assertIn("conv-big", md)
        self.assertIn("Skipped waterline.svg/.png", md)
        self.assertIn("no context.ceilings", md)

    def expect_error(self, args, fragment):
        p = run_report(*args)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        err = p.stderr.strip()
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("error: "), err)
        self.assertIn(fragment, err)
        self.assertNotIn("Traceback", err)
        return err

    def test_bad_inputs(self):
        missing = os.path.join(self.tmp.name, "nope")
        self.expect_error([missing], missing)
        os.makedirs(self.dir)
        self.expect_error([self.dir], "results.json")  # folder without results.json
        write_json(self.dir, "{ not json")
        self.assertIn("not valid JSON", self.expect_error([self.dir], "results.json"))
        write_json(self.dir, {"context": {}})
        self.assertIn("no 'results' list", self.expect_error([self.dir], "results.json"))
        write_json(self.dir, {"results": []})
        self.assertIn("no results in", self.expect_error([self.dir], "results.json"))
        bad = dict(ROWS[0])
        del bad["runtime_ms"]
        write_json(self.dir, {"results": [ROWS[2], bad]})
        err = self.expect_error([self.dir], "results.json")
        self.assertIn("results[1]", err)
        self.assertIn("'runtime_ms'", err)
        bad = json.loads(json.dumps(ROWS[4]))
        bad["kernels"][1]["executed_flops"] = "many"
        write_json(self.dir, {"results": [bad]})
        self.assertIn("'executed_flops' must be a finite non-negative number", self.expect_error([self.dir], "kernels[1]"))
        write_json(self.dir, {"results": ROWS})
        torch = write_json(self.tmp.name, "[1, 2", "pytorch.json")
        self.expect_error([self.dir, "--torch", torch], "pytorch.json")

    def test_h200_reports(self):
        # Two H200 runs (tests/data/h200_report/, copies of the results and PyTorch files of
        # bench/results/h200/report/): the report runs on them as they are.
        for suite, expect in (("conv2d", ["dw3x3-c144-56-n128", "mediant roofline"]),
                              ("blocks", ["mbconv-c24-56-n128", "## What fusion can gain at most",
                                          # c=24: T_min 140.1 µs layer by layer, 101.1 fused (the run's ceilings)
                                          "| mbconv-c24-56-n128 | fused | 140.1 | 101.1 | 1.39x | 0.60x |",
                                          "driver 580.159.04"])):
            src = os.path.join(ROOT, "tests/data/h200_report", suite)
            out = os.path.join(self.tmp.name, suite)
            p = run_report(src, "--torch", os.path.join(src, "pytorch.json"), "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            md = read(os.path.join(out, "summary.md"))
            for text in ["NVIDIA H200"] + expect:
                self.assertIn(text, md, suite)


NCU_COMPARE = os.path.join(ROOT, "bench", "ncu_compare.py")
NCU_HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
              "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value"]


class NcuCompareTest(unittest.TestCase):
    """bench/ncu_compare.py: warm-up launches skipped, ratios computed, mismatches refused."""

    @staticmethod
    def _evict(written):
        """An l2_evict_read launch (reads 1e6 bytes) that wrote back `written` bytes."""
        return ("l2_evict_read", 1e6, written)

    def _write(self, d, kernels_per_row, measured):
        """measured: per launch (read, write), or (kernel name, read, write) for an eviction."""
        import csv
        rows = [{"workload": f"w{i}", "strategy": f"s{i}",
                 "kernels": [{"name": f"k{i}.{j}", "flops": 1.0, "bytes": 1000.0} for j in range(n)]}
                for i, n in enumerate(kernels_per_row)]
        res = os.path.join(d, "results.json")
        json.dump({"results": rows}, open(res, "w"))
        out = os.path.join(d, "ncu.csv")
        with open(out, "w", newline="") as f:
            f.write("==PROF== Connected to process\n")  # ncu's log lines precede the CSV
            w = csv.writer(f, quoting=csv.QUOTE_ALL)
            w.writerow(NCU_HEADER)
            for lid, launch in enumerate(measured):
                name, rd, wr = launch if len(launch) == 3 else ("_kernel_x", *launch)
                metrics = [("dram__bytes_read.sum", rd), ("dram__bytes_write.sum", wr), ("gpu__time_duration.sum", 2000)]
                for m, v in metrics:
                    w.writerow([lid, 1, "p", "h", name, 1, 7, "(1,1,1)", "(1,1,1)", 0, "9.0", "s", m, "byte",
                                f"{v:,.0f}"])
        return res, out

    def test_pairs_and_ratios(self):
        with tempfile.TemporaryDirectory() as d:
            # Row 0: one kernel (warm-up reads 5 bytes, profiled run 600 + 500 = 1.1x);
            # row 1: two kernels (warm-up, then 400 + 400 = 0.8x and 1000 + 0 = 1.0x).
            res, csvp = self._write(d, [1, 2], [(5, 0), (600, 500), (5, 0), (5, 0), (400, 400), (1000, 0)])
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| 1.10 | yes |", r.stdout)
            self.assertIn("| 0.80 | no |", r.stdout)
            self.assertIn("| 1.00 | yes |", r.stdout)
            self.assertIn("2 of 3 kernels within", r.stdout)

    def test_evictions_add_the_write_back(self):
        with tempfile.TemporaryDirectory() as d:
            ev = self._evict
            # Row 0, one kernel: the run reads 500 and writes 100; 500 more were left dirty in the L2 and
            # written back during the second eviction: (500 + 100 + 500) / 1000 = 1.10. Row 1, two
            # kernels: kernel 1 also writes back what the first left dirty (1.50), kernel 2 leaves
            # its output in L2 (0.60); the run as a whole: 2100 / 2000 = 1.05.
            res, csvp = self._write(d, [1, 2], [(5, 0), ev(30), (500, 100), ev(500),
                                               (5, 0), (5, 0), ev(0), (1000, 500), (600, 0), ev(0)])
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| k0.0 | 1000 | 500 | 100 | 500 | 1.10 | yes |", r.stdout)
            self.assertIn("| 1.50 | no |", r.stdout)
            self.assertIn("| 0.60 | no |", r.stdout)
            self.assertIn("1 of 3 kernels within ±15% of the model (DRAM read + DRAM write + written back", r.stdout)
            self.assertIn("| w1 | s1 | 2 | 2000 | 2100 | 1.05 | yes |", r.stdout)
            self.assertIn("2 of 2 runs within ±15%", r.stdout)

    def test_l2_aware_model(self):
        with tempfile.TemporaryDirectory() as d:
            ev = self._evict
            # Two kernels; the second re-reads 400 of its 1000 modelled bytes (a tensor the first wrote).
            # The run moves 1600 + written back 0: 0.80 against the tensor machine's 2000; the L2-aware
            # model takes the 400 from the L2 when the second kernel's 1000 bytes fit in 0.7 x L2.
            res, csvp = self._write(d, [2], [(5, 0), (5, 0), ev(0), (600, 400), (600, 0), ev(0)])
            doc = json.load(open(res))
            doc["results"][0]["kernels"][1]["rereads"] = [400.0]
            doc["context"] = {"gpu": {"l2_bytes": 2000}}
            json.dump(doc, open(res, "w"))
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| w0 | s0 | 2 | 2000 | 1600 | 0.80 | no | 1600 | 1.00 | yes |", r.stdout)
            self.assertIn("1 of 1 runs within ±15% of the L2-aware model", r.stdout)
            # An L2 too small for the second kernel's traffic (0.7 x 1000 < 1000): nothing comes from it.
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp, "--l2-bytes", "1000"], capture_output=True,
                               text=True)
            self.assertIn("| w0 | s0 | 2 | 2000 | 1600 | 0.80 | no | 2000 | 0.80 | no |", r.stdout)

    def test_spills_column_and_count(self):
        with tempfile.TemporaryDirectory() as d:
            # Run 0 within (1.10), run 1 outside (1.60); the spill table says run 1's kernel spills 96 B per
            # thread, run 0's 8: one of the one run outside spills at >= 64 B, none of the one within.
            res, csvp = self._write(d, [1, 1], [(5, 0), (600, 500), (5, 0), (900, 700)])
            doc = json.load(open(res))
            doc["results"][0]["variant"], doc["results"][1]["variant"] = "kern_a", "kern_b"
            json.dump(doc, open(res, "w"))
            sp = os.path.join(d, "spills.csv")
            open(sp, "w").write("kernel,threads,cap,registers,stack_bytes,spill_store_bytes,spill_load_bytes\n"
                                "kern_a,128,255,80,8,8,8\nkern_b,256,64,64,96,96,100\n")
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp, "--spills", sp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| w1 | s1 | 1 | 1000 | 1600 | 1.60 | no | 96 |", r.stdout)
            self.assertIn("1 of the 1 runs outside ±15% of the model spill; 0 of the 1 within it do.", r.stdout)
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp, "--spills", sp, "--spill-min", "8"],
                               capture_output=True, text=True)
            self.assertIn("1 of the 1 runs outside ±15% of the model spill; 1 of the 1 within it do.", r.stdout)
            # A file that is not the spill table: one message, exit 2.
            open(sp, "w").write("a,b\n1,2\n")
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp, "--spills", sp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("not a tools/kernel_spills.py table", r.stderr)

    def test_local_memory_bound(self):
        with tempfile.TemporaryDirectory() as d:
            # Run 1 moves 600 B more than the model. kern_b: 96 B of stack per thread, 256 threads of 64 registers:
            # 65536 / (64 x 256) = 4 blocks, 1024 threads resident, on 1 SM: bound 96 x 1024 = 98304 B >= 600.
            # Then kern_b without stack: a bound of 0 explains nothing.
            res, csvp = self._write(d, [1, 1], [(5, 0), (600, 500), (5, 0), (900, 700)])
            doc = json.load(open(res))
            doc["results"][0]["variant"], doc["results"][1]["variant"] = "kern_a", "kern_b"
            doc["context"] = {"gpu": {"sm_count": 1}}
            json.dump(doc, open(res, "w"))
            sp = os.path.join(d, "spills.csv")
            head = "kernel,threads,cap,registers,stack_bytes,spill_store_bytes,spill_load_bytes\n"
            open(sp, "w").write(head + "kern_a,128,255,80,8,8,8\nkern_b,256,64,64,96,96,100\n")
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp, "--spills", sp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| 1.60 | no | 96 | yes: +0.00 MB, bound 0.10 MB |", r.stdout)
            self.assertIn("| 1.10 | yes | 8 | |", r.stdout)  # within the tolerance: nothing to explain
            self.assertIn("Local memory: 1 of the 1 runs outside", r.stdout)
            open(sp, "w").write(head + "kern_a,128,255,80,8,8,8\nkern_b,256,64,64,0,0,0\n")
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp, "--spills", sp], capture_output=True, text=True)
            self.assertIn("| 1.60 | no | 0 | no: +0.00 MB, bound 0.00 MB |", r.stdout)
            self.assertIn("Local memory: 0 of the 1 runs outside", r.stdout)
            # A non-integer entry: one message, exit 2.
            open(sp, "w").write(head + "kern_a,128,255,x,8,8,8\n")
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp, "--spills", sp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("non-integer entry", r.stderr)

    def test_evictions_out_of_place(self):
        with tempfile.TemporaryDirectory() as d:
            ev = self._evict(0)
            res, csvp = self._write(d, [2], [(1, 1), ev, (1, 1), (1, 1), (1, 1), ev])  # eviction after 1 warm-up launch
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("expected the l2_evict_read launches", r.stderr)

    def test_launch_count_mismatch(self):
        with tempfile.TemporaryDirectory() as d:
            res, csvp = self._write(d, [2], [(1, 1), (1, 1), (1, 1)])
            r = subprocess.run([sys.executable, NCU_COMPARE, res, csvp], capture_output=True, text=True)
            self.assertEqual(r.returncode, 2)
            self.assertIn("need 4 profiled launches", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
