#!/usr/bin/env python3
"""Which replaced modules a CUDA graph can capture (GPU host): each module of a model rebuilt from a measured
check's choices (bench/torch_validate.py --phase check --choose measure), captured alone on the input it sees in
the eager model, as torch_validate's --graphs captures whole models.

  python3 bench/torch_graph_probe.py --choices CHECK.json [--models efficientnet_b0:8,mobilenet_v2:1]

prints one line per module: model, batch, path, strategy, key, ok or the capture's error."""
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
    a = ap.parse_args()
    import torch
    import blockfuse.torch as bft
    choices = json.load(open(a.choices))["models"]
    dev = torch.device("cuda")
    for item in a.models.split(","):
        name, n = item.split(":")
        eager = tv.to_dev(copy.deepcopy(tv.make_model(name, a.seed)), dev, torch.float16)
        m = copy.deepcopy(eager)
        x = tv.inputs(int(n), 224, dev, torch.float16, a.seed + 2)
        bft.optimize(m, x, strategy=choices[name]["choices"][n], verbose=False)
        rows = [r for r in m.blockfuse_table if r["action"].startswith("blockfuse")]
        caught = tv.capture_inputs(eager, [r["path"] for r in rows], x)
        for r in rows:
            try:
                with torch.inference_mode():
                    tv.graphed(m.get_submodule(r["path"]), caught[r["path"]])
                res = "ok"
            except Exception as e:  # the capture's failure is the result
                res = f"FAIL {type(e).__name__}: {str(e)[:200]}"
                torch.cuda.synchronize()
            print(name, n, r["path"], r["strategy"], r["key"][:60], res, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
