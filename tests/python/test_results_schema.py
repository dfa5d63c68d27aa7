#!/usr/bin/env python3
"""results.json and its CSV against bench/results.schema.json, from a fresh CPU run of the harness.

  usage: test_results_schema.py BLOCKFUSE

The harness's results.json validates; results.csv has the schema's columns (bench/results_schema.py
CSV_COLUMNS) and each row is the one derived from results.json, a Squeeze-Excitation block's label
("fused (...) [split at SE: ...]", commas inside) in one field; bench/merge_results.py --out-json validates,
merging the fresh run or a file written before the schema (tests/data/) with PyTorch's records;
bench/compare.py reads both. jsonschema validates where installed (tools/install-deps.sh puts it in .venv).
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import results_schema  # noqa: E402

BLOCKFUSE = None
WORKLOADS = ["mbconv:n=1,c=8,h=9,w=7,e=2,k=3,stride=1,se=1,act=silu,dtype=f32",
             "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1,dtype=f32"]
TORCH_RECORDS = [  # as bench/pytorch_baseline.py writes them, one with torch.compile failed
    {"name": "w0", "key": WORKLOADS[0], "dtype": "f32", "family": "mbconv", "flops": 1e6, "eager_ms": 0.02,
     "eager_host_ms": 0.05, "compile_ms": 0.01, "compile_host_ms": 0.04, "compile_check_ok": True, "error": None},
    {"name": "w1", "key": WORKLOADS[1], "dtype": "f32", "eager_ms": 0.03, "compile_ms": None,
     "compile_error": "BackendCompilerFailed: ...", "error": None},
]


def run(*args):
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)
    return p


def same_cell(a, b):
    """CSV cells equal, numbers to 5 significant digits (the writers print 6)."""
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-12)


class ResultsSchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "run")
        args = [BLOCKFUSE, "bench", "--device", "cpu", "--min-seconds", "0", "--min-samples", "1", "--out", cls.out]
        for w in WORKLOADS:
            args += ["--workload", w]
        p = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise AssertionError(f"blockfuse bench failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        with open(os.path.join(cls.out, "results.json")) as fh:
            cls.doc = json.load(fh)
        cls.torch = os.path.join(cls.tmp.name, "pytorch.json")
        with open(cls.torch, "w") as fh:
            json.dump({"schema_version": results_schema.SCHEMA_VERSION,
                       "context": {"blockfuse_commit": "unknown", "device": "cuda", "timestamp": "now", "gpu": "x"},
                       "workloads": TORCH_RECORDS, "results": results_schema.torch_rows(TORCH_RECORDS)}, fh)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assertValid(self, doc):
        errs = results_schema.validate(doc)
        self.assertEqual(errs, [], "\n".join(errs[:20]))

    def test_fresh_results_json(self):
        self.assertValid(self.doc)
        self.assertEqual(self.doc["schema_version"], results_schema.SCHEMA_VERSION)
        rows = self.doc["results"]
        self.assertTrue(rows)
        self.assertTrue(all(r["provider"] == "blockfuse" and r["check_ok"] for r in rows))
        self.assertEqual({r["operation"] for r in rows}, {"mbconv", "conv2d"})
        self.assertTrue(all(r["strategy"] and r["variant"] and r["strategy"] in r["label"] for r in rows))
        self.assertTrue(self.doc["context"]["halide_version"])

    def test_invalid_documents_refused(self):
        bad = json.loads(json.dumps(self.doc))
        bad["results"][0]["provider"] = "halide"
        del bad["results"][-1]["knobs"]
        del bad["context"]["blockfuse_commit"]
        errs = results_schema.validate(bad)
        self.assertTrue(any("provider" in e for e in errs), errs)
        self.assertTrue(any("knobs" in e for e in errs), errs)
        self.assertTrue(any("blockfuse_commit" in e for e in errs), errs)

    def test_csv_derived_from_json(self):
        with open(os.path.join(self.out, "results.csv"), newline="") as fh:
            rows = list(csv.reader(fh))
        self.assertEqual(rows[0], results_schema.CSV_COLUMNS)
        self.assertEqual(len(rows) - 1, len(self.doc["results"]))
        for got, r in zip(rows[1:], self.doc["results"]):
            want = results_schema.csv_row(r)
            diff = [(c, g, w) for c, g, w in zip(results_schema.CSV_COLUMNS, got, want) if not same_cell(g, w)]
            self.assertEqual(diff, [], r["label"])
        labels = [dict(zip(rows[0], r))["label"] for r in rows[1:]]
        self.assertTrue(any("[split at SE: tile sums, then the block with the gate]" in s for s in labels), labels)

    def merge(self, ours, name):
        merged = os.path.join(self.tmp.name, name)
        p = run(os.path.join(ROOT, "bench", "merge_results.py"), "--ours", ours, "--torch", self.torch,
                "--out-json", merged, "--out-csv", merged + ".csv")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(merged) as fh:
            doc = json.load(fh)
        self.assertValid(doc)
        return merged, doc

    def test_merge_output(self):
        merged, doc = self.merge(os.path.join(self.out, "results.json"), "merged.json")
        providers = [r["provider"] for r in doc["results"]]
        self.assertEqual(providers.count("pytorch-eager"), 2)
        self.assertEqual(providers.count("pytorch-compile"), 2)  # the failed compile as a row with its error
        self.assertEqual(providers.count("blockfuse"), len(self.doc["results"]))
        out = os.path.join(self.tmp.name, "merged.csv")
        results_schema.write_csv(doc, out)
        with open(out, newline="") as fh:
            self.assertEqual(next(csv.reader(fh)), results_schema.CSV_COLUMNS)
        # compare.py reads the schema'd files: a file against itself, no row slower
        p = run(os.path.join(ROOT, "bench", "compare.py"), merged, merged)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("pytorch-eager", p.stdout)

    def test_merge_of_a_file_before_the_schema(self):
        old = os.path.join(ROOT, "tests", "data", "h200_report", "blocks", "results.json")
        _, doc = self.merge(old, "merged_old.json")
        ours = [r for r in doc["results"] if r["provider"] == "blockfuse"]
        self.assertTrue(ours and all(r["strategy"] in ("layer_by_layer", "fused", "depth_first", "direct")
                                     for r in ours), {r["strategy"] for r in ours})
        p = run(os.path.join(ROOT, "bench", "compare.py"), old, os.path.join(self.tmp.name, "merged_old.json"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_compare_per_workload(self):
        """--per-workload: each side's fastest strategy stands for the workload, whatever strategy it is."""
        def results(name, rows):
            path = os.path.join(self.tmp.name, name)
            with open(path, "w") as fh:
                json.dump({"results": [{"key": k, "workload": k, "provider": "blockfuse", "strategy": s,
                                        "runtime_ms": ms, "check_ok": ok} for k, s, ms, ok in rows]}, fh)
            return path
        hand = results("hand.json", [("w1", "direct", 1.0, True), ("w1", "tensor_cores", 2.0, True),
                                     ("w2", "direct", 1.0, True), ("w2", "tensor_cores", 0.1, False)])
        tuned = results("tuned.json", [("w1", "tensor_cores", 0.5, True), ("w2", "direct", 1.3, True)])
        p = run(os.path.join(ROOT, "bench", "compare.py"), hand, tuned, "--per-workload", "--names", "hand,tuned")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # w2 30% slower (its failed row does not count)
        self.assertIn("| w1 | direct / tensor_cores | 1 | 0.5 | 0.50 |", p.stdout)
        self.assertIn("| w2 | direct | 1 | 1.3 | 1.30 |", p.stdout)
        self.assertIn("2 rows; geomean tuned / hand = 0.806; 1 rows where tuned is more than 15% slower than hand; "
                      "1 where tuned is at least 1.2x faster.", p.stdout)
        # per strategy, w1 joins tensor_cores with tensor_cores
        p = run(os.path.join(ROOT, "bench", "compare.py"), hand, tuned)
        self.assertIn("| w1 | tensor_cores | 2 | 0.5 | 0.25 |", p.stdout)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    BLOCKFUSE = sys.argv.pop(1)
    unittest.main(verbosity=2)
