// Thin Generator over the pooling algorithms (generators/pool_algorithm.h): windowed and adaptive average
// and max pooling (max with PyTorch's int64 argmax indices as a second output of the same kernel), and
// FLA's mean pooling. Every shape is a GeneratorParam (one kernel per workload: static shapes turn the
// window bounds and the flat thread numbering into constants); the knobs pick the schedule.
#include "Halide.h"
#include "generators/pool_algorithm.h"
#include "schedules/pool_schedule.h"

namespace {
using namespace Halide;
using blockfuse::PoolOp;

enum class PoolKind { avg, max, mean };

class PoolGenerator : public Generator<PoolGenerator> {
public:
    GeneratorParam<PoolKind> op{
        "op", PoolKind::max, {{"avg", PoolKind::avg}, {"max", PoolKind::max}, {"mean", PoolKind::mean}}};
    GeneratorParam<int> indices{"indices", 0};    // max: the argmax as a second output
    GeneratorParam<int> adaptive{"adaptive", 0};  // windows from the input and output sizes
    GeneratorParam<int> rank{"rank", 2};          // spatial axes: 1 (NCL), 2 (NCHW), 3 (NCDHW)
    GeneratorParam<int> batch{"batch", 1}, channels{"channels", 1};
    // Per spatial axis x (innermost), y, z: input and output extents, kernel, stride, padding, dilation.
    GeneratorParam<int> in_x{"in_x", 1}, in_y{"in_y", 1}, in_z{"in_z", 1};
    GeneratorParam<int> out_x{"out_x", 1}, out_y{"out_y", 1}, out_z{"out_z", 1};
    GeneratorParam<int> kernel_x{"kernel_x", 1}, kernel_y{"kernel_y", 1}, kernel_z{"kernel_z", 1};
    GeneratorParam<int> stride_x{"stride_x", 1}, stride_y{"stride_y", 1}, stride_z{"stride_z", 1};
    GeneratorParam<int> pad_x{"pad_x", 0}, pad_y{"pad_y", 0}, pad_z{"pad_z", 0};
    GeneratorParam<int> dil_x{"dil_x", 1}, dil_y{"dil_y", 1}, dil_z{"dil_z", 1};
    GeneratorParam<int> count_include_pad{"count_include_pad", 1};
    GeneratorParam<int> divisor{"divisor", 0};  // avg: divisor_override, 0 = none
    // Mean pooling: x (b, s, h, d) of `seq` tokens, chunks of `chunk`; ragged: `sequences` sequences
    // (offsets) cut into `chunks` chunks (chunk indices).
    GeneratorParam<int> seq{"seq", 1}, heads{"heads", 1}, dim{"dim", 1}, chunk{"chunk", 1};
    GeneratorParam<int> ragged{"ragged", 0}, sequences{"sequences", 1}, chunks{"chunks", 1};
    GeneratorParam<Type> storage{"storage", Float(32)};
    GeneratorParam<Type> out_storage{"out_storage", Float(32)};  // mean pooling's output type
    BLOCKFUSE_POOL_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)

    GeneratorInput<Buffer<>> *input = nullptr, *offsets = nullptr, *chunk_index = nullptr;
    GeneratorOutput<Func> *output = nullptr;

    int dims() const { return op == PoolKind::mean ? 4 : int(rank) + 2; }

    void configure() {
        if (rank < 1 || rank > 3)
            throw CompileError("pool: rank = " + std::to_string(int(rank)) + " must be 1, 2 or 3");
        input = add_input<Buffer<>>("input", Type(storage), dims());
        if (op == PoolKind::mean && ragged) {
            offsets = add_input<Buffer<>>("offsets", Int(32), 1);
            chunk_index = add_input<Buffer<>>("chunk_index", Int(32), 2);  // (2, chunks)
        }
        if (op == PoolKind::max && indices)
            output = add_output<Func>("output", std::vector<Type>{Type(storage), Int(64)}, dims());
        else output = add_output<Func>("output", op == PoolKind::mean ? Type(out_storage) : Type(storage), dims());
    }

    // Dense, static extents innermost first; every buffer starts at 0.
    // bounds = false: strides only (a Tuple's later output buffers share the first one's bounds).
    template <class Buf>
    static void dense(Buf &&b, const std::vector<int> &extents, bool bounds = true) {
        int stride = 1;
        for (size_t i = 0; i < extents.size(); ++i) {
            if (bounds) b.dim(int(i)).set_bounds(0, extents[i]);
            b.dim(int(i)).set_stride(stride);
            stride *= extents[i];
        }
    }

