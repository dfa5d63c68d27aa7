// [gemm][gpu] The tensor-core GEMM kernels (mma.sync through the load-time PTX rewrite) on CUDA, from a cache
// filled where Halide is (BLOCKFUSE_TEST_FILL_ONLY=1 there, tests/common/test_env.h): every named CUDA variant and
// the dispatcher's pick for every table shape, f16 and bf16, against the float64 reference (odd sizes, tails,
// whole tiles) and bit-exact on small integers; the blocks layer by layer on tensor cores (the block table); large shapes at sampled outputs; a module whose rewrite fails
// refused with the rewrite's message. Part of test_generated (its main: exit 77, skipped, without a CUDA
// device); with BLOCKFUSE_TEST_DEVICES not naming cuda these cases do nothing.
#include "runtime/cuda_driver.h"
#include "runtime/errors.h"
#include "schedules/heuristics.h"
#include "tests/common/block_tc_cases.h"
#include "tests/common/conv2d_tc_cases.h"
#include "tests/common/gemm_cases.h"
#include "tests/common/test_env.h"
#include <thread>

using namespace blockfuse;

namespace {

// tests/data/mma_callseq.ptx, embedded at build time: the binary runs on a GPU host from any folder.
const char *kRewriteFixture =
#include "mma_callseq.ptx.inc"
    ;

// Generates (or finds) every kernel in the cache, as many at a time as there are cores; true: run them too.
bool build_all(const std::vector<const KernelVariant *> &kernels) {
    std::vector<KernelRequest> reqs;
    for (const KernelVariant *v : kernels) reqs.push_back(v->request());
    const auto built =
        ensure_built_all(reqs, kernel_cache_dir(), int(std::max(1u, std::thread::hardware_concurrency())));
    for (size_t i = 0; i < kernels.size(); ++i) {
        INFO(kernels[i]->name << ": " << built[i].message);
        CHECK(built[i].ok);
    }
    return !test::fill_only();
}

const std::vector<std::string> &large_gemm_keys() {
    static const std::vector<std::string> keys{
        "gemm:m=4096,n=4096,k=4096,dtype=f16", "gemm:m=25088,n=256,k=1024,dtype=bf16",
        "gemm:m=25088,n=1024,k=256,dtype=f16", "gemm:m=1000,n=1000,k=1000,bias=1,act=gelu,dtype=f16"};
    return keys;
}

std::vector<const KernelVariant *> large_gemm_kernels(const std::string &key) {
    std::vector<const KernelVariant *> out{dispatch(key, "direct", Device::cuda, nullptr).variant};
    for (const KernelVariant *v : gemm_candidates(parse_gemm(key), Device::cuda))
        if (test::selected_for_test(v->name)) out.push_back(v);
    return out;
}

}  // namespace

TEST_CASE("every CUDA gemm kernel (named variants, the dispatcher's picks) matches the float64 reference",
          "[gemm][gpu]") {
    if (!test::testing_device(Device::cuda)) return;
    const auto kernels = test::gemm_test_kernels(Device::cuda, {DType::f16, DType::bf16}, false);
    if (build_all(kernels)) test::check_gemm_kernels(kernels);
}

TEST_CASE("large tensor-core GEMMs match the float64 reference at sampled outputs", "[gemm][gpu]") {
    if (!test::testing_device(Device::cuda)) return;
    std::vector<const KernelVariant *> all;
    for (const auto &key : large_gemm_keys())
        for (const KernelVariant *v : large_gemm_kernels(key)) all.push_back(v);
    if (!build_all(all)) return;
    const uint64_t seed = std::random_device{}();
    for (const auto &key : large_gemm_keys())
        for (const KernelVariant *v : large_gemm_kernels(key)) {
            const GemmWorkload w = parse_gemm(key);
            std::mt19937_64 rng(seed);
            GemmTensors t = make_gemm_tensors(w);
            randomize(t, w, rng);
            run_gemm(*v, w, t);
            const Comparison c = check_gemm(w, t, 4096, rng);
            INFO(v->name << " [" << v->knob_summary() << "] on " << key << ", seed " << seed << ": " << c.summary());
            REQUIRE(c.ok());
        }
}

TEST_CASE("every tensor-core conv2d shape (implicit GEMM on mma.sync) matches the float64 reference", "[gemm][gpu]") {
    if (!test::testing_device(Device::cuda)) return;
    std::vector<const KernelVariant *> kernels;
    for (const auto &key : test::conv2d_tc_shapes()) kernels.push_back(test::conv2d_tc_kernel(key, Device::cuda));
    if (build_all(kernels)) test::check_conv2d_tc_shapes(Device::cuda);
}

