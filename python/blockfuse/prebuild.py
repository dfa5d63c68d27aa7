"""Pre-build the kernels a model needs, on the machine with Halide (no torch needed):

    python -m blockfuse.prebuild --model mobilenet_v2 --batch 1,8,128 [--dtype f16] [--out FILE]
                                 [--fill [--device cuda] [--gpu "NVIDIA H200:sm_90"]]

prints (or writes to FILE, as a suite file of `<name> <key>` lines) every workload key the model's replaced
modules take at those batch sizes (blockfuse.models: the architectures as data, checked against the real
torchvision modules by python/tests/test_torch.py); --fill then runs `./run cache fill` on them, every
strategy of each (what optimize() chooses from), into $BLOCKFUSE_KERNEL_CACHE."""
import argparse
import os
import subprocess
import sys
import tempfile

from blockfuse import models

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m blockfuse.prebuild", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", action="append", required=True, help=", ".join(models.MODELS) + " (repeatable)")
    ap.add_argument("--batch", default="1,8,128", help="comma-separated batch sizes")
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16", "f32"])
    ap.add_argument("--size", type=int, default=224, help="image height and width")
    ap.add_argument("--out", help="write a suite file here instead of printing the keys")
    ap.add_argument("--fill", action="store_true", help="generate the kernels (./run cache fill)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--gpu", default="NVIDIA H200:sm_90", help="the GPU the cache is for (record target)")
    a = ap.parse_args(argv)
    try:
        batches = [int(b) for b in a.batch.split(",")]
        if any(b <= 0 for b in batches):
            raise ValueError
    except ValueError:
        ap.error(f"--batch {a.batch!r}: give positive integers, e.g. 1,8,128")
    keys = []
    for m in a.model:
        try:
            keys += [k for k in models.keys(m, batches, a.dtype, a.size) if k not in keys]
        except ValueError as e:
            ap.error(str(e))
    lines = [f"{k.split(':')[0]}-{i} {k}" for i, k in enumerate(keys)]
    if not a.fill and not a.out:
        print("\n".join(keys))
        return 0
    path = a.out or tempfile.mkstemp(prefix="blockfuse-prebuild-", suffix=".txt")[1]
    with open(path, "w") as f:
        f.write(f"# {', '.join(a.model)} at batch {a.batch}, {a.dtype}, {a.size}x{a.size}: python -m blockfuse.prebuild\n")
        f.write("\n".join(lines) + "\n")
    print(f"{len(keys)} workload keys -> {path}", file=sys.stderr)
    if a.fill:
        cmd = [os.path.join(REPO, "run"), "cache", "fill", "--suite", path, "--device", a.device, "--variants", "default",
               "--quiet"]
        if a.device == "cuda":
            cmd += ["--gpu", a.gpu]
        print(" ".join(cmd), file=sys.stderr)
        return subprocess.call(cmd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