    void generate() {
        blockfuse::PoolKnobs kn;
        BLOCKFUSE_POOL_KNOBS(BLOCKFUSE_KNOB_COPY)
        const bool gpu = get_target().has_gpu_feature();
        // Vector stores on CUDA only: on OpenCL Halide 21 fails an internal assertion lowering their selects
        // (EliminateBoolVectors.cpp:246, every dtype but f32 without indices).
        if (!get_target().has_feature(Target::CUDA)) kn.store_vec = 0;
        if (!get_target().has_feature(Target::StrictFloat) && !get_target().has_feature(Target::OpenCL))
            throw CompileError("pool: build with target feature strict_float (NaN and -inf must survive LLVM: "
                               "generators/pool_algorithm.h)");
        Func out = *output;
        if (op == PoolKind::mean) {
            Func x = *input;
            blockfuse::MeanPoolingFuncs f =
                ragged ? blockfuse::mean_pooling_algorithm(x, seq, chunk, out_storage, Func(*offsets),
                                                           Func(*chunk_index), sequences)
                       : blockfuse::mean_pooling_algorithm(x, seq, chunk, out_storage);
            out(f.output.args()) = f.output(f.output.args());
            f.output.compute_inline();
            blockfuse::schedule_mean_pooling(f, out, kn, gpu);
            const int S = seq, C = chunk;
            const int groups = ragged ? int(chunks) : (S + C - 1) / C;
            dense(*input, {dim, heads, seq, batch});
            dense(out.output_buffer(), {dim, heads, groups, batch});
            (*input).set_host_alignment(16);  // rows of d start at 16-byte boundaries: vector loads
            out.output_buffer().set_host_alignment(16);
            if (ragged) {
                dense(*offsets, {int(sequences) + 1});
                dense(*chunk_index, {2, chunks});
            }
            return;
        }
        blockfuse::PoolGeometry g;
        g.op = op == PoolKind::avg ? PoolOp::avg : PoolOp::max;
        g.adaptive = adaptive != 0;
        g.axis[0] = {in_x, out_x, kernel_x, stride_x, pad_x, dil_x};
        g.axis[1] = {in_y, out_y, kernel_y, stride_y, pad_y, dil_y};
        g.axis[2] = {in_z, out_z, kernel_z, stride_z, pad_z, dil_z};
        g.count_include_pad = count_include_pad != 0;
        g.divisor = divisor;
        g.vec = kn.vec;
        g.nan_max_intrinsic = get_target().has_feature(Target::CUDA);
        // The algorithm's Funcs are 5-D (x, y, z, c, n); the buffers have the op's rank.
        Var x("x"), y("y"), z("z"), c("c"), n("n");
        const int R = rank;
        Func in5("in5");
        Func in = *input;
        if (R == 1) in5(x, y, z, c, n) = in(x, c, n);
        if (R == 2) in5(x, y, z, c, n) = in(x, y, c, n);
        if (R == 3) in5(x, y, z, c, n) = in(x, y, z, c, n);
        const bool with_indices = g.op == PoolOp::max && indices;
        blockfuse::PoolFuncs f = blockfuse::pool_algorithm(in5, g, storage, with_indices);
        std::vector<Var> args{x};
        if (R >= 2) args.push_back(y);
        if (R >= 3) args.push_back(z);
        args.push_back(c);
        args.push_back(n);
        const Expr y5 = R >= 2 ? Expr(y) : Expr(0), z5 = R >= 3 ? Expr(z) : Expr(0);
        // stage_out: the values computed into a Func the output copies (its tiles staged in shared memory).
        if (!gpu) kn.stage_out = 0;
        Func staged, values = out;
        if (kn.stage_out) values = staged = Func("pool_tiles");
        if (with_indices) values(args) = Tuple(f.output(x, y5, z5, c, n), f.indices(x, y5, z5, c, n));
        else values(args) = f.output(x, y5, z5, c, n);
        if (kn.stage_out) {
            if (with_indices) out(args) = Tuple(staged(args)[0], staged(args)[1]);
            else out(args) = staged(args);
        }
        blockfuse::schedule_pool(f, out, staged, R, g, kn, gpu);

        std::vector<int> in_ext{in_x}, out_ext{out_x};
        if (R >= 2) in_ext.push_back(in_y), out_ext.push_back(out_y);
        if (R >= 3) in_ext.push_back(in_z), out_ext.push_back(out_z);
        for (int e : {int(channels), int(batch)}) in_ext.push_back(e), out_ext.push_back(e);
        dense(*input, in_ext);
        // Vector loads of the staged window are aligned: rows are whole blocks, buffers 16-byte aligned.
        if (kn.vec > 1) (*input).set_host_alignment(16);
        auto outs = out.output_buffers();
        for (size_t i = 0; i < outs.size(); ++i) {
            dense(outs[i], out_ext, i == 0);
            if (gpu && blockfuse::pool_store_vector(g, kn, storage)) outs[i].set_host_alignment(16);  // vector stores
        }
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(PoolGenerator, pool)
