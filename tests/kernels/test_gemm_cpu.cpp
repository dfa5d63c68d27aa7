// The tensor-core GEMM without a GPU: the fragment-space kernels with the mma.sync and ldmatrix
// instructions emulated from the PTX ISA tables, on the CPU, against the float64 reference; a wrong
// fragment layout caught; workload keys, accounting, launch checks and dispatch.
#define CATCH_CONFIG_MAIN
#include "generators/mma_abi.h"
#include "schedules/heuristics.h"
#include "tests/common/gemm_cases.h"

using namespace blockfuse;

TEST_CASE("every CPU gemm variant (emulated mma.sync or wgmma) matches the float64 reference", "[gemm][cpu]") {
    const auto kernels = test::gemm_test_kernels(Device::cpu, {DType::f16, DType::bf16}, true);
    CHECK(std::count_if(kernels.begin(), kernels.end(), [](const KernelVariant *v) { return v->knob("wgmma") == 1; }) >=
          2);
    // K steps of 64: the 128-byte swizzled panels
    CHECK(std::count_if(kernels.begin(), kernels.end(),
                        [](const KernelVariant *v) { return v->knob("wgmma") == 1 && v->knob("k_step") == 64; }) >= 2);
    // The staged epilogue (stage_c), on mma.sync and on wgmma
    CHECK(std::count_if(kernels.begin(), kernels.end(),
                        [](const KernelVariant *v) { return v->knob("stage_c") == 1; }) >= 2);
    test::check_gemm_kernels(kernels);
}

TEST_CASE("a fragment layout with A registers 1 and 2 swapped (wgmma: A's K halves) fails the reference check",
          "[gemm][cpu]") {
    // The mutant is a CPU tiling generated with fragment_mutation=1 (a generator param, never in the variant data);
    // the same tiling unmutated passes. gemm_wg: the emulated wgmma, its panels in core matrices; gemm_wgs: in
    // 128-byte swizzled rows.
    const std::string tiling = GENERATE("gemm_a_f16_cpu", "gemm_wg_f16_cpu", "gemm_wgs_f16_cpu");
    const KernelVariant *good = find_data_variant(tiling);
    REQUIRE(good != nullptr);
    const KernelVariant mutant = make_variant("gemm", "gemm_mutant_f16_cpu", Device::cpu, DType::f16,
                                              {{"fragment_mutation", "1"}}, good->schedule_knobs(), 0, "test mutant");
    REQUIRE(mutant.request().hash() != good->request().hash());
    const uint64_t seed = std::random_device{}();
    for (const std::string shape : {"gemm:m=128,n=128,k=32", "gemm:m=17,n=9,k=13,bias=1"}) {
        const GemmWorkload w = test::gemm_case(shape, DType::f16);
        INFO(to_key(w) << ", seed " << seed);
        const Comparison ok = test::run_gemm_case(*good, w, seed);
        INFO("unmutated: " << ok.summary());
        REQUIRE(ok.ok());
        const Comparison bad = test::run_gemm_case(mutant, w, seed);
        INFO("mutant: " << bad.summary());
        CHECK_FALSE(bad.ok());
        CHECK(bad.violations > bad.elements / 4);  // a register swap corrupts most outputs, not a few
    }
}

TEST_CASE("the fragment tables are each other's inverses (PTX ISA m16n8k16, ldmatrix)", "[gemm][cpu]") {
    using namespace mma;
    std::set<std::pair<int, int>> a, b, c;
    for (int lane = 0; lane < kWarp; ++lane) {
        for (int r = 0; r < kARegs; ++r)
            for (int h = 0; h < 2; ++h) {
                const int row = a_row(r, lane), col = a_col(r, lane) + h;
                REQUIRE(a_lane_of(row, col) == lane);
                REQUIRE(a_reg_of(row, col) == r);
                a.insert({row, col});
            }
        for (int r = 0; r < kBRegs; ++r)
            for (int h = 0; h < 2; ++h) {
                const int k = b_k(r, lane) + h, col = b_col(lane);
                REQUIRE(b_lane_of(k, col) == lane);
                REQUIRE(b_reg_of(k) == r);
                b.insert({k, col});
            }
        for (int q = 0; q < kCRegs; ++q) {
            const int row = c_row(q, lane), col = c_col(q, lane);
            REQUIRE(c_lane_of(row, col) == lane);
            REQUIRE(c_reg_of(row, col) == q);
            c.insert({row, col});
        }
        // ldmatrix.x4 with the A row addresses: register r of `lane` is A register r.
        for (int r = 0; r < kARegs; ++r) {
            const int src = ldmatrix_source_lane(r, lane);
            REQUIRE(ldsm_a_row(src) == a_row(r, lane));
            REQUIRE(ldsm_a_k(src) + ldmatrix_element(lane) == a_col(r, lane));
        }
        // ldmatrix.x4 with the B addresses: register j is register j % 2 of n-tile j / 2.
        for (int j = 0; j < 4; ++j) {
            const int src = ldmatrix_source_lane(j, lane);
            REQUIRE(ldsm_b_col(src) == 8 * (j / 2) + b_col(lane));
            REQUIRE(ldsm_b_k(src) + ldmatrix_element(lane) == b_k(j % 2, lane));
        }
    }
    REQUIRE(a.size() == 256);  // every element of A (16 x 16), B (16 x 8) and C (16 x 8) exactly once
    REQUIRE(b.size() == 128);
    REQUIRE(c.size() == 128);
}

