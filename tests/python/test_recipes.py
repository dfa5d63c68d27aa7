#!/usr/bin/env python3
"""Every GPU-host recipe (bench/recipes/*.txt) checked where Halide is, so a broken one fails here and not on the GPU
host: each step is one bench/gpu_host.sh runs, every workload key is valid (`blockfuse check`), every picked
SUITE:NAME is in its suite file, suite files, scripts and carried test binaries exist, and a merge or report names
steps of the same recipe. Arguments holding a $VARIABLE are the caller's, files under .carry/ are made with the
carry (tools/prepare-carry.sh and the recipe's own build steps): neither is checked here.
    usage: test_recipes.py BLOCKFUSE_CLI"""
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import pytorch_baseline as pb  # noqa: E402  (load_suite: the suite files' one parser here)


def step_kinds():
    """The step kinds of gpu_host.sh's `case "$kind"` (`name)` or `a | b)` lines)."""
    text = (ROOT / "bench/gpu_host.sh").read_text()
    body = text[text.index('case "$kind" in'):]
    body = body[:body.index("esac")]
    kinds = set()
    for m in re.finditer(r"^\s+([a-z_]+(?:\s*\|\s*[a-z_]+)*)\)", body, re.M):
        kinds.update(k.strip() for k in m.group(1).split("|"))
    return kinds


def carried_binaries():
    """The binaries tools/prepare-carry.sh packs (its `for f in ...; do` list), by file name."""
    text = (ROOT / "tools/prepare-carry.sh").read_text()
    m = re.search(r"for f in (.*?); do", text, re.S)
    return {pathlib.Path(w).name for w in m.group(1).replace("\\", " ").split()}


def suite_names(suite):
    path = ROOT / "workloads" / f"{suite}.txt"
    return {name for name, _ in pb.load_suite(path)} if path.is_file() else None


def option_values(args, option):
    """The values after each `option` up to the next `--...`."""
    out = []
    for i, a in enumerate(args):
        if a == option:
            for v in args[i + 1:]:
                if v.startswith("--"):
                    break
                out.append(v)
    return out


def check_recipe(path, kinds, binaries):
    """(errors, workload keys to validate) of one recipe."""
    errors, keys, names = [], [], set()

    def err(n, msg):
        errors.append(f"{path.relative_to(ROOT)}:{n}: {msg}")

    def suite_exists(n, suite):
        if "$" in suite or suite.startswith(".carry/"):  # the caller's, or made with the carry
            return
        if not ((ROOT / suite).is_file() or (ROOT / "workloads" / f"{suite}.txt").is_file()):
            err(n, f"suite '{suite}' is neither a file nor workloads/{suite}.txt")

    def workload(n, w):  # SUITE:NAME or a key
        if "$" in w:
            return
        if "=" in w:
            keys.append((n, w))
            return
        suite, _, name = w.partition(":")
        have = suite_names(suite)
        if have is None:
            err(n, f"'{w}': no workloads/{suite}.txt")
        elif name not in have:
            err(n, f"'{w}': no workload '{name}' in workloads/{suite}.txt")

    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            words = shlex.split(line)
        except ValueError as e:
            err(n, f"cannot split the line: {e}")
            continue
        kind, args = words[0], words[1:]
        if kind not in kinds:
            err(n, f"unknown step '{kind}' (bench/gpu_host.sh has {', '.join(sorted(kinds))})")
            continue
        if not args:
            err(n, f"step '{kind}' has no NAME")
            continue
        name, rest = args[0], args[1:]
        if kind in ("bench", "tune", "profile", "python"):
            for w in option_values(rest, "--workload"):
                workload(n, w)
            for s in option_values(rest, "--suite"):
                suite_exists(n, s)
        if kind == "profile":
            if len(rest) < 2:
                err(n, "profile needs SUITE:WORKLOAD|KEY and VARIANT")
            else:
                workload(n, rest[0])
        elif kind == "pick":
            if not rest:
                err(n, "pick names no workloads")
            for w in rest:
                workload(n, w)
        elif kind == "torch":
            if not rest:
                err(n, "torch needs a SUITE")
            else:
                suite_exists(n, rest[0])
        elif kind == "python":
            if not rest or not (ROOT / "bench" / rest[0]).is_file():
                err(n, f"python: no script bench/{rest[0] if rest else ''}")
        elif kind == "py":
            if not rest or ("$" not in rest[0] and not (ROOT / rest[0]).is_file()):
                err(n, f"py: no script {rest[0] if rest else ''}")
        elif kind in ("test", "sanitize"):
            words_ = rest[1:] if kind == "sanitize" else rest
            binary = next((w for w in words_ if not re.match(r"^[A-Z_][A-Z0-9_]*=", w)), None)
            if binary is None or binary not in binaries:
                err(n, f"{kind}: '{binary}' is not a binary tools/prepare-carry.sh carries")
        elif kind in ("merge", "report"):
            for ref in rest[:2] if kind == "merge" else rest:
                if "$" not in ref and ref not in names:
                    err(n, f"{kind} names '{ref}', no earlier step of this recipe")
        elif kind == "dram":
            if rest:
                suite_exists(n, rest[0])
        names.add(name)
    return errors, keys


def main():
    cli = sys.argv[1]
    kinds, binaries = step_kinds(), carried_binaries()
    recipes = sorted((ROOT / "bench/recipes").glob("*.txt"))
    errors, keys = [], []
    for path in recipes:
        e, k = check_recipe(path, kinds, binaries)
        errors += e
        keys += [(path, n, key) for n, key in k]
    for path, n, key in keys:
        r = subprocess.run([cli, "check", key], capture_output=True, text=True)
        if r.returncode != 0:
            errors.append(f"{path.relative_to(ROOT)}:{n}: '{key}': {(r.stderr or r.stdout).strip()}")
    for e in errors:
        print(e)
    print(f"{len(recipes)} recipes, {len(keys)} workload keys: {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
