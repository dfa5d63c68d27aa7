"""The results schema (bench/results.schema.json) in Python: its version, the CSV derived from a results
document, PyTorch baseline records as schema rows, and validation.

The CSV has the columns of CUTLASS's profiler (provider, operation, problem columns, flops, bytes, runtime,
GB/s, GFLOP/s), one row per result; `blockfuse bench` writes the same columns (bench/harness.cpp, checked by
tests/python/test_results_schema.py). Standard library only; validate() uses jsonschema where installed.
"""
import csv
import json
import math
import os
import subprocess

SCHEMA_VERSION = 1
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.schema.json")

PROBLEM_COLUMNS = ["n", "d", "h", "w", "c", "k", "t", "r", "s", "stride_d", "stride_h", "stride_w", "dil_h", "dil_w",
                   "groups"]
CSV_COLUMNS = (["provider", "operation", "workload", "strategy", "variant", "disposition", "dtype", "device"]
               + PROBLEM_COLUMNS
               + ["flops", "bytes", "flops_per_byte", "runtime_ms", "min_ms", "max_ms", "host_ms", "samples",
                  "GB/s", "GFLOP/s", "pct_copy_bw", "pct_ffma", "rel_l2", "workspace_bytes", "peak_bytes", "default",
                  "label", "key"])
# CSV column -> results.json field, where they differ
_FIELD = {"GB/s": "gbps", "GFLOP/s": "gflops"}


def disposition(check_ok):
    """CUTLASS's word for a row's check: passed, incorrect, not_verified."""
    return "passed" if check_ok is True else "incorrect" if check_ok is False else "not_verified"


def csv_row(r):
    """One results row as CSV cells (CSV_COLUMNS order); a missing value is an empty cell."""
    out = []
    for col in CSV_COLUMNS:
        if col == "disposition":
            v = disposition(r.get("check_ok"))
        else:
            v = r.get(_FIELD.get(col, col))
        if v is None:
            out.append("")
        elif isinstance(v, bool):
            out.append("true" if v else "false")
        elif isinstance(v, float):
            out.append(f"{v:.6g}")
        else:
            out.append(str(v))
    return out


def write_csv(doc, path):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for r in doc["results"]:
            w.writerow(csv_row(r))


def blockfuse_commit():
    """The commit of this checkout, or "unknown" (a GPU host's copy of the tree may have no git)."""
    try:
        p = subprocess.run(["git", "-C", os.path.dirname(SCHEMA_PATH), "rev-parse", "--short=12", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def torch_records(doc):
    """A PyTorch baseline file's per-workload records (eager_ms, compile_ms, ...): under "workloads" in schema'd
    files, under "results" in files written before the schema."""
    return doc["workloads"] if "schema_version" in doc else doc["results"]


def geomean(xs, empty=math.nan):
    """The geometric mean of the positive values of xs (`empty` if there are none)."""
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else empty


def torch_ratios(record, ours_ms):
    """(best-PyTorch, eager, torch.compile) / ours for one PyTorch baseline record, each None where a side has no time:
    the best is the faster of eager and torch.compile, and a torch.compile whose output did not match eager's
    (compile_check_ok false) counts for neither."""
    if not ours_ms:
        return None, None, None
    eager = record.get("eager_ms")
    compiled = record.get("compile_ms") if record.get("compile_check_ok") is not False else None
    best = min((t for t in (eager, compiled) if t), default=None)
    return tuple(t / ours_ms if t else None for t in (best, eager, compiled))


def torch_rows(records):
    """Schema rows of PyTorch baseline records: one per workload and mode (pytorch-eager, pytorch-compile) that has
    a time or an error."""
    rows = []
    for rec in records:
        key = str(rec.get("key") or rec.get("suite_key") or "")
        base = {"operation": key.split(":", 1)[0], "workload": rec.get("name"), "key": key, "dtype": rec.get("dtype"),
                "strategy": None, "variant": None, "knobs": {}, "device": "cuda",
                "flops": rec.get("flops"), "bytes": None}
        for provider, mode, check, err in (
                ("pytorch-eager", "eager", rec.get("eager_ms") is not None, rec.get("error")),
                ("pytorch-compile", "compile", rec.get("compile_check_ok"),
                 rec.get("compile_error") or rec.get("error"))):
            ms = rec.get(f"{mode}_ms")
            if ms is None and not err:
                continue  # not run (--no-compile)
            row = dict(base, provider=provider, runtime_ms=ms, host_ms=rec.get(f"{mode}_host_ms"),
                       workspace_bytes=rec.get(f"{mode}_workspace_bytes"), check_ok=check if ms is not None else None)
            if row["flops"] and ms:
                row["gflops"] = row["flops"] / (ms * 1e-3) / 1e9
            if err:
                row["error"] = str(err)
            rows.append(row)
    return rows


def load_schema():
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        return json.load(fh)


def validate(doc):
    """The schema's errors in doc, as 'path: message' lines (empty: valid). jsonschema where installed, else the
    required fields, types of the required row fields and the provider pattern only."""
    schema = load_schema()
    try:
        import jsonschema
    except ImportError:
        return _validate_minimal(doc, schema)
    v = jsonschema.Draft202012Validator(schema)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(document)'}: {e.message}"
            for e in sorted(v.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def _validate_minimal(doc, schema):
    import re
    errs = []
    for f in schema["required"]:
        if f not in doc:
            errs.append(f"(document): '{f}' is a required property")
    if doc.get("schema_version") != SCHEMA_VERSION:
        errs.append(f"schema_version: {doc.get('schema_version')!r} is not {SCHEMA_VERSION}")
    ctx_def, row_def = schema["$defs"]["context"], schema["$defs"]["result"]
    for f in ctx_def["required"]:
        if f not in (doc.get("context") or {}):
            errs.append(f"context: '{f}' is a required property")
    pattern = re.compile(row_def["properties"]["provider"]["pattern"])
    for i, r in enumerate(doc.get("results") or []):
        for f in row_def["required"]:
            if f not in r:
                errs.append(f"results/{i}: '{f}' is a required property")
        if not pattern.match(str(r.get("provider", ""))):
            errs.append(f"results/{i}/provider: {r.get('provider')!r} does not match {pattern.pattern!r}")
        if not isinstance(r.get("knobs", {}), dict):
            errs.append(f"results/{i}/knobs: not an object")
    return errs
