#!/usr/bin/env python3
"""Waterline / roofline / efficiency-gap report of a blockfuse results folder.

Usage:
  python bench/report.py DIR [--torch PYTORCH.json] [--out OUTDIR]

Reads DIR/results.json (`blockfuse bench --out DIR`) and writes to OUTDIR (default DIR/report):
waterline.{svg,png}, roofline.{svg,png}, efficiency_gap.{svg,png} and summary.md. The model
is bench/model.py (Lavin 2024, Eq. 1-14 and 29) with B = copy bandwidth and a peak R_k per kernel
from context.ceilings: the mma.sync ceiling of the row's dtype for a kernel marked tensor_cores, else
FFMA f32 (as bench/harness.cpp); without ceilings only summary.md is written and says why. Per workload
the best strategy is the lowest runtime_ms among rows whose check_ok is true. Bad input:
one 'error: ...' line on stderr, exit code 2.
"""
import argparse
import json
import math
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model  # noqa: E402
from results_schema import torch_records  # noqa: E402

try:  # same key matching as bench/merge_results.py ('pad=1' == 'pad_t=1,...')
    from pytorch_baseline import canonical_key  # noqa: E402
except ImportError:
    canonical_key = str.strip

PLOTS = ("waterline", "roofline", "efficiency_gap")
MMA_DTYPES = ("f16", "bf16")  # the mma.sync ceilings the harness measures (context.ceilings.mma_<dtype>_tflops)
NO_MMA = "FFMA (no mma.sync ceiling)"  # the roof of a tensor-core kernel in results without the mma ceilings
TENSOR_ROOFS = ("mma.sync", "wgmma")  # a tensor-core kernel's roof names its instruction, then its dtype
ROW_FIELDS = {"workload": str, "strategy": str, "flops": float, "bytes": float, "runtime_ms": float, "check_ok": bool}
KERNEL_FIELDS = {"name": str, "flops": float, "bytes": float}
plt.rcParams.update({"svg.fonttype": "none", "font.size": 9})  # SVG text stays text


class InputError(Exception):
    """A problem with the user's files: reported as one line, exit code 2."""


# ---------------------------------------------------------------- input

def _read_json(path, what):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise InputError(f"{what} file '{path}' does not exist") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{what} file '{path}' is not valid JSON "
                         f"(line {e.lineno}, column {e.colno}: {e.msg})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read {what} file '{path}': {e}") from None


def _results_list(doc, path):
    rows = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise InputError(f"'{path}' has no 'results' list")
    if not rows:
        raise InputError(f"no results in '{path}'")
    return rows


def _check_fields(obj, fields, where):
    """Required fields present with the right type; numbers finite and >= 0."""
    if not isinstance(obj, dict):
        raise InputError(f"{where} is not an object")
    for name, typ in fields.items():
        if name not in obj:
            raise InputError(f"{where} is missing '{name}'")
        v = obj[name]
        if typ is float:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise InputError(f"{where}: '{name}' must be a finite non-negative number, got {v!r}")
        elif not isinstance(v, typ):
            raise InputError(f"{where}: '{name}' must be a {typ.__name__}, got {v!r}")


def load_results(folder):
    if not os.path.isdir(folder):
        raise InputError(f"results folder '{folder}' does not exist or is not a directory")
    path = os.path.join(folder, "results.json")
    doc = _read_json(path, "results")
    rows = _results_list(doc, path)
    if isinstance(doc, dict) and "schema_version" in doc:
        # blockfuse's rows (bench/results.schema.json), each named by its label (strategy, variant and notes) as
        # "strategy" named them before the schema
        rows = [dict(r, strategy=r.get("label") or r.get("strategy") or "") for r in rows
                if isinstance(r, dict) and r.get("provider", "blockfuse") == "blockfuse"]
    for i, r in enumerate(rows):
        where = f"'{path}': results[{i}]"
        if isinstance(r, dict) and "workload" in r:
            where += f" (workload '{r['workload']}', strategy '{r.get('strategy')}')"
        _check_fields(r, ROW_FIELDS, where)
        if r["check_ok"] and r["runtime_ms"] <= 0:  # the model divides by it
            raise InputError(f"{where}: passing row with runtime_ms {r['runtime_ms']}")
        if "kernels" in r:
            if not isinstance(r["kernels"], list) or not r["kernels"]:
                raise InputError(f"{where}: 'kernels' must be a non-empty list")
            for j, k in enumerate(r["kernels"]):
                _check_fields(k, KERNEL_FIELDS, f"{where} kernels[{j}]")
                for opt, typ in (("runtime_ms", float), ("executed_flops", float), ("tensor_cores", bool)):
                    if opt in k:
                        _check_fields(k, {opt: typ}, f"{where} kernels[{j}]")
    ctx = doc.get("context")
    return (ctx if isinstance(ctx, dict) else {}), rows


def load_torch(path):
    """{(name, canonical key): row} of bench/pytorch_baseline.py output, and its context."""
    doc = _read_json(path, "PyTorch baseline")
    index = {}
    records = _results_list(doc, path)
    if isinstance(doc, dict) and "schema_version" in doc:
        records = torch_records(doc)
    for i, r in enumerate(records):
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            raise InputError(f"'{path}': results[{i}] has no 'name'")
        index.setdefault((r["name"], canonical_key(str(r.get("key", "")))), r)
    return doc.get("context") or {}, index


@dataclass(frozen=True)
class Peaks:
    """The ceilings measured in the run, in ops/s and bytes/s: FFMA f32 R, copy bandwidth B, HFMA2 f16 (None where
    not measured), the mma.sync ceilings by dtype ({'f16': ..., 'bf16': ...}, those measured) and wgmma's (compute
    capability 9.0 only)."""
    R: float
    B: float
    R16: float = None
    mma: dict = field(default_factory=dict)
    wgmma: dict = field(default_factory=dict)


def ceilings(ctx):
    """(Peaks, None), or (None, reason) where the model cannot run."""
    c = ctx.get("ceilings")
    if not isinstance(c, dict):
        return None, "results.json has no context.ceilings (no GPU ceilings were measured, e.g. a CPU run)"
    vals = {k: _num(c.get(k)) for k in ("ffma_f32_tflops", "copy_gbps", "hfma2_f16_tflops", "mma_f16_tflops",
                                        "mma_bf16_tflops", "wgmma_f16_tflops", "wgmma_bf16_tflops")}
    if vals["ffma_f32_tflops"] is None or vals["copy_gbps"] is None:
        return None, "context.ceilings lacks a positive ffma_f32_tflops or copy_gbps"
    hf = vals["hfma2_f16_tflops"]
    mma = {d: vals[f"mma_{d}_tflops"] * 1e12 for d in MMA_DTYPES if vals[f"mma_{d}_tflops"]}
    wgmma = {d: vals[f"wgmma_{d}_tflops"] * 1e12 for d in MMA_DTYPES if vals[f"wgmma_{d}_tflops"]}
    return Peaks(vals["ffma_f32_tflops"] * 1e12, vals["copy_gbps"] * 1e9, hf * 1e12 if hf else None, mma, wgmma), None


