#!/usr/bin/env python3
"""Joins blockfuse harness results with the PyTorch baseline into one table.

Usage:
  python3 bench/merge_results.py --ours RESULTS.json --torch PYTORCH.json \
      [--out-md SUMMARY.md] [--out-csv MERGED.csv] [--out-json MERGED.json]
  python3 bench/merge_results.py --by-provider --ours RUN1.json [RUN2.json ...] \
      --baseline ORT1.json [ORT2.json ...] [--out-md TABLE.md] [--out-csv TABLE.csv]

--by-provider: one row per workload, one column per provider: blockfuse's default kernel (the
dispatcher's pick), each Halide autoscheduler of the runs (rows with "provider": "halide-autoscheduler-NAME", from
`blockfuse bench --autoscheduler NAME`) and the baseline (bench/onnxruntime_baseline.py, or the PyTorch
baseline's eager time); each cell the median over the repeated runs given, with the spread (min-max of
the runs' medians), and the ratios of each to blockfuse's. --baseline is the same file kind as --torch.

For each workload of RESULTS.json (several rows, one per kernel variant) the best row is the
one with the lowest runtime_ms among rows whose check_ok is true; the "default" row is noted
too. Rows are joined with PYTORCH.json (bench/pytorch_baseline.py) by (workload name, key),
keys compared in canonical form (so 'pad=1' equals 'pad_t=1,pad_b=1,pad_l=1,pad_r=1').
The Markdown table goes to stdout and, with --out-md, to a file; --out-csv writes the same
columns as CSV; --out-json writes every row of both files as one results document
(bench/results.schema.json: provider blockfuse, pytorch-eager, pytorch-compile) with each file's context.
Missing values show as "n/a"; ratios are torch ms / ours ms with 2 decimals.
Only the standard library is used.
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_baseline import canonical_key  # noqa: E402  (stdlib-only part of that module)
import results_schema  # noqa: E402

NA = "n/a"
NOISY = 0.2  # eager vs repeated eager timing differing by more than this fraction gets a note
COLUMNS = ["workload", "dtype", "ours best ms", "variant", "GB/s", "% copy BW", "GFLOP/s", "% FFMA",
           "torch eager ms", "torch.compile ms", "eager/ours", "compile/ours", "check",
           "default variant", "default ms", "ours host ms", "torch eager host ms", "eager host/ours host",
           "ours workspace MB", "torch eager workspace MB"]


def _num(x):
    """A finite float, or None (missing, null, NaN, or not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def fmt_ms(x):
    x = _num(x)
    return NA if x is None else f"{x:.4g}" if x < 1000 else f"{x:.0f}"


def fmt_mb(x):
    """Bytes as MB with 3 decimals; 0 stays 0.000 (a fused block allocates nothing), None is n/a."""
    return NA if not isinstance(x, (int, float)) or isinstance(x, bool) or x < 0 else f"{x / 1e6:.3f}"


def fmt_1(x):
    x = _num(x)
    return NA if x is None else f"{x:.1f}"


def fmt_ratio(num, den):
    num, den = _num(num), _num(den)
    return NA if num is None or den is None or den <= 0 else f"{num / den:.2f}"


def load_json(path, what):
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"error: cannot read {what} file '{path}': {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise SystemExit(f"error: {what} file '{path}' has no 'results' list")
    return doc


def label(r):
    """A row's name for people: the label of schema'd files, "strategy" before the schema."""
    return r.get("label") or r.get("strategy", NA)


def group_ours(rows, provider="blockfuse"):
    """{(name, canonical key): [rows]} of one provider's rows (blockfuse's own schedules by default; rows of
    Halide's autoschedulers, from bench --autoscheduler, carry "provider": "halide-autoscheduler-NAME"), in order
    of first appearance."""
    groups = {}
    for r in rows:
        if r.get("provider", "blockfuse") != provider:
            continue
        groups.setdefault((r.get("workload"), canonical_key(str(r.get("key", "")))), []).append(r)
    return groups


def pick_best(rows):
    """Lowest runtime_ms among rows with check_ok true (None if none passed)."""
    ok = [r for r in rows if r.get("check_ok") is True and _num(r.get("runtime_ms")) is not None]
    return min(ok, key=lambda r: r["runtime_ms"]) if ok else None


def pick_default(rows):
    return next((r for r in rows if r.get("default") is True), None)


def index_torch(rows):
    """{(name, canonical key): row}; a duplicate keeps the first row and is reported."""
    out = {}
    for r in rows:
        k = (r.get("name"), canonical_key(str(r.get("key", ""))))
        if k in out:
            print(f"warning: duplicate torch row for {k[0]} ({k[1]}); keeping the first", file=sys.stderr)
            continue
        out[k] = r
    return out


def check_cell(rows, best, trow):
    """Ours: how many variants passed the check; torch: compile-vs-eager result, if any."""
    n_fail = sum(1 for r in rows if r.get("check_ok") is not True)
    if best is None:
        parts = [f"FAIL: no variant passed ({len(rows)} tried)"]
    elif n_fail:
        parts = [f"ok ({n_fail}/{len(rows)} variants failed)"]
    else:
        parts = ["ok"]
    if trow is not None:
        if trow.get("error"):
            parts.append("torch error")
        elif trow.get("compile_error"):
            parts.append("torch.compile error")
        elif trow.get("compile_check_ok") is False:
            parts.append("torch.compile mismatch")
    return "; ".join(parts)


def merge(ours, torch_doc):
    """Returns the table rows (lists of strings, COLUMNS order), notes for the footer, and per row with both sides
    timed its (name dtype, best-PyTorch / ours, eager / ours, compile / ours) from the unrounded times."""
    groups = group_ours(ours["results"])
    tindex = index_torch(results_schema.torch_records(torch_doc)) if torch_doc else {}
    table, notes, ratios = [], [], []
    has_ceilings = bool((ours.get("context") or {}).get("ceilings"))
    for (name, key), rows in groups.items():
        best, default = pick_best(rows), pick_default(rows)
        trow = tindex.get((name, key))
        if trow is None and torch_doc is not None:
            # Same name, different key usually means a changed suite or a --dtype mismatch.
            other = [k for (n, k) in tindex if n == name]
            notes.append(f"{name}: no torch row with key {key}" + (f" (torch has {other[0]})" if other else ""))
        b = dict(best or {})
        if not has_ceilings:  # the harness writes 0 for the percentages when it measured no ceilings
            b["pct_copy_bw"] = b["pct_ffma"] = None
        t_eager = trow.get("eager_ms") if trow else None
        t_rep = _num(trow.get("eager_ms_repeat")) if trow else None
        if _num(t_eager) and t_rep and abs(t_rep - t_eager) > NOISY * t_eager:
            notes.append(f"{name}: torch eager timing is noisy ({fmt_ms(t_eager)} ms, repeat {fmt_ms(t_rep)} ms)")
        t_comp = trow.get("compile_ms") if trow else None
        t_eager_host = trow.get("eager_host_ms") if trow else None
        dtype = b.get("dtype") or rows[0].get("dtype") or (trow or {}).get("dtype")
        r = results_schema.torch_ratios(trow or {}, b.get("runtime_ms"))
        if r[0]:
            ratios.append((f"{name} {dtype or NA}", *r))
        table.append([
            str(name), str(dtype or NA),
            fmt_ms(b.get("runtime_ms")), str(label(b)) if b else NA,
            fmt_1(b.get("gbps")), fmt_1(b.get("pct_copy_bw")),
            fmt_1(b.get("gflops")), fmt_1(b.get("pct_ffma")),
            fmt_ms(t_eager), fmt_ms(t_comp),
            fmt_ratio(t_eager, b.get("runtime_ms")), fmt_ratio(t_comp, b.get("runtime_ms")),
            check_cell(rows, best, trow),
            str(label(default)) if default else NA,
            fmt_ms(default.get("runtime_ms")) if default else NA,
            # Call latency as a caller feels it (launch path + kernels + synchronize, host clock), both sides.
            fmt_ms(b.get("host_ms")), fmt_ms(t_eager_host), fmt_ratio(t_eager_host, b.get("host_ms")),
            # The call's own allocations, most live at once (ours: runtime/call_memory.h; torch: its allocator).
            fmt_mb(b.get("workspace_bytes")), fmt_mb(trow.get("eager_workspace_bytes") if trow else None),
        ])
    ours_keys = set(groups)
    for (name, key) in tindex:
        if (name, key) not in ours_keys:
            notes.append(f"{name}: torch row only (not in ours): {key}")
    return table, notes, ratios


def summary_lines(ratios, below=0.7):
    """merge()'s ratios as one line: geomean of best-PyTorch / ours (the faster of eager and torch.compile over our
    best), of eager / ours and of compile / ours, and the rows behind (below 1.0, and below `below`)."""
    if not ratios:
        return []
    geo = results_schema.geomean
    eager = [e for _, _, e, _ in ratios if e]
    comp = [c for _, _, _, c in ratios if c]
    behind = sorted((r, name) for name, r, _, _ in ratios if r < 1.0)
    low = [f"{name} {r:.2f}" for r, name in behind if r < below]
    return [f"Summary: {len(ratios)} rows; geomean best-PyTorch / ours {geo([r for _, r, _, _ in ratios]):.3f} "
            f"(eager / ours {geo(eager):.3f} over {len(eager)}, compile / ours {geo(comp):.3f} over {len(comp)}); "
            f"{len(behind)} rows below 1.0, {len(low)} below {below:g}" + (f": {', '.join(low)}" if low else "")]


def to_markdown(table, ours, torch_doc, notes, ratios=()):
    oc = ours.get("context", {}) or {}
    gpu = (oc.get("gpu") or {}).get("name") if isinstance(oc.get("gpu"), dict) else oc.get("gpu")
    ceil = oc.get("ceilings") or {}
    lines = ["# blockfuse vs PyTorch", ""]
    # The L2 flush before each timed sample (runtime/timing.h): files written before the option existed
    # were all timed after a memset ("write"), on both sides (do_bench's flush is a memset too).
    ours_flush = oc.get("l2_flush", "write") if oc.get("device") == "cuda" else None
    flush_txt = f"; L2 flush: {ours_flush}" if ours_flush else ""
    lines.append(f"- ours: device {oc.get('device', NA)}, GPU {gpu or NA}, Halide {oc.get('halide_version', NA)}; "
                 f"ceilings: copy {fmt_1(ceil.get('copy_gbps'))} GB/s, FFMA f32 "
                 f"{fmt_1(ceil.get('ffma_f32_tflops'))} TFLOP/s, HFMA2 f16 {fmt_1(ceil.get('hfma2_f16_tflops'))} TFLOP/s"
                 f"{flush_txt}")
    if torch_doc:
        tc = torch_doc.get("context", {}) or {}
        torch_flush = (tc.get("timing") or {}).get("l2_flush_kind", "write")
        lines.append(f"- torch: {tc.get('torch_version', NA)} (CUDA {tc.get('cuda_version', NA)}, cuDNN "
                     f"{tc.get('cudnn_version', NA)}, TF32 conv {tc.get('cudnn_allow_tf32', NA)}), "
                     f"GPU {tc.get('gpu', NA)}, {tc.get('timestamp', NA)}; L2 flush: {torch_flush}")
        if gpu and tc.get("gpu") and gpu != tc.get("gpu"):
            lines.append(f"- **warning: GPUs differ** (ours '{gpu}', torch '{tc.get('gpu')}')")
        if ours_flush and ours_flush != torch_flush:
            lines.append(f"- **warning: L2 flushes differ** (ours '{ours_flush}', torch '{torch_flush}'): a memset "
                         "flush leaves the L2 dirty and slows memory-bound kernels (bench/results/h200/flush/)")
    else:
        lines.append("- torch: no baseline file given")
    lines.append("- best = lowest median runtime among variants whose check passed; "
                 "ratios = torch ms / ours best ms (> 1: ours is faster); host ms = call latency as a caller "
                 "feels it (host clock around the call + synchronize, GPU idle before it), of the best variant; workspace MB = the bytes the call itself "
                 "allocated, most live at once (ours counted in Halide's allocations, torch's from its caching "
                 "allocator: intermediates and cuDNN workspace)")
    lines.append("")
    lines.append("| " + " | ".join(COLUMNS) + " |")
    lines.append("|" + "|".join("---" if i in (0, 1, 3, 12, 13) else "---:" for i in range(len(COLUMNS))) + "|")
    for row in table:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    summary = summary_lines(ratios)
    if summary:
        lines += [""] + summary
    if notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def provider_runs(ours_docs, baseline_docs):
    """{(name, canonical key): {provider: [median ms of each run]}} and the providers in column order:
    blockfuse (its default row), then halide-autoscheduler-* as first seen, then the baseline's provider."""
    cells, providers = {}, ["blockfuse"]
    for doc in ours_docs:
        for r in doc["results"]:
            prov = r.get("provider", "blockfuse")
            if prov == "blockfuse" and r.get("default") is not True:
                continue
            if prov not in providers:
                providers.append(prov)
            ms = _num(r.get("runtime_ms")) if r.get("check_ok") is True else None
            if ms is not None:
                cells.setdefault((r.get("workload"), canonical_key(str(r.get("key", "")))), {}).setdefault(prov, []).append(ms)
    for doc in baseline_docs:
        bprov = (doc.get("context") or {}).get("provider", "torch eager")
        if bprov not in providers:
            providers.append(bprov)
        for r in results_schema.torch_records(doc):
            ms = _num(r.get("eager_ms"))
            if ms is not None and r.get("check_ok", True) is not False:
                cells.setdefault((r.get("name"), canonical_key(str(r.get("key", "")))), {}).setdefault(bprov, []).append(ms)
    return cells, providers


def provider_table(ours_docs, baseline_docs):
    """(header, rows) of the --by-provider table: per workload each provider's median ms over the runs
    [min-max of the runs], then each other provider's ms over blockfuse's (> 1: blockfuse is faster)."""
    cells, providers = provider_runs(ours_docs, baseline_docs)
    others = providers[1:]
    header = ["workload"] + [f"{p} ms" for p in providers] + [f"{p} / blockfuse" for p in others]
    rows = []
    for (name, _key), per in cells.items():
        med = {p: statistics.median(v) for p, v in per.items()}
        row = [str(name)]
        for p in providers:
            v = per.get(p)
            row.append(NA if not v else fmt_ms(med[p]) + (f" [{fmt_ms(min(v))}-{fmt_ms(max(v))}]" if len(v) > 1 else ""))
        row += [fmt_ratio(med.get(p), med.get("blockfuse")) for p in others]
        rows.append(row)
    return header, rows


def merged_document(ours, torch_doc):
    """Both files as one results document: ours's context and rows (written before the schema: "strategy" the
    label, "strategy_name" the strategy), the PyTorch records as pytorch-eager / pytorch-compile rows."""
    ctx = dict(ours.get("context") or {})
    ctx.setdefault("blockfuse_commit", ctx.get("commit", "unknown"))
    rows = []
    for r in ours["results"]:
        if "schema_version" not in ours:
            # a block row's label starts with its strategy ("fused (block_...) [...]"); a conv2d row's was its variant
            lab = str(r.get("strategy", ""))
            first = lab.split(" ")[0]
            strategy = r.get("strategy_name") or (
                first if first in ("layer_by_layer", "fused", "depth_first") else "direct")
            r = dict(r, provider="blockfuse", label=lab, strategy=strategy,
                     operation=str(r.get("key", "")).split(":", 1)[0], knobs=r.get("knobs") or {})
            r.pop("strategy_name", None)
        rows.append(r)
    doc = {"schema_version": results_schema.SCHEMA_VERSION, "context": ctx, "contexts": {"blockfuse": ctx},
           "results": rows}
    if torch_doc:
        tctx = dict(torch_doc.get("context") or {})
        tctx.setdefault("blockfuse_commit", "unknown")
        tctx.setdefault("device", "cuda")
        doc["contexts"]["pytorch"] = tctx
        rows += results_schema.torch_rows(results_schema.torch_records(torch_doc))
    return doc


def build_arg_parser():
    p = argparse.ArgumentParser(description="Merge blockfuse results with the PyTorch or ONNX Runtime baseline.")
    p.add_argument("--ours", required=True, nargs="+", help="results JSON of the C++ harness (--by-provider: "
                                                             "one per repeated run)")
    p.add_argument("--torch", "--baseline", dest="torch", nargs="+",
                   help="JSON of bench/pytorch_baseline.py or bench/onnxruntime_baseline.py (optional: its "
                        "columns n/a; --by-provider: one per repeated run)")
    p.add_argument("--by-provider", action="store_true",
                   help="one column per provider (blockfuse, Halide's autoschedulers, the baseline), medians over runs")
    p.add_argument("--out-md", help="write the Markdown summary here")
    p.add_argument("--out-csv", help="write the table as CSV here")
    p.add_argument("--out-json", help="write both files' rows here as one results document (the schema's)")
    return p


def write_outputs(md, header, rows, args, merged=None):
    """The Markdown to stdout and --out-md, the table (header + rows) to --out-csv, the merged results document
    (when there is one: not for --by-provider) to --out-json."""
    sys.stdout.write(md)
    if args.out_md:
        with open(args.out_md, "w", encoding="utf-8") as fh:
            fh.write(md)
    if args.out_json:
        if merged is None:
            raise SystemExit("error: --out-json writes one merged run: not with --by-provider")
        with open(args.out_json, "w", encoding="utf-8") as fh:
            json.dump(merged, fh, indent=1)
            fh.write("\n")
    if args.out_csv:
        with open(args.out_csv, "w", encoding="utf-8", newline="") as fh:
            csv.writer(fh).writerows([header] + rows)


def main(argv=None):
    args = build_arg_parser().parse_args(argv)
    if args.by_provider:
        header, rows = provider_table([load_json(o, "ours") for o in args.ours],
                                      [load_json(b, "baseline") for b in args.torch or []])
        md = "| " + " | ".join(header) + " |\n|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|\n"
        write_outputs(md + "".join("| " + " | ".join(r) + " |\n" for r in rows), header, rows, args)
        return 0
    if len(args.ours) > 1 or (args.torch and len(args.torch) > 1):
        raise SystemExit("error: several --ours or --torch files need --by-provider")
    ours = load_json(args.ours[0], "ours")
    torch_doc = load_json(args.torch[0], "torch") if args.torch else None
    table, notes, ratios = merge(ours, torch_doc)
    write_outputs(to_markdown(table, ours, torch_doc, notes, ratios), COLUMNS, table, args,
                  merged_document(ours, torch_doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
