#!/usr/bin/env bash
# ./run generate writes what a user needs to call a kernel from their own build: the static library,
# its header, the Halide runtime, the STMT, the assembly and a JSON description. This builds a small
# program against them with the system compiler, runs the kernel (a 1x1 convolution with bias) and
# checks every output against a reference computed in the program.
#   generate_kernel.sh <run script> <Halide include dir> <python>
set -euo pipefail
run="$1" include="$2" python="$3"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
key="conv2d:n=2,c=3,h=5,w=7,k=4,r=1,s=1,bias=1,dtype=f32"
"$run" generate "$key" --device cpu --out "$out" >"$out/generate.log"
dir=$(find "$out" -mindepth 1 -maxdepth 1 -type d | head -1)
name=$(basename "$dir")
for f in "$name.a" "$name.h" "$name.stmt" "$name.s" "$name.json" halide_runtime.a; do
    [ -s "$dir/$f" ] || { echo "FAIL: $f missing or empty in $dir"; ls -la "$dir"; exit 1; }
done
fn=$("$python" -c "
import json, sys
d = json.load(open('$dir/$name.json'))
assert d['status'] == 'ok' and len(d['arguments']) == 12, d
assert d['knobs'] and d['target'].startswith('x86-64-linux'), d
print(d['function'])")
cat >"$out/main.cpp" <<CPP
#include "$name.h"
#include <HalideBuffer.h>
#include <cmath>
#include <cstdio>
int main() {
    Halide::Runtime::Buffer<float> in(3, 7, 5, 2), w(4, 3, 1, 1), b(4), o(4, 7, 5, 2);
    in.for_each_element([&](int c, int x, int y, int n) { in(c, x, y, n) = 0.1f * c - 0.2f * x + 0.3f * y - n; });
    w.for_each_element([&](int k, int c, int, int) { w(k, c, 0, 0) = 0.5f * k - 0.25f * c; });
    b.for_each_element([&](int k) { b(k) = 0.125f * k; });
    o.fill(NAN);
    // stride x/y, dilation x/y, pad left/top, groups, activation (0: none)
    if (int rc = $fn(in, w, b, 1, 1, 1, 1, 0, 0, 1, 0, o)) return printf("kernel failed: %d\n", rc), 1;
    int bad = 0;
    o.for_each_element([&](int k, int x, int y, int n) {
        double ref = b(k);
        for (int c = 0; c < 3; ++c) ref += double(in(c, x, y, n)) * w(k, c, 0, 0);
        if (!(std::fabs(o(k, x, y, n) - ref) <= 1e-5 * (1 + std::fabs(ref)))) ++bad;
    });
    printf("%d of %d outputs wrong\n", bad, int(o.number_of_elements()));
    return bad != 0;
}
CPP
g++ -std=c++17 -O1 -I "$dir" -I "$include" "$out/main.cpp" "$dir/$name.a" "$dir/halide_runtime.a" -o "$out/main" -ldl -lpthread
"$out/main"
echo "ok: $name built from the generated library and header, every output right"
# A pooling kernel's target carries strict_float, which Halide refuses for the runtime: generate must
# still write the runtime beside it.
pool="$out/pool"
"$run" generate "maxpool1d:n=1,c=2,l=9,kernel=3" --device cpu --out "$pool" >"$out/generate-pool.log" 2>&1 \
    || { cat "$out/generate-pool.log"; echo "FAIL: generate of a pooling kernel exited non-zero"; exit 1; }
[ -s "$(find "$pool" -name halide_runtime.a | head -1)" ] || { echo "FAIL: no runtime beside the pooling kernel"; exit 1; }
echo "ok: a pooling kernel (strict_float) generated with its runtime"