# ---------------------------------------------------------------- analysis

class Kernel(NamedTuple):
    """One modelled kernel of a row and the peak it is counted against."""
    name: str
    n: float  # ops
    b: float  # compulsory DRAM bytes
    t: float  # measured seconds, None where the row does not time its kernels one by one
    R: float  # its peak R_k in ops/s (None without ceilings)
    roof: str  # "FFMA", "mma.sync f16", "mma.sync bf16", "wgmma f16", "wgmma bf16", or NO_MMA
    tc: bool  # marked tensor_cores by the harness


def mma_dtype(dtype):
    """The mma.sync ceiling a row's tensor-core kernels are counted against (bench/harness.cpp: bf16, else f16)."""
    return "bf16" if dtype == "bf16" else "f16"


def row_kernels(r, p):
    """A row's modelled kernels (the row itself where it lists none), each with its peak R_k of Peaks p (None
    without ceilings): the tensor-core ceiling of the row's dtype for a tensor-core kernel (wgmma's where the kernel
    says `wgmma` (older results: the row's knob) and that ceiling was measured, as bench/harness.cpp; else
    mma.sync's), else FFMA; a
    tensor-core kernel in results without that ceiling falls back to FFMA (roof NO_MMA)."""
    if "kernels" not in r:
        return [Kernel(r["strategy"], r["flops"], r["bytes"], r["runtime_ms"] * 1e-3, p and p.R, "FFMA", False)]
    out = []
    for k in r["kernels"]:
        tc, d = k.get("tensor_cores", False), mma_dtype(r.get("dtype"))
        on_wgmma = k.get("wgmma", (r.get("knobs") or {}).get("wgmma", 0))  # results before the kernel's field: the row's knob
        wg = tc and on_wgmma and p is not None and d in p.wgmma
        roof = ("FFMA" if not tc else f"wgmma {d}" if wg else f"mma.sync {d}" if p is None or d in p.mma else NO_MMA)
        Rk = None if p is None else p.wgmma[d] if wg else p.mma[d] if roof.startswith(TENSOR_ROOFS) else p.R
        out.append(Kernel(k["name"], k["flops"], k["bytes"], k["runtime_ms"] * 1e-3 if "runtime_ms" in k else None,
                          Rk, roof, tc))
    return out


def sequence(ks):
    """bench/model.py's (n, b, R_k) triples of Kernels."""
    return [(k.n, k.b, k.R) for k in ks]


def model_quantities(ks, t_a, p):
    """The model of kernels ks (row_kernels) measured at t_a seconds, each kernel at its own peak: t_i (Eq. 1
    summed), T_min (Eq. 12), C = t_i/t_a (Eq. 8), C_max = t_i/T_min (Eq. 13) and the floor that binds."""
    seq = sequence(ks)
    mem = [k for k in ks if model.is_memory_bound(k.n, k.b, k.R, p.B)]
    mem_t = sum(model.min_latency(k.n, k.b, k.R, p.B) for k in mem)
    T = model.waterline_latency(seq, p.R, p.B)
    on_mma = {k.roof.startswith(TENSOR_ROOFS) for k in ks if k not in mem and k.n > 0}  # of the compute-bound kernels
    tc = "/".join(sorted({k.roof.split()[0] for k in ks if k.roof.startswith(TENSOR_ROOFS)})) or "mma.sync"
    compute = "compute" + (f" on {tc}" if on_mma == {True} else f" (FFMA and {tc})" if len(on_mma) == 2 else "")
    return dict(t_i=model.sequence_ideal_latency(seq, p.R), T_min=T, C=model.sequence_efficiency(seq, t_a, p.R),
                C_max=model.max_efficiency(seq, p.R, p.B) if T > 0 else math.nan,
                floor="memory" if mem_t == T else compute if mem_t == 0 else
                f"mixed ({mem_t / T:.0%} of T_min memory-bound)")


@dataclass
class Unit:
    """One workload (name + key): its best passing row and the model quantities."""
    index: int
    label: str
    best: dict
    n_rows: int
    kernels: list  # [Kernel]
    t_a: float  # measured seconds
    torch: dict = None
    m: dict = field(default_factory=dict)  # model quantities, empty without ceilings
    executed: float = None  # flops the kernels execute, recomputation included (None: not in the results)

    @property
    def n(self):
        return sum(k.n for k in self.kernels)  # Eq. 14 over this row's kernels

    @property
    def b(self):
        return sum(k.b for k in self.kernels)


_TAGS = {"f16", "bf16", "f32", "f64", "cuda", "cpu", "opencl", "metal", "vulkan", "host"}
_VARIANT = re.compile(r"^(k\d+)?[sf]?[a-z]$")  # 'a', 'k3a', 'k3sw' (static channels), 'k3fa' (flat mapping): variant tags


def family(strategy):
    """Strategy family: the name without dtype, backend and variant tags
    ('conv2d_depthwise_k3a_f16_cuda' -> 'conv2d_depthwise')."""
    toks = [t for t in strategy.split("_") if t not in _TAGS and not _VARIANT.match(t)]
    return "_".join(toks) or strategy


def legend_family(strategy):
    """Family for a legend: of the kernel name where the strategy label carries one
    ('layer_by_layer (block_cf64_layer_by_layer_sx_f16_cuda)' -> 'block_cf64_layer_by_layer')."""
    m = re.search(r"\(([^()]+)\)", strategy)
    return family(m.group(1) if m else strategy)


def workload_groups(rows):
    """Rows by workload (name and canonical key), in order of first appearance."""
    groups = {}
    for r in rows:
        groups.setdefault((r["workload"], canonical_key(str(r.get("key", "")))), []).append(r)
    return groups


def row_model(r, p):
    """model_quantities of a passing row's kernels at its measured time, and the kernels."""
    ks = row_kernels(r, p)
    return model_quantities(ks, r["runtime_ms"] * 1e-3, p), ks