TEST_CASE("gemm keys round-trip and bad ones are rejected with one message", "[gemm][keys]") {
    REQUIRE(to_key(parse_gemm("gemm:k=256,n=1024,m=25088,dtype=f16")) == "gemm:m=25088,n=1024,k=256,dtype=f16");
    REQUIRE(to_key(parse_gemm("gemm:m=3,n=5,k=7,act=gelu,bias=1,dtype=bf16")) ==
            "gemm:m=3,n=5,k=7,bias=1,act=gelu,dtype=bf16");
    REQUIRE(to_key(parse_gemm("gemm:m=3,n=5,k=7,bias=0,act=none")) == "gemm:m=3,n=5,k=7,dtype=f16");
    auto rejects = [](const std::string &key, const std::string &why) {
        INFO(key);
        try {
            parse_gemm(key);
            FAIL("accepted");
        } catch (const WorkloadError &e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(why) != std::string::npos);
        }
    };
    rejects("gemm:m=3,n=5", "missing field 'k'");
    rejects("gemm:m=0,n=5,k=7", "field 'm' = 0 must be positive");
    rejects("gemm:m=3,n=-5,k=7", "field 'n' = -5 must be positive");
    rejects("gemm:m=3,n=5,k=x", "field 'k' = 'x' is not an integer");
    rejects("gemm:m=3,n=5,k=7,dtype=f32", "field 'dtype' = 'f32' is not supported by the tensor-core GEMM");
    rejects("gemm:m=3,n=5,k=7,act=tanh", "field 'act' = 'tanh'");
    rejects("gemm:m=3,n=5,k=7,bias=2", "field 'bias' = 2 must be 0 or 1");
    rejects("gemm:m=3,n=5,k=7,r=3", "unknown field 'r'");
    rejects("gemm:m=3,n=5,k=7,m=4", "field 'm' given twice");
    rejects("gemm:m=65536,n=65536,k=8", "C tensor has more than 2^31 elements");
    rejects("gemmx:m=3,n=5,k=7", "family 'gemmx' is not 'gemm'");
}

TEST_CASE("gemm accounting: 2MNK flops, each tensor once", "[gemm][model]") {
    const GemmWorkload w = parse_gemm("gemm:m=25088,n=1024,k=256,bias=1,dtype=f16");
    REQUIRE(gemm_flops(w) == 2.0 * 25088 * 1024 * 256);
    REQUIRE(gemm_bytes(w) == 2.0 * (25088.0 * 256 + 1024.0 * 256 + 25088.0 * 1024) + 4.0 * 1024);
    REQUIRE(gemm_bytes(parse_gemm("gemm:m=2,n=3,k=5")) == 2.0 * (10 + 15 + 6));
}