// The Hopper heuristic's wgmma tilings of dense convolutions (schedules/heuristics.cpp, hopper_conv_wgmma_tiling):
// one warpgroup's 64 x 128 tiles on a 4-stage ring, and the two warpgroups' 128 x 128 tiles on a 3-stage ring that
// long reductions onto many tiles take (highres), both with the staged epilogue, on shapes whose M, N and K are no
// multiple of the tiles (one of 116 tiles of 128 x 128, 228 of 64 x 128), against the float64 reference.
// compute-sanitizer runs this case too (bench/recipes/wgmma_conv_sanitize.txt). wgmma is Hopper's: other GPUs skip
// it, saying so.
TEST_CASE("the Hopper wgmma conv tilings (one and two warpgroups) on ragged shapes match the float64 reference",
          "[gemm][gpu][wgmma_conv]") {
    if (!test::testing_device(Device::cuda)) return;
    if (!test::fill_only() && cuda::device().cc_major != 9) {
        WARN("wgmma needs compute capability 9.x; " << cuda::device().name << " skips these tilings");
        return;
    }
    const std::map<std::string, int> common{{"warp_m", 16}, {"warp_n", 128}, {"warps_n", 1},
                                            {"k_step", 64}, {"pad", 0},      {"prefetch", 0},
                                            {"split_k", 1}, {"wgmma", 1},    {"stage_c", 1}};
    std::vector<std::map<std::string, int>> tilings(2, common);
    tilings[0]["warps_m"] = 4, tilings[0]["stages"] = 4;  // one warpgroup
    tilings[1]["warps_m"] = 8, tilings[1]["stages"] = 3;  // two warpgroups
    const std::vector<std::string> keys{"conv2d:n=1,c=72,h=13,w=11,k=136,r=3,s=3,pad=1,bias=1,act=relu,dtype=bf16",
                                        "conv2d:n=2,c=40,h=15,w=9,k=200,r=3,s=3,stride=2,pad=2,dil=2,dtype=f16",
                                        "conv2d:n=1,c=264,h=61,w=59,k=392,r=3,s=3,pad=1,act=silu,dtype=f16"};
    std::vector<const KernelVariant *> kernels;
    for (const auto &key : keys)
        for (const auto &knobs : tilings)
            kernels.push_back(kernel_with_knobs(key, kTensorCores, Device::cuda, knobs, 0, "test"));
    if (!build_all(kernels)) return;
    const uint64_t seed = std::random_device{}();
    for (size_t i = 0; i < kernels.size(); ++i) {
        const std::string &key = keys[i / tilings.size()];
        INFO(kernels[i]->name << " [" << kernels[i]->knob_summary() << "] on " << key << ", seed " << seed);
        const Comparison c = test::run_conv2d_tc_case(*kernels[i], key, seed);
        INFO(c.summary());
        CHECK(c.ok());
    }
}

TEST_CASE("every block shape layer by layer on the tensor cores (mma.sync) matches the float64 reference",
          "[gemm][gpu]") {
    if (!test::testing_device(Device::cuda)) return;
    std::vector<const KernelVariant *> kernels;
    for (const auto &key : test::block_tc_shapes()) kernels.push_back(test::block_tc_kernel(key, Device::cuda));
    if (build_all(kernels)) test::check_block_tc_shapes(Device::cuda);
}

TEST_CASE("a tensor-core module whose rewrite fails is refused with a message naming the kernel", "[gemm][gpu]") {
    if (!test::testing_device(Device::cuda) || test::fill_only()) return;
    // The rewriter's fixture with one mma member removed: the load must fail with the rewrite's message, not
    // load or crash.
    std::string ptx = kRewriteFixture;
    const size_t a = ptx.find("\t{ // callseq 11, 0\n"), b = ptx.find("} // callseq 11\n");
    REQUIRE(a != std::string::npos);
    REQUIRE(b != std::string::npos);
    ptx.erase(a, b + std::string("} // callseq 11\n").size() - a);
    clear_halide_error();
    try {
        cuda::Module m(ptx.c_str());
        FAIL("the module loaded");
    } catch (const std::runtime_error &e) {
        const std::string msg = last_halide_error(0);
        INFO(e.what() << " / " << msg);
        CHECK(msg.find("fixture_kernel") != std::string::npos);
        CHECK(msg.find("lacks register 3") != std::string::npos);
    }
}

TEST_CASE("a launch past the GPU's shared memory is rejected before running, naming the limit", "[gemm][gpu]") {
    if (!test::testing_device(Device::cuda)) return;
    // wgmma 128 x 256 tiles, a 3-stage ring and the staged C tile: Halide pools the tile with the B panel and the
    // ring copies the pool, 251904 bytes a block, past the 232448 of an H100 or H200 (the launch check's estimate
    // counts the tile once and lets it through, so the driver shim is what must refuse it).
    const GemmWorkload w = parse_gemm("gemm:m=128,n=256,k=64,dtype=f16");
    ScheduleChoice s = gemm_heuristic(w, Device::cuda);
    for (const auto &[knob, value] : std::map<std::string, int>{{"wgmma", 1},
                                                                {"warp_m", 16},
                                                                {"warp_n", 256},
                                                                {"warps_m", 8},
                                                                {"warps_n", 1},
                                                                {"k_step", 64},
                                                                {"pad", 0},
                                                                {"stages", 3},
                                                                {"prefetch", 0},
                                                                {"split_k", 1},
                                                                {"stage_c", 1}})
        s.knobs[knob] = value;
    const KernelVariant v = gemm_kernel_for(w, Device::cuda, s);
    if (!build_all({&v})) return;
    const cuda::DeviceInfo &d = cuda::device();
    if (d.cc_major != 9 || d.max_shared_per_block_optin >= 251904) {
        WARN("not checked on " << d.name
                               << ": it needs a GPU of compute capability 9.0 with less than 251904 bytes "
                                  "of shared memory a block");
        return;
    }
    GemmTensors t = make_gemm_tensors(w);
    std::mt19937_64 rng(std::random_device{}());
    randomize(t, w, rng);
    try {
        run_gemm(v, w, t);
        FAIL("the kernel ran");
    } catch (const KernelError &e) {
        const std::string msg = e.what();
        INFO(msg);
        CHECK(msg.find(v.name) != std::string::npos);
        CHECK(msg.find("rejected before running") != std::string::npos);
        CHECK(msg.find(" bytes of shared memory exceed the device limit of " +
                       std::to_string(d.max_shared_per_block_optin)) != std::string::npos);
    }
}
