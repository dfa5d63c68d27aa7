#!/usr/bin/env bash
# f16 outputs of the pooling kernels on CUDA keep their f32 -> f16 conversion (no GPU needed: the generator's PTX).
# Halide 21's CUDA backend stores a two-lane f16 vector as st.global.v2.b16 of the two f32 registers, the
# conversion dropped (generators/storage.h: gpu_vector_store_ok); the schedules store such tiles element by
# element. Every 16-bit global store of these f16 kernels must take 16-bit registers (%rs; a bf16 kernel may store
# the low half of a 32-bit register, which holds its value); the tiles that may be vectors still are
# (st.global.v2.b32: four f16, or eight as two 64-bit stores).
#   usage: cuda_f16_stores.sh POOL_GENERATOR
set -u
gen="$1"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
target=x86-64-linux-cuda-cuda_capability_86-strict_float-no_runtime
max="op=max rank=2 batch=2 channels=8 in_x=64 in_y=16 out_x=32 out_y=8 kernel_x=3 kernel_y=3 stride_x=2 stride_y=2"
max="$max pad_x=1 pad_y=1 stage=1 vec=4 threads=32 tile_y=1 storage=float16 store_vec=1"
mean="op=mean seq=64 heads=4 dim=16 chunk=8 batch=1 storage=float16 out_storage=float16 threads=32 unroll=4"
fail=0
# name | params | a store form that must be there ("" for none)
while IFS='|' read -r name params want; do
    # shellcheck disable=SC2086  # params: one word each
    if ! "$gen" -g pool -o "$out" -e assembly -n "$name" target=$target $params > "$out/$name.log" 2>&1; then
        echo "FAIL: $name: the generator failed: $(tail -3 "$out/$name.log")"; fail=1; continue
    fi
    ptx="$out/$name.s"
    bad=$(grep -oE 'st\.global(\.v[24])?\.b16[^;]*%r[0-9]+' "$ptx" | head -3)
    if [ -n "$bad" ]; then echo "FAIL: $name: a 16-bit store of 32-bit registers: $bad"; fail=1; continue; fi
    if [ -n "$want" ] && ! grep -qE "$want" "$ptx"; then
        echo "FAIL: $name: no '$want' (the tile is no longer stored as a vector): $(grep -oE 'st\.global[^;]*' "$ptx" | sort -u | head -4)"
        fail=1; continue
    fi
    echo "ok: $name: $(grep -oE 'st\.global[.a-z0-9]*' "$ptx" | sort | uniq -c | tr -s ' \n' ' ')"
done <<EOT
max_tile2|$max tile_x=2 indices=0|
max_tile2_indices|$max tile_x=2 indices=1|
max_tile4|$max tile_x=4 indices=0|st\.global\.v2\.b32
max_tile8_indices|$max tile_x=8 indices=1|st\.global\.v2\.b32
mean_tile2|$mean tile_x=2|
mean_tile8|$mean tile_x=8|st\.global\.v2\.b32
EOT
exit $fail
