#!/usr/bin/env python3
"""Where a kernel's time goes, phase by phase: Nsight Compute's per-instruction SASS table split at barriers.

Input: the CSV `ncu -i REPORT --page source --print-source sass --csv` writes (`SOURCE=1 bench/gpu_host.sh profile`:
sass_NAME.csv). A fused block kernel runs in phases separated by BAR.SYNC (stage the chunk's weights, produce the
hidden chunk, accumulate it); each phase's share of the warp-stall samples is its share of the kernel's time.
Per phase: samples, executed warp instructions, FFMA among them, shared-memory wavefronts (and the excess over
ideal: bank conflicts) and the three most frequent stall reasons.

    python3 tools/stall_phases.py SASS.csv[.gz] [--min-share 0.02]
"""
import argparse
import collections
import csv
import gzip
import sys


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return 0.0


def fail(msg):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(2)


def opcode(source):
    """'@!P0 FFMA R1, ...' -> 'FFMA' (the mnemonic without its modifiers)."""
    toks = source.split()
    if toks and toks[0].startswith("@"):
        toks = toks[1:]
    return toks[0].split(".")[0] if toks else ""


def read_rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        fail(f"{path}: cannot read ({e})")
    start = next((i for i, l in enumerate(lines) if l.startswith('"Address"')), None)
    if start is None:
        fail(f"{path}: no 'Address' header row (not an ncu --page source --csv table)")
    return list(csv.DictReader(lines[start:]))


def phases(rows):
    """Consecutive instructions, cut after every BAR.SYNC (the barrier belongs to the phase it ends)."""
    cur = []
    for r in rows:
        cur.append(r)
        if "BAR.SYNC" in r.get("Source", ""):
            yield cur
            cur = []
    if cur:
        yield cur


def summarize(rows):
    stall_cols = [c for c in rows[0] if c.startswith("stall_") and "Not Issued" not in c]
    total = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows) or 1.0
    out = []
    for p in phases(rows):
        samples = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in p)
        executed = sum(num(r["Instructions Executed"]) for r in p)
        ffma = sum(num(r["Instructions Executed"]) for r in p if opcode(r["Source"]) == "FFMA")
        wav = sum(num(r.get("L1 Wavefronts Shared")) for r in p)
        ideal = sum(num(r.get("L1 Wavefronts Shared Ideal")) for r in p)
        stalls = collections.Counter({c: sum(num(r[c]) for r in p) for c in stall_cols})
        out.append(dict(first=p[0]["Address"], last=p[-1]["Address"], n=len(p), share=samples / total,
                        executed=executed, ffma=ffma, wavefronts=wav, ideal=ideal, stalls=stalls.most_common(3)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--min-share", type=float, default=0.02, help="hide phases under this share of the samples")
    a = ap.parse_args(argv)
    rows = read_rows(a.csv)
    if not rows:
        fail(f"{a.csv}: no instructions")
    res = summarize(rows)
    all_exec = sum(p["executed"] for p in res) or 1.0
    all_ffma = sum(p["ffma"] for p in res)
    print(f"{len(rows)} instructions, {len(res)} phases (cut at BAR.SYNC); executed warp instructions "
          f"{all_exec:.4g}, FFMA {all_ffma / all_exec:.0%} of them")
    print("| phase (SASS addresses) | instr | time share | executed | FFMA % | smem wavefronts / ideal | top stalls (samples) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for p in res:
        if p["share"] < a.min_share:
            continue
        ratio = f"{p['wavefronts']:.3g} / {p['ideal']:.3g}" if p["wavefronts"] else "-"
        st = ", ".join(f"{k.replace('stall_', '')} {v:.0f}" for k, v in p["stalls"])
        fp = p["ffma"] / p["executed"] if p["executed"] else 0.0
        print(f"| {p['first'][-5:]}-{p['last'][-5:]} | {p['n']} | {p['share']:.1%} | {p['executed']:.3g} | {fp:.0%} "
              f"| {ratio} | {st} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