def analyse(rows, p, torch_index):
    """Units in order of first appearance, failed rows, notes; p: Peaks, None without ceilings."""
    groups = workload_groups(rows)
    names = [w for w, _ in groups]
    units, notes = [], []
    for (name, key), grp in groups.items():
        ok = [r for r in grp if r["check_ok"]]
        if not ok:
            notes.append(f"{name}: no variant passed its check ({len(grp)} tried); left out of the plots")
            continue
        best = min(ok, key=lambda r: r["runtime_ms"])
        label = name if names.count(name) == 1 else f"{name} [{best.get('dtype', key)}]"
        executed = None
        ks = row_kernels(best, p)
        if "kernels" in best:
            if any("executed_flops" in k for k in best["kernels"]):  # results from before the field: n/a
                executed = sum(k.get("executed_flops", k["flops"]) for k in best["kernels"])
            if abs(sum(k.n for k in ks) - best["flops"]) > 0.01 * best["flops"]:
                notes.append(f"{label}: row flops {best['flops']:.4g} differ from its kernels' sum "
                             f"{sum(k.n for k in ks):.4g}; the model uses the kernels (Eq. 14)")
        u = Unit(len(units) + 1, label, best, len(ok), ks, best["runtime_ms"] * 1e-3, executed=executed)
        if torch_index is not None:
            u.torch = torch_index.get((name, key))
            if u.torch is None:
                notes.append(f"{label}: no PyTorch row with this name and key")
        if p:
            u.m = model_quantities(ks, u.t_a, p)
        units.append(u)
    fallback = [r for r in rows if r["check_ok"] and any(k.roof == NO_MMA for k in row_kernels(r, p))]
    if fallback:  # first, and loud: every tensor-core number of the report is off
        dts = sorted({mma_dtype(r.get("dtype")) for r in fallback})
        notes.insert(0, f"**WARNING: the results have no mma.sync ceiling for {' or '.join(dts)} (context.ceilings."
                        f"{' / '.join(f'mma_{d}_tflops' for d in dts)}; results older than the field), so the "
                        f"tensor-core kernels of {len(fallback)} passing rows are counted against the FFMA peak: "
                        "their t_i and T_min are too long and their C and C_max overstated (C above 100% is no "
                        "contradiction there).**")
    failed = [r for r in rows if not r["check_ok"]]
    return units, failed, notes


def flat_kernels(units, B):
    """[(label, Kernel, t_min, t_measured)] of all units' kernels in sequence order, t_min at the kernel's own
    peak. Kernels without their own time share what is left of the row's time in proportion to t_min."""
    out, split = [], False
    for u in units:
        tm = [model.min_latency(k.n, k.b, k.R, B) for k in u.kernels]
        unknown = [t for k, t in zip(u.kernels, tm) if k.t is None]
        rest = max(u.t_a - sum(k.t for k in u.kernels if k.t is not None), 0.0)
        for j, (k, t) in enumerate(zip(u.kernels, tm)):
            meas = k.t
            if meas is None:
                split = True
                meas = rest * t / sum(unknown) if sum(unknown) > 0 else rest / len(unknown)
            out.append((str(u.index) if len(u.kernels) == 1 else f"{u.index}.{j + 1}", k, t, meas))
    return out, split


# ---------------------------------------------------------------- plots

def _save(fig, outdir, name):
    for ext in ("svg", "png"):
        fig.savefig(os.path.join(outdir, f"{name}.{ext}"), dpi=130, metadata={"Date": None} if ext == "svg" else None)
    plt.close(fig)


def used_roofs(kernels, p):
    """[(roof, R_k)] of the peaks kernels are counted against: FFMA first, then each tensor-core ceiling in use."""
    mma = sorted({(k.roof, k.R) for k in kernels if k.roof.startswith(TENSOR_ROOFS)})
    return [("FFMA", p.R)] + mma