TEST_CASE("gemm launch checks reject what the device cannot run, naming the kernel and the limit", "[gemm][launch]") {
    const GemmWorkload w = parse_gemm("gemm:m=4096,n=4096,k=4096,dtype=f16");
    int cuda_variants = 0;
    for (const auto &v : data_variants())
        if (v.family == "gemm" && v.device == Device::cuda) {
            INFO(v.name);
            ++cuda_variants;
            // Without a GPU the limits are 1024 threads and 48 KB (the H200 opts in to 227 KB).
            if (gemm_launch(v, w).shape.shared_bytes <= launch_limits(Device::cuda).max_shared)
                REQUIRE_NOTHROW(check_gemm_launch(v, w));
            else REQUIRE_THROWS_WITH(check_gemm_launch(v, w), Catch::Contains("bytes of shared memory exceed"));
            if (v.max_registers == 0)  // the rule's cap, raised to the tensor-core floor of runtime/mma_ptx.h
                REQUIRE(gemm_launch(v, w).registers >= 168);
            REQUIRE(v.threads_per_block() == 32 * v.knob("warps_m") * v.knob("warps_n"));
        }
    REQUIRE(cuda_variants > 0);
    const KernelVariant *a = find_data_variant("gemm_a_f16_cuda");
    REQUIRE(a != nullptr);
    KernelVariant big = *a;
    big.name = "gemm_test_16warps";
    big.knobs["warps_m"] = 4;
    big.knobs["warps_n"] = 4;  // 512 threads at >= 168 registers: more than a block's 65536
    try {
        check_gemm_launch(big, w);
        FAIL("accepted");
    } catch (const KernelError &e) {
        const std::string m = e.what();
        INFO(m);
        CHECK(m.find("gemm_test_16warps") != std::string::npos);
        CHECK(m.find("registers x 512 threads") != std::string::npos);
    }
    try {
        check_gemm_launch(*a, parse_gemm("gemm:m=8388609,n=8,k=8,dtype=f16"));  // 65537 block rows of 128
        FAIL("accepted");
    } catch (const KernelError &e) {
        CHECK(std::string(e.what()).find("grid dimension y = 65537 exceeds the limit of 65535") != std::string::npos);
    }
    // wgmma: a cap below the accumulators one instruction names (ptxas would refuse the module), and a GPU other than
    // compute capability 9.0 (sm_90a instructions), refused before anything is built or loaded.
    const KernelVariant *wg = find_data_variant("gemm_wg_bf16_cuda");  // 64 x 256: 128 accumulators a thread
    REQUIRE(wg != nullptr);
    LaunchLimits hopper{1024, 227 * 1024, 65536, 90}, ampere{1024, 163 * 1024, 65536, 80};
    CHECK(tensor_core_launch_error(*wg, w.m, w.n, hopper).empty());
    KernelVariant capped = *wg;
    capped.max_registers = 128;
    CHECK_THAT(tensor_core_launch_error(capped, w.m, w.n, hopper),
               Catch::Contains("a register cap of 128 is below the 160 a wgmma of m64n256k16 needs"));
    CHECK_THAT(tensor_core_launch_error(*wg, w.m, w.n, ampere),
               Catch::Contains("wgmma = 1 needs a GPU of compute capability 9.0 (its sm_90a instructions), not 8.0"));
    KernelVariant wide = *a;
    wide.knobs["k_step"] = 512;  // (128 + 128) x (512 + 8) x 2 bytes of panels
    try {
        check_gemm_launch(wide, w);
        FAIL("accepted");
    } catch (const KernelError &e) {
        CHECK(std::string(e.what()).find("bytes of shared memory exceed") != std::string::npos);
    }
}

TEST_CASE("gemm dispatch: named variants of every device and dtype, the heuristic's tiling from M, N and K", "[gemm]") {
    for (Device d : {Device::cpu, Device::cuda, Device::opencl})
        for (DType t : {DType::f16, DType::bf16}) {
            const GemmWorkload w = test::gemm_case("gemm:m=64,n=64,k=64", t);
            REQUIRE_FALSE(gemm_candidates(w, d).empty());
            for (const KernelVariant *v : gemm_candidates(w, d)) REQUIRE(v->dtype == t);
            // No named variant is a default: every shape gets the heuristic's tiling.
            const Pick p = dispatch(to_key(w), "direct", d, nullptr);
            CHECK(p.source == "heuristic");
            for (const auto &[k, v] : gemm_heuristic(w, d).knobs) CHECK(p.variant->knob(k) == v);
        }
    // On the CPU that tiling is the prebuilt one: the heuristic's kernel loads from the build.
    const GemmWorkload w = test::gemm_case("gemm:m=64,n=64,k=64", DType::bf16);
    CHECK(dispatch(to_key(w), "direct", Device::cpu, nullptr).variant->request().hash() ==
          find_data_variant("gemm_a_bf16_cpu")->request().hash());
    // CUDA: K steps follow K; 64 x 64 tiles of four 32 x 32 warps where 128 x 128 ones leave SMs idle.
    CHECK(gemm_heuristic(parse_gemm("gemm:m=4096,n=4096,k=4096,dtype=f16"), Device::cuda).knobs.at("k_step") == 64);
    CHECK(gemm_heuristic(parse_gemm("gemm:m=4096,n=4096,k=4096,dtype=f16"), Device::cuda).knobs.at("warps_m") == 2);
    CHECK(gemm_heuristic(parse_gemm("gemm:m=4096,n=4096,k=24,dtype=f16"), Device::cuda).knobs.at("k_step") == 32);
    const auto small = gemm_heuristic(parse_gemm("gemm:m=512,n=512,k=512,dtype=f16"), Device::cuda).knobs;
    CHECK(
        (small.at("warp_m") == 32 && small.at("warp_n") == 32 && small.at("warps_m") == 2 && small.at("warps_n") == 2));
}
