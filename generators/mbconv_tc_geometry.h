// The thread block of MBConv fused on tensor cores (generators/mbconv_tc_algorithm.h), as numbers: Halide-free, so
// the algorithm, the knob checks (schedules/block_knobs.h) and the launch checks (runtime/block.cpp) derive the same
// tile, halo, rows, registers and shared bytes from one place.
//
// A thread block owns tile_y x tile_x output pixels of one image and every output channel. Per hidden chunk it
// runs the expand's GEMM over the tile's input halo ((tile - 1) stride + k on each side, one GEMM row a halo
// pixel), the depthwise layer on CUDA cores over the tile, and the project's GEMM over the tile's pixels (one row
// a pixel). The two GEMMs' rows are spread over the warps independently, whole m-tiles of 16 rows each.
#pragma once
#include <algorithm>
#include <string>

namespace blockfuse {

struct MbconvTcGeometry {
    static constexpr int kPad = 8;  // elements past each shared row (ldmatrix's 8 row addresses in distinct banks)
    int c = 0, e = 0, k = 0, ks = 0, stride = 1;  // input, hidden, output channels; the depthwise window, stride
    int warps = 4, tile_x = 8, tile_y = 8, chunk = 16;

    int halo_x() const { return (tile_x - 1) * stride + ks; }
    int halo_y() const { return (tile_y - 1) * stride + ks; }
    int halo_pixels() const { return halo_x() * halo_y(); }
    int tile_pixels() const { return tile_x * tile_y; }
    static int ceil_div(int a, int b) { return (a + b - 1) / b; }
    // m-tiles per warp of the expand (over the halo) and of the project (over the tile)
    int expand_mt() const { return ceil_div(ceil_div(halo_pixels(), 16), warps); }
    int project_mt() const { return ceil_div(ceil_div(tile_pixels(), 16), warps); }
    int expand_rows() const { return warps * expand_mt() * 16; }
    int project_rows() const { return warps * project_mt() * 16; }
    int k_padded() const { return ceil_div(c, 16) * 16; }        // the expand's K, whole K steps (zeros past c)
    int n_padded() const { return ceil_div(this->k, 16) * 16; }  // the project's N, whole n-tile pairs
    // f32 accumulator registers per thread: the output's and one chunk's hidden
    int accumulators() const { return project_mt() * (n_padded() / 8) * 4 + expand_mt() * (chunk / 8) * 4; }
    // The geometry a kernel of an out_h x out_w output builds: the tile cut to the output. A larger tile adds only
    // rows outside the image, and where one tile spans the output Halide proves some warps' rows empty and drops
    // their warp index from the accumulators' stores, which the mma lowering refuses.
    MbconvTcGeometry within(int out_h, int out_w) const {
        MbconvTcGeometry g = *this;
        g.tile_x = std::min(tile_x, out_w), g.tile_y = std::min(tile_y, out_h);
        return g;
    }
    // Shared memory (2-byte elements): the halo's input rows, the chunk's rows of U, the expand's output over the
    // halo, the depthwise output as the project's A rows, the chunk's columns of V; each row padded.
    long long shared_bytes() const {
        const long long kp = k_padded() + kPad, cp = chunk + kPad;
        return 2LL * (1LL * expand_rows() * kp + 1LL * chunk * kp + 1LL * halo_pixels() * cp +
                      1LL * project_rows() * cp + 1LL * n_padded() * cp);
    }
};

}  // namespace blockfuse