def plot_waterline(units, p, outdir):
    flat, split = flat_kernels(units, p.B)
    ks = [f[1] for f in flat]
    ridges = [(roof, R / p.B) for roof, R in used_roofs(ks, p)]
    ridge = np.array([k.R / p.B for k in ks])  # each kernel against its own peak's ridge
    oi = np.array([model.operational_intensity(k.n, k.b) for k in ks])
    finite = oi[np.isfinite(oi) & (oi > 0)]
    lo = min(finite.min() if finite.size else ridge.min(), ridge.min()) / 2
    hi = max(finite.max() if finite.size else ridge.max(), ridge.max()) * 4
    no_flops = ~(oi > 0)  # e.g. a max pool: data movement only; drawn as a short grey bar at the floor
    oi = np.clip(np.where(no_flops, lo * 1.3, oi), lo, hi / 1.5)  # inf (no bytes) drawn at the top
    under = oi < ridge
    tc = np.array([k.tc for k in ks])
    colors = np.where(no_flops, "0.7", np.where(under, "tab:blue", "tab:orange"))
    edges = np.where(under, "#0b3d66", "#8a3d00")  # darker edges: bar boundaries, and narrow bars stay visible
    t_i = model.sequence_ideal_latency(sequence(ks), p.R)
    fig, axes = plt.subplots(2, 1, figsize=(14, 9.5), sharey=True, layout="constrained")
    panels = [
        (np.array([f[2] for f in flat]), "minimum attainable latency, bar width = t_min of Eq. 11 (µs)",
         "(a) model: waterline T_min = Σ t_min = {T:.1f} µs (Eq. 12), C_max = t_i / T_min = {C:.1%} (Eq. 13)"),
        (np.array([f[3] for f in flat]), "measured latency of the best strategy, bar width = median runtime (µs)"
         + (" (kernels without their own time: the rest of their row's time, split in proportion to t_min)"
            if split else ""),
         "(b) measured: Σ t_a = {T:.1f} µs, C = t_i / Σ t_a = {C:.1%} (Eq. 7, 8)"),
    ]
    for ax, (w, xlabel, title) in zip(axes, panels):
        w_us = w * 1e6
        left = np.concatenate([[0], np.cumsum(w_us)[:-1]])
        bars = ax.bar(left, oi - lo, bottom=lo, width=w_us, align="edge", color=colors, edgecolor=edges,
                      linewidth=0.5)
        for bar, hatched in zip(bars, tc):
            if hatched:
                bar.set_hatch("///")
        total = w_us.sum()
        for i, (roof, y) in enumerate(ridges):  # labelled right of the axes; a second mma ridge's label below it
            ax.axhline(y, color="k", lw=1.2, ls="-" if roof == "FFMA" else "--")
            ax.annotate(f"{roof}\nR/B = {y:.1f}", (1, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                        textcoords="offset points", ha="left", va="bottom" if i < 2 else "top", fontsize=8)
        wide = w_us >= 0.015 * total  # narrower bars have no room for a label
        for x, ww, h, lab in zip(left[wide], w_us[wide], oi[wide], np.array([f[0] for f in flat])[wide]):
            ax.text(x + ww / 2, h * 1.12, lab, ha="center", va="bottom", fontsize=8,
                    bbox=dict(fc="white", ec="none", pad=0.3, alpha=0.8))  # readable across the waterline
        ax.set_xlim(0, total)
        ax.set_xlabel(xlabel + "\nbar numbers are the # column of summary.md"
                      + (f"; {(~wide).sum()} of {len(flat)} bars are too narrow to label" if (~wide).any() else ""))
        ax.set_ylabel("operational intensity n/b (FLOP/byte)")
        ax.set_title(title.format(T=total, C=t_i / w.sum() if w.sum() > 0 else math.nan), loc="left")
        ax.grid(axis="y", which="major", alpha=0.3)
    axes[0].set_yscale("log")
    axes[0].set_ylim(lo, hi)
    handles = [Patch(color="tab:blue", label="memory bound (n/b below its peak's waterline)"),
               Patch(color="tab:orange", label="compute bound"),
               *([Patch(color="0.7", label="no FLOPs counted (data movement only)")] if no_flops.any() else []),
               *([Patch(fc="white", ec="k", hatch="///", label="tensor-core kernel (against the mma.sync ridge)")]
                 if tc.any() else []),
               *(Line2D([], [], color="k", ls="-" if roof == "FFMA" else "--",
                        label=f"op:byte waterline {roof} R/B = {y:.1f} FLOP/byte ({roof} {y * p.B / 1e12:.1f} "
                              f"TFLOP/s / copy {p.B / 1e9:.0f} GB/s)") for roof, y in ridges)]
    fig.legend(handles=handles, loc="outside upper center", ncol=min(len(handles), 3), frameon=False)
    _save(fig, outdir, "waterline")


def roofline_group(strategy):
    """What a roofline point is coloured by: the block strategy (layer_by_layer, fused, depth_first), else the conv2d
    kind ('conv2d_depthwise_k3fd_f16_cuda' -> 'conv2d_depthwise')."""
    kind = strategy_kind(strategy)
    if kind:
        return kind
    fam = legend_family(strategy)
    return "_".join(fam.split("_")[:2]) if fam.startswith("conv2d_") else fam  # 'conv2d_general_cw' -> 'conv2d_general'


def tc_share(r):
    """How many of a row's kernels are marked tensor_cores, of how many (a row without kernels: 0 of 1)."""
    ks = row_kernels(r, None)
    return sum(k.tc for k in ks), len(ks)


def plot_roofline(rows, units, p, outdir):
    ok = [r for r in rows if r["check_ok"] and r["flops"] > 0 and r["bytes"] > 0]  # log-log needs both
    if not ok:
        return False
    R, B = p.R, p.B
    groups = sorted({roofline_group(r["strategy"]) for r in ok})
    fig, ax = plt.subplots(figsize=(11, 7), layout="constrained")
    roof_of = {}  # group -> which roof bounds its rows
    for i, g in enumerate(groups):
        pts = [r for r in ok if roofline_group(r["strategy"]) == g]
        shares = [tc_share(r) for r in pts]
        roof_of[g] = ("mma.sync" if all(t == n for t, n in shares) else "FFMA" if not any(t for t, _ in shares)
                      else "between FFMA and mma.sync")
        ax.scatter([r["flops"] / r["bytes"] for r in pts], [r["flops"] / r["runtime_ms"] / 1e6 for r in pts],
                   marker="osD^v<>Ph*X"[i % 11], color=plt.cm.tab10(i % 10), s=30, alpha=0.6,
                   label=f"{g.replace('_', ' ')} ({len(pts)} kernels or runs; roof: {roof_of[g]})", zorder=3)
    bests = [u for u in units if u.best["flops"] > 0 and u.best["bytes"] > 0]
    bx = [u.best["flops"] / u.best["bytes"] for u in bests]
    by = [u.best["flops"] / u.best["runtime_ms"] / 1e6 for u in bests]
    ax.scatter(bx, by, s=110, facecolors="none", edgecolors="k", linewidths=1.1,
               label="best of its workload (number: the # column of summary.md)", zorder=4)
    for u, x, y in zip(bests, bx, by):  # labels alternate above and below, so neighbours do not overlap
        ax.annotate(str(u.index), (x, y), xytext=(0, 8 if u.index % 2 else -14), textcoords="offset points",
                    ha="center", fontsize=7.5, zorder=5)
    xi = np.array([r["flops"] / r["bytes"] for r in ok])
    top = max([R] + list(p.mma.values()) + list(p.wgmma.values()))
    xs = np.logspace(np.log10(min(xi.min(), R / B) / 3), np.log10(max(xi.max(), top / B) * 3), 200)
    ax.plot(xs, np.minimum(R, B * xs) / 1e9, "k-", lw=1.5,
            label=f"roof: FFMA f32 {R / 1e12:.1f} TFLOP/s, copy bandwidth slope {B / 1e9:.0f} GB/s")
    if p.R16:
        ax.plot(xs, np.minimum(p.R16, B * xs) / 1e9, "k--", lw=1.2, label=f"HFMA2 f16 roof {p.R16 / 1e12:.1f} TFLOP/s")
    mma = sorted(p.mma.items(), key=lambda dr: dr[1])
    if len(mma) == 2 and mma[1][1] < 1.02 * mma[0][1]:  # f16 and bf16 coincide (Hopper): one line for both
        mma = [(" / ".join(d for d, _ in mma), mma[0][1], " / ".join(f"{Rm / 1e12:.1f}" for _, Rm in mma))]
    else:
        mma = [(d, Rm, f"{Rm / 1e12:.1f}") for d, Rm in mma]
    for (d, Rm, rates), ls in zip(mma, ("-.", ":")):
        ax.plot(xs, np.minimum(Rm, B * xs) / 1e9, ls, color="tab:purple", lw=1.4,
                label=f"mma.sync {d} roof {rates} TFLOP/s (ridge {Rm / B:.1f} FLOP/byte)")
    if any(k.roof.startswith("wgmma") for u in units for k in u.kernels):  # drawn where a wgmma kernel is counted
        Rw = max(p.wgmma.values())
        ax.plot(xs, np.minimum(Rw, B * xs) / 1e9, "--", color="tab:red", lw=1.4,
                label=f"wgmma roof {' / '.join(f'{d} {v / 1e12:.1f}' for d, v in sorted(p.wgmma.items()))} TFLOP/s "
                      f"(ridge {Rw / B:.1f} FLOP/byte)")
    ax.axvline(R / B, color="grey", ls=":", lw=1, label=f"ridge R/B = {R / B:.1f} FLOP/byte (FFMA)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xs[0], xs[-1])
    gf = np.array([r["flops"] / r["runtime_ms"] / 1e6 for r in ok])
    ax.set_ylim(gf.min() / 3, top / 1e9 * (4 if top == R else 2))
    ax.set_xlabel("operational intensity n/b (FLOP per compulsory DRAM byte)")
    ax.set_ylabel("achieved throughput (GFLOP/s)")
    n_tc = sum(1 for r in ok if tc_share(r)[0])
    if n_tc:
        which = "; ".join(f"{roof}: {', '.join(g.replace('_', ' ') for g in groups if roof_of[g] == roof)}"
                          for roof in ("FFMA", "mma.sync", "between FFMA and mma.sync")
                          if roof in roof_of.values())
        title = (f"Roofline (Eq. 10): all {len(ok)} passing rows, coloured by strategy; {n_tc} rows with tensor-core "
                 f"kernels{'' if p.mma else ' (no mma.sync ceiling measured: only the FFMA roof)'}.\n"
                 + textwrap.fill(f"Roof per strategy: {which}", 135))
    else:
        title = f"Roofline (Eq. 10): all {len(ok)} passing rows, coloured by strategy (no row has a tensor-core kernel)"
    ax.set_title(title, loc="left", fontsize=10)
    ax.grid(which="major", alpha=0.3)
    fig.legend(loc="outside lower center", ncol=2, fontsize=8, frameon=False)  # keeps the roof lines clear
    _save(fig, outdir, "roofline")
    return True


def plot_efficiency_gap(units, p, outdir, have_torch):
    y = np.arange(len(units))
    t_i, T = (np.array([u.m[k] * 1e6 for u in units]) for k in ("t_i", "T_min"))
    t_a = np.array([u.t_a * 1e6 for u in units])
    fig, ax = plt.subplots(figsize=(12, max(4.5, 0.3 * len(units) + 2.4)), layout="constrained")
    ax.hlines(y, np.minimum(t_i, t_a), np.maximum(t_i, t_a), color="0.7", lw=3, zorder=1,
              label="efficiency gap, width = -log C (Eq. 9)")
    # A large ring, so that t_i stays visible around the T_min diamond when the two coincide.
    ax.scatter(t_i, y, marker="o", facecolors="white", edgecolors="tab:green", s=90, lw=1.5, zorder=3,
               label="ideal latency t_i = Σ n_k/R_k at each kernel's peak (FFMA, mma.sync for tensor-core kernels) "
                     "(Eq. 1, 8)")
    ax.scatter(T, y, marker="D", color="tab:blue", s=30, zorder=4, label="waterline T_min (Eq. 12)")
    ax.scatter(t_a, y, marker="o", color="tab:red", s=40, zorder=4, label="actual latency t_a (best strategy, median)")
    if have_torch:
        tu = [(i, _num(u.torch.get("eager_ms"))) for i, u in enumerate(units) if u.torch]
        tu = [(i, v) for i, v in tu if v]
        ax.scatter([v * 1e3 for _, v in tu], [i for i, _ in tu], marker="x", color="k", s=30, zorder=5,
                   label="PyTorch eager (cuDNN tensor-core kernels)")
    ax.set_xscale("log")
    ax.set_yticks(y, [f"{u.index}  {u.label}" for u in units])
    ax.set_ylim(len(units) - 0.5, -0.5)  # first workload on top
    sec = ax.secondary_yaxis("right")
    sec.set_yticks(y, [f"C {_pct(u.m['C'])}  C_max {_pct(u.m['C_max'])}" for u in units])
    sec.set_ylabel("computational efficiency")
    ax.set_xlabel("latency (µs, log scale)")
    peaks = ", ".join(f"{roof} {R / 1e12:.1f}" for roof, R in used_roofs([k for u in units for k in u.kernels], p))
    ax.set_title(f"Efficiency gap per workload, each kernel at its peak R_k (TFLOP/s: {peaks})\n"
                 "right: C = t_i / t_a (Eq. 7, 8), C_max = t_i / T_min (Eq. 13)", loc="left")
    ax.grid(axis="x", which="both", alpha=0.25)
    fig.legend(loc="outside upper center", ncol=2, fontsize=8, frameon=False)
    _save(fig, outdir, "efficiency_gap")


def memory_rows(rows):
    """Passing rows whose call memory was measured (workspace_bytes: what the call itself allocated, live at once)."""
    return [r for r in rows if r.get("check_ok") and _num(r.get("runtime_ms")) and r.get("workspace_bytes") is not None]


def plot_workspace(rows, outdir):
    """Workspace against latency, one marker per strategy, each workload's strategies joined: block fusion's claim
    that hidden activations never reach DRAM, measured as memory beside time. False where no row has the memory."""
    mem = memory_rows(rows)
    if not mem:
        return False
    fig, ax = plt.subplots(figsize=(9, 6), layout="constrained")
    kinds = sorted({legend_family(r["strategy"]) for r in mem})
    cmap = plt.cm.tab10 if len(kinds) <= 10 else plt.cm.tab20  # a colour of its own for each strategy
    colour = {k: cmap(i % cmap.N) for i, k in enumerate(kinds)}
    for _, grp in workload_groups(mem).items():
        pts = sorted((r["runtime_ms"] * 1e3, r["workspace_bytes"] / 1e6) for r in grp)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color="0.8", lw=1, zorder=1)
    for k in kinds:
        sel = [r for r in mem if legend_family(r["strategy"]) == k]
        ax.scatter([r["runtime_ms"] * 1e3 for r in sel], [r["workspace_bytes"] / 1e6 for r in sel], s=30,
                   color=colour[k], label=k, zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=0.01)  # 0 (a fused block on CUDA) stays on the axis
    ax.set_ylim(-0.004, None)  # no negative decades: a workspace is never below 0
    ax.set_xlabel("latency (µs, median, log scale)")
    ax.set_ylabel("workspace (MB: the call's own allocations live at once, measured)")
    ax.set_title("Workspace against latency per strategy (each workload's strategies joined)", loc="left", fontsize=10)
    ax.grid(which="major", alpha=0.3)
    fig.legend(loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    _save(fig, outdir, "workspace")
    return True


def memory_lines(rows):
    """The summary's memory table: per passing row with the memory measured, its time, workspace and peak."""
    mem = memory_rows(rows)
    if not mem:
        return []
    L = ["| workload | strategy | t_a µs | workspace MB | peak MB (arguments + workspace) |", "|---|---|---:|---:|---:|"]
    for (name, _), grp in workload_groups(mem).items():
        for r in sorted(grp, key=lambda r: r["runtime_ms"]):
            peak = _num(r.get("peak_bytes"))
            L.append(f"| {name} | `{r['strategy']}` | {_us(r['runtime_ms'] * 1e-3)} | {r['workspace_bytes'] / 1e6:.3f} | "
                     f"{f'{peak / 1e6:.3f}' if peak is not None else 'n/a'} |")
    return L


# ---------------------------------------------------------------- summary

def _us(s):
    """Seconds as µs: 4 significant digits, whole µs from 10 ms up (no exponents)."""
    return "n/a" if s is None or not math.isfinite(s) else f"{s * 1e6:.4g}" if s < 1e-2 else f"{s * 1e6:.0f}"


def _num(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0 else None


def _pct(x):
    return "n/a" if x is None or not math.isfinite(x) else f"{x:.1%}"


def ridges_text(kernels, p):
    """The op:byte ridges R_k/B of the peaks kernels are counted against: '15.5 (FFMA), 142.2 (mma.sync f16)'."""
    return ", ".join(f"{R / p.B:.1f} ({roof})" for roof, R in used_roofs(kernels, p))


def sequence_lines(units, p):
    """Eq. 12/13 vs Eq. 29 over all best rows as one sequence of kernels, each at its own peak."""
    ks = [k for u in units for k in u.kernels]
    seq, R, B = sequence(ks), p.R, p.B
    N, b = model.total_ops(seq), sum(k.b for k in ks)
    T, Tr = model.waterline_latency(seq, R, B), model.roofline_latency(seq, R, B)
    mem = [(k.n, k.b, k.R) for k in ks if model.is_memory_bound(k.n, k.b, k.R, B)]
    t_mem = model.waterline_latency(mem, R, B)
    ta = sum(u.t_a for u in units)
    med = model.mediant_intensity(seq)
    return [
        f"All {len(units)} best rows as one sequence of {len(ks)} kernels, run one after another.", "",
        "| quantity | value |", "|---|---:|",
        f"| N = Σ n_i (Eq. 14) | {N:.4g} FLOP |",
        f"| Σ b_i | {b:.4g} bytes |",
        f"| mediant operational intensity Σn/Σb (Eq. 29) | {med:.1f} FLOP/byte (op:byte R/B = {ridges_text(ks, p)}) |",
        f"| memory-bound kernels | {len(mem)} of {len(ks)}: {t_mem / T:.1%} of T_min, "
        f"{model.total_ops(mem) / N:.2%} of N |",
        f"| waterline T_min (Eq. 12) | {_us(T)} µs |",
        f"| mediant roofline max(Σ n_i/R_i, Σ b_i/B) (Eq. 29 in Eq. 11) | {_us(Tr)} µs |",
        f"| C_max, waterline (Eq. 13) | {_pct(model.max_efficiency(seq, R, B))} |",
        f"| C_max, mediant roofline | {_pct(model.roofline_max_efficiency(seq, R, B))} |",
        f"| measured Σ t_a of the best rows | {_us(ta)} µs |",
        f"| C actual of the sequence, t_i / Σ t_a (Eq. 8) | {_pct(model.sequence_efficiency(seq, ta, R))} |",
        "",
        (f"The mediant roofline promises {Tr * 1e6:.4g} µs, {1 - Tr / T:.1%} less than the waterline: it lets the "
         "spare compute time of the compute-bound kernels hide the bytes of the memory-bound ones, which a "
         "sequence run kernel by kernel cannot do (Section 4.3)." if Tr < T * (1 - 1e-9) else
         "The mediant roofline equals the waterline here: the kernels are all memory-bound or all compute-bound "
         "(Section 4.3)."),
    ]


def _passing_by_workload(rows, keep=lambda r: True):
    """[(workload name, its passing rows that keep accepts, fastest first)] in order of first appearance."""
    groups = workload_groups([r for r in rows if r["check_ok"] and keep(r)])
    return [(name, sorted(grp, key=lambda r: r["runtime_ms"])) for (name, _), grp in groups.items()]


def strategy_lines(rows, p):
    """Every passing row of every workload: its kernels' waterline (Eq. 12) and C (Eq. 8), each kernel at its own
    peak, beside the measured time, so strategies of one workload (layer by layer, fused, depth first, variants)
    compare on the model and on the clock."""
    L = ["| workload | strategy | kernels | modelled bytes | waterline T_min µs | t_a µs | T_min/t_a | C | "
         "t_a / best t_a |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, grp in _passing_by_workload(rows):
        best = grp[0]["runtime_ms"] * 1e-3
        for r in grp:
            m, ks = row_model(r, p)
            t_a = r["runtime_ms"] * 1e-3
            L.append(f"| {name} | `{r['strategy']}` | {len(ks)} | {sum(k.b for k in ks):.4g} | {_us(m['T_min'])} | "
                     f"{_us(t_a)} | {_pct(m['T_min'] / t_a)} | {_pct(m['C'])} | {t_a / best:.2f} |")
    return L


TC_SLACK = 1.25  # the goal: a fused kernel within 25% of its predicted minimum latency


def tensor_core_lines(rows, p):
    """Every passing row with a tensor-core kernel: the waterline's T_min (each kernel at its own peak) beside the
    measured t_a, whether t_a is within 25% of it, C (Eq. 7-8) and the floor that binds. Empty where there is none."""
    L = []
    within = total = 0
    for name, grp in _passing_by_workload(rows, lambda r: tc_share(r)[0]):
        for r in grp:
            m, ks = row_model(r, p)
            t_a, T = r["runtime_ms"] * 1e-3, m["T_min"]
            ok = t_a <= TC_SLACK * T
            within, total = within + ok, total + 1
            roofs = sorted({k.roof for k in ks if k.tc})
            L.append(f"| {name} | `{r['strategy']}` | {len(ks)} ({sum(k.tc for k in ks)} on {', '.join(roofs)}) | "
                     f"{_us(T)} | {_us(t_a)} | {t_a / T:.2f} | {'yes' if ok else f'no, {t_a / T:.1f}x'} | "
                     f"{_pct(m['C'])} | {m['floor']} |")
    if not L:
        return []
    return [f"{within} of {total} rows within 25% of their waterline (t_a ≤ {TC_SLACK} T_min).", "",
            "| workload | strategy | kernels (on tensor cores) | T_min µs (waterline) | t_a µs | t_a/T_min | "
            "within 25% | C | floor |", "|---|---|---|---:|---:|---:|---|---:|---|"] + L


def strategy_kind(strategy):
    """A block row's strategy: the label's first word ('fused (block_...) [split at SE ...]' -> 'fused'); None for
    rows that are not one of the blocks' strategies (conv2d variants)."""
    w = str(strategy).split(" ")[0]
    return w if w in ("layer_by_layer", "fused", "depth_first") else None


def fusion_bound_lines(rows, p):
    """Per workload run in layer by layer and in fused or depth-first form: the most the other strategy can gain over
    a layer by layer that reaches its own floor, T_min(layer by layer) / T_min(strategy) (Eq. 12 over each strategy's
    kernels, each at its own peak, the lowest over its passing rows), beside the measured best layer-by-layer time
    over the strategy's best. Empty where no workload has both."""
    L = []
    for name, grp in _passing_by_workload(rows, lambda r: strategy_kind(r["strategy"])):
        g = {}  # strategy -> (lowest T_min, best measured time) over its passing rows
        for r in grp:
            kind, T, t_a = strategy_kind(r["strategy"]), row_model(r, p)[0]["T_min"], r["runtime_ms"] * 1e-3
            old = g.get(kind)
            g[kind] = (min(T, old[0]), min(t_a, old[1])) if old else (T, t_a)
        if "layer_by_layer" not in g:
            continue
        T_l, t_l = g["layer_by_layer"]
        for kind in ("fused", "depth_first"):
            if kind in g:
                T, t = g[kind]
                L.append(f"| {name} | {kind} | {_us(T_l)} | {_us(T)} | {T_l / T:.2f}x | {t_l / t:.2f}x |")
    if not L:
        return []
    return ["| workload | strategy | T_min layer by layer µs | T_min strategy µs | the most it can gain (T_min ratio) | "
            "measured (best layer by layer / best strategy) |", "|---|---|---:|---:|---:|---:|"] + L


def _section(title, text, lines):
    """A summary section: heading, one paragraph, its lines; nothing where there are no lines."""
    return ["", f"## {title}", "", text, ""] + lines if lines else []


def summary(ctx, tctx, units, failed, notes, p, skip_reason, skipped, src, have_torch, rows=()):
    """summary.md text; p (Peaks) is None when the model could not run (skip_reason says why),
    skipped maps each plot that was not drawn to the reason."""
    gpu_ctx = ctx.get("gpu") if isinstance(ctx.get("gpu"), dict) else {}
    gpu = gpu_ctx.get("name") if gpu_ctx else ctx.get("gpu")
    clocks = [f"driver {gpu_ctx['driver_version']}"] if "driver_version" in gpu_ctx else []
    clocks += [f"SM clock {gpu_ctx[k]} MHz at the {k.rsplit('_', 1)[1]}" for k in ("sm_clock_mhz_at_start",
                                                                                    "sm_clock_mhz_at_end") if k in gpu_ctx]
    if "sm_clock_mhz_board_max" in gpu_ctx:
        clocks.append(f"board max {gpu_ctx['sm_clock_mhz_board_max']} MHz")
    elif "sm_clock_mhz_max" in gpu_ctx:
        clocks.append(f"SM clock max {gpu_ctx['sm_clock_mhz_max']} MHz")
    cp, cwhy = ceilings(ctx)  # shown even when no row passed
    L = ["# blockfuse performance report", "",
         f"Source: `{src}`. Model: bench/model.py (A. Lavin, *On the Efficiency of Convolutional Neural Networks*, "
         "Eq. 1-14 and 29); ops = 2 per multiply-accumulate, bytes = the harness's compulsory DRAM bytes "
         "(each tensor once). Latencies in µs.", "", "## Context", "",
         f"- device: {ctx.get('device', 'n/a')}, GPU: {gpu or 'n/a'}, Halide {ctx.get('halide_version', 'n/a')}"
         + "".join(f", {k} {ctx[k]}" for k in ("suite", "timestamp") if k in ctx),
         f"- command: `{ctx.get('command', 'n/a')}`"]
    if clocks:
        L.insert(len(L) - 1, "- GPU state: " + ", ".join(clocks))
    if cp:
        cR, cB, cR16 = cp.R, cp.B, cp.R16
        L.append(f"- ceilings (measured in the same run): copy B = {cB / 1e9:.1f} GB/s, FFMA f32 R = {cR / 1e12:.2f} "
                 "TFLOP/s" + (f", HFMA2 f16 {cR16 / 1e12:.2f} TFLOP/s" if cR16 else ", HFMA2 f16 n/a")
                 + "".join(f", mma.sync {d} {cp.mma[d] / 1e12:.2f} TFLOP/s" if d in cp.mma else f", mma.sync {d} n/a"
                           for d in MMA_DTYPES)
                 + "".join(f", wgmma {d} {cp.wgmma[d] / 1e12:.2f} TFLOP/s" for d in MMA_DTYPES if d in cp.wgmma))
        L.append("- peak R_k per kernel: CUDA-core kernels are bounded by FFMA, kernels marked tensor_cores by the "
                 "mma.sync ceiling of their row's dtype (bf16, else f16), or wgmma's where the kernel runs wgmma (marked by "
                 "the harness; older results: the row's knob `wgmma`) and that ceiling was measured (compute "
                 "capability 9.0), all measured in the same run"
                 + ("" if cp.mma else " (no mma.sync ceiling measured here: a tensor-core kernel falls back to FFMA)")
                 + f". op:byte R/B = {cR / cB:.2f} FLOP/byte for FFMA" + (
                     f" (with HFMA2 as R: {cR16 / cB:.2f}; packed f16 FMA, {cR16 / cR:.2f}x the FFMA rate here)"
                     if cR16 else "")
                 + "".join(f", {cp.mma[d] / cB:.2f} for mma.sync {d}" for d in MMA_DTYPES if d in cp.mma))
    else:
        L.append(f"- ceilings: none ({cwhy})")
    if have_torch:
        L.append(f"- PyTorch baseline: torch {tctx.get('torch_version', 'n/a')}, "
                 f"cuDNN {tctx.get('cudnn_version', 'n/a')}, GPU {tctx.get('gpu', 'n/a')}; "
                 "eager uses cuDNN tensor-core kernels, which neither the FFMA R nor, where they use Hopper's wgmma, the "
                 "mma.sync ceiling bounds")
    L += ["", "## Plots", ""]  # one paragraph per plot
    for plot in PLOTS:
        L += [f"Skipped {plot}.svg/.png: {skipped[plot]}." if plot in skipped else f"![{plot}]({plot}.png)", ""]
    L += ["## Per workload", "",
          "Best = lowest median runtime among the variants whose check passed."
          + (" Each kernel k runs against its own peak R_k (FFMA, or the mma.sync ceiling for a tensor-core kernel): "
             "t_i = Σ n_k/R_k (Eq. 1, 8); T_min = waterline Σ max(n_k/R_k, b_k/B) (Eq. 12, = t_min of Eq. 11 for one "
             "kernel); C = t_i/t_a (Eq. 7, 8); C_max = t_i/T_min (Eq. 13; = N/(T_min·R) for one R); floor = which "
             "bound of Eq. 11 binds. # numbers the bars of waterline.png." if p else "")
          + " executed/n = the flops the kernels execute (a fused tile's hidden layers on the later layers' halo, "
            "the layers before a Squeeze-Excitation split again) over the tensor machine's n, which counts each op "
            "once; 1.00 where nothing is recomputed, n/a where the results do not say (rows without per-kernel "
            "executed_flops)."
          + (" Ratios are torch time / ours (> 1: ours is faster); host µs = call latency as a caller feels it "
             "(host clock around the call + synchronize, GPU idle before it; device time above excludes the launch "
             "path)." if have_torch else ""), ""]
    cols = ["#", "workload", "dtype", "best strategy (passing variants)", "n/b FLOP/B", "executed/n", "t_a µs"]
    cols += ["t_i µs", "T_min µs", "C", "C_max", "T_min/t_a", "floor"] if p else ["GFLOP/s"]
    cols += ["torch eager µs", "torch.compile µs", "eager/ours", "compile/ours"] if have_torch else []
    cols += ["host µs ours / eager", "eager/ours host"] if have_torch else []
    L += ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if i in (1, 2, 3) or c == "floor" else "---:"
                                                          for i, c in enumerate(cols)) + "|"] if units else \
        ["No workload has a passing row."]
    for u in units:
        row = [str(u.index), u.label, str(u.best.get("dtype", "n/a")), f"`{u.best['strategy']}` ({u.n_rows})",
               f"{model.operational_intensity(u.n, u.b):.1f}",
               f"{u.executed / u.n:.2f}" if u.executed is not None and u.n > 0 else "n/a", _us(u.t_a)]
        if p:
            row += [_us(u.m["t_i"]), _us(u.m["T_min"]), _pct(u.m["C"]), _pct(u.m["C_max"]),
                    _pct(u.m["T_min"] / u.t_a), u.m["floor"]]
        else:
            row.append(f"{u.n / u.t_a / 1e9:.1f}")
        if have_torch:
            e, cm = (_num((u.torch or {}).get(k)) for k in ("eager_ms", "compile_ms"))
            row += [_us(e and e * 1e-3), _us(cm and cm * 1e-3),
                    f"{e * 1e-3 / u.t_a:.2f}" if e else "n/a", f"{cm * 1e-3 / u.t_a:.2f}" if cm else "n/a"]
            # Call latency as a caller feels it (host clock around call + synchronize), both sides.
            oh, eh = _num(u.best.get("host_ms")), _num((u.torch or {}).get("eager_host_ms"))
            row += [f"{_us(oh and oh * 1e-3)} / {_us(eh and eh * 1e-3)}", f"{eh / oh:.2f}" if oh and eh else "n/a"]
        L.append("| " + " | ".join(row) + " |")
    multi = [u for u in units if len(u.kernels) > 1]
    if multi and p:
        L += ["", "### Kernels of multi-kernel rows", "",
              "| # | kernel | n FLOP | b bytes | n/b | t_min µs (Eq. 11) | bound | roof |",
              "|---:|---|---:|---:|---:|---:|---|---|"]
        for u in multi:
            for j, k in enumerate(u.kernels):
                L.append(f"| {u.index}.{j + 1} | {k.name} | {k.n:.4g} | {k.b:.4g} | "
                         f"{model.operational_intensity(k.n, k.b):.1f} | {_us(model.min_latency(k.n, k.b, k.R, p.B))} | "
                         f"{'memory' if model.is_memory_bound(k.n, k.b, k.R, p.B) else 'compute'} | {k.roof} |")
    if p and units:
        L += ["", "## Every strategy", "",
              "All passing rows, fastest first within a workload: the model's minimum for that strategy's own "
              "kernels (Eq. 12 over its kernels, each at its own peak) beside its measured time, and C = t_i/t_a "
              "(Eq. 8).", ""] + strategy_lines(rows, p)
    L += _section("Tensor-core rows: the waterline's prediction beside the measurement",
                  "Every passing row with a kernel marked tensor_cores, fastest first within a workload: T_min = the "
                  "waterline of its kernels (Eq. 12), each at its own peak (mma.sync of the row's dtype for tensor-core "
                  "kernels, FFMA for the others), beside the measured t_a; within 25% = t_a ≤ 1.25 T_min (the issue's "
                  "goal for a fused kernel); C = t_i/t_a at the same peaks (Eq. 7-8). A tensor-core kernel that also "
                  "does CUDA-core work (e.g. the depthwise layer of a fused MBConv or ConvNeXt, ConvFirst's grouped layer) "
                  "is counted at the mma.sync rate for all its ops, so its T_min is a lower bound and its C an upper "
                  "one.", tensor_core_lines(rows, p) if p else [])
    L += _section("What fusion can gain at most (the waterline of each strategy)",
                  "Fusing removes DRAM traffic, not arithmetic: against a layer by layer that reaches its own waterline "
                  "T_min (Eq. 12 on the ceilings above), a fused or depth-first strategy gains at most the ratio of the two "
                  "T_min (recomputed halos lower it further). Measured: the best passing layer-by-layer time over the "
                  "strategy's best (> 1: the strategy is faster).", fusion_bound_lines(rows, p) if p else [])
    mem = memory_lines(rows)
    L += ["", "## Memory: workspace and peak per strategy", ""]
    L += (["Workspace = the bytes the call itself allocated (device buffers on CUDA, heap on the CPU), the most live "
           "at once, measured by counting Halide's allocations during one call (runtime/call_memory.h): a layer by "
           "layer block's hidden activations, split K's partial sums; a fused block keeps its hidden activations on "
           "chip. Peak = the buffers the call's kernels were passed (inputs, weights, outputs, each once) + the workspace. ![workspace](workspace.png)", ""] + mem
          if mem else ["None measured (results without workspace_bytes: an OpenCL run, or results older than the "
                       "field)."])
    L += ["", "## Sequence: waterline (Eq. 12, 13) vs mediant roofline (Eq. 29)", ""]
    L += sequence_lines(units, p) if p else [f"Skipped: {skip_reason}."]
    L += ["", "## Failed rows (check_ok false, left out of the plots)", ""]
    L += [f"- {r['workload']} / `{r['strategy']}`: {r.get('check', 'check failed')}" for r in failed] or \
         [f"None: all {sum(u.n_rows for u in units)} rows passed their check."]
    if notes:
        L += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------- main

def main(argv=None):
    p = argparse.ArgumentParser(description="Waterline/roofline/efficiency-gap report of a blockfuse results folder.")
    p.add_argument("dir", metavar="DIR", help="results folder holding results.json")
    p.add_argument("--torch", metavar="FILE", help="PyTorch baseline JSON (bench/pytorch_baseline.py)")
    p.add_argument("--out", metavar="OUTDIR", help="output folder (default DIR/report)")
    args = p.parse_args(argv)
    try:
        ctx, rows = load_results(args.dir)
        tctx, tindex = load_torch(args.torch) if args.torch else ({}, None)
        outdir = args.out or os.path.join(args.dir, "report")
        try:
            os.makedirs(outdir, exist_ok=True)
        except OSError as e:
            raise InputError(f"cannot create output folder '{outdir}': {e.strerror}") from None
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    peaks, why = ceilings(ctx)
    units, failed, notes = analyse(rows, peaks, tindex)
    skipped = {}  # plot name -> why it was not drawn
    if why:
        skipped = dict.fromkeys(PLOTS, f"it needs the peak rate R and the bandwidth B, and {why}")
    elif not units:
        why = "no row passed its check"
        skipped = dict.fromkeys(PLOTS, why)
    else:
        plot_waterline(units, peaks, outdir)
        if not plot_roofline(rows, units, peaks, outdir):
            skipped["roofline"] = "no passing row has both flops and bytes > 0 (log-log axes)"
        plot_efficiency_gap(units, peaks, outdir, tindex is not None)
    if not plot_workspace(rows, outdir):
        for ext in ("svg", "png"):  # no stale plot beside a summary that says none was measured
            if os.path.exists(os.path.join(outdir, f"workspace.{ext}")):
                os.remove(os.path.join(outdir, f"workspace.{ext}"))
    for name in skipped:  # no stale plots from an earlier run next to a summary that says skipped
        for ext in ("svg", "png"):
            if os.path.exists(os.path.join(outdir, f"{name}.{ext}")):
                os.remove(os.path.join(outdir, f"{name}.{ext}"))
    md = summary(ctx, tctx, units, failed, notes, None if why else peaks, why, skipped,
                 os.path.join(args.dir, "results.json"), tindex is not None, rows)
    with open(os.path.join(outdir, "summary.md"), "w", encoding="utf-8") as fh:
        fh.write(md)
    print(f"wrote {outdir}/summary.md" + (f" (plots skipped: {why})" if why else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
