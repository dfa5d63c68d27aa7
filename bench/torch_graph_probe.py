#!/usr/bin/env python3
"""Which replaced modules a CUDA graph can capture, and whether the graph computes what the module does (GPU
host): each module of a model rebuilt from a measured check's choices (bench/torch_validate.py --phase check
--choose measure), captured alone on the input it sees in the eager model, as torch_validate's --graphs captures
whole models (warm-up on a side stream, capture on the graph's own), then replayed on another input (the eager
model's input to the module, scaled by a fresh random factor per channel) against the module called on it.

  python3 bench/torch_graph_probe.py --choices CHECK.json [--models efficientnet_b0:8,mobilenet_v2:1] [--out DIR]

prints one line per module: model, batch, path, strategy, key, then `ok err=E` (E: max|graph - module| over
max|module|; pass at 1e-3) or `FAIL` and the capture's error; --out also writes them to DIR/graph_probe.txt.
Exit status 1 if any module failed."""
import argparse
import copy
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_validate as tv  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--choices", required=True)
    ap.add_argument("--models", default="efficientnet_b0:8,mobilenet_v2:1", help="MODEL:BATCH,...")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--out", help="a folder for graph_probe.txt")
    a = ap.parse_args()
    import torch
    import blockfuse.torch as bft
    choices = json.load(open(a.choices))["models"]
    dev = torch.device("cuda")
    lines = []
    gen = torch.Generator(device=dev).manual_seed(a.seed + 5)
    for item in a.models.split(","):
        name, n = item.split(":")
        eager = tv.to_dev(copy.deepcopy(tv.make_model(name, a.seed)), dev, torch.float16)
        m = copy.deepcopy(eager)
        x = tv.inputs(int(n), 224, dev, torch.float16, a.seed + 2)
        bft.optimize(m, x, strategy=choices[name]["choices"][n], verbose=False)
        rows = [r for r in m.blockfuse_table if r["action"].startswith("blockfuse")]
        caught = tv.capture_inputs(eager, [r["path"] for r in rows], x)
        for r in rows:
            mod, inp = m.get_submodule(r["path"]), caught[r["path"]]
            try:
                with torch.inference_mode():
                    call = tv.graphed(mod, inp)
                    other = inp * torch.empty((1, inp.shape[1], 1, 1), device=dev, dtype=inp.dtype).uniform_(
                        0.5, 1.5, generator=gen)
                    other = other.contiguous(memory_format=torch.channels_last)
                    got = call(other).clone()
                    torch.cuda.synchronize()
                    err = tv.rel(got, mod(other).double())
                res = f"ok err={err:.1e}" if err <= 1e-3 else f"FAIL wrong result err={err:.1e}"
            except Exception as e:  # the capture's failure is the result
                res = f"FAIL {type(e).__name__}: {str(e).splitlines()[0][:200]}"
                torch.cuda.synchronize()
            lines.append(" ".join([name, n, r["path"], r["strategy"], r["key"][:60], res]))
            print(lines[-1], flush=True)
    if a.out:
        with open(os.path.join(a.out, "graph_probe.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if any(" FAIL " in ln for ln in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
