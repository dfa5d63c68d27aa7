// The load-time PTX rewrite (runtime/mma_ptx.h) without a GPU: the checked-in fixture of Halide 21's
// callseq text rewritten into the expected instructions; the fixture still matching what the current
// build emits (an LLVM change in the text fails here, not on the GPU); and every malformed group refused
// with an error naming the kernel (fail-closed), never rewritten or passed through.
#define CATCH_CONFIG_MAIN
#include "runtime/kernel_cache.h"
#include "runtime/kernel_registry.h"
#include "runtime/mma_ptx.h"
#include "runtime/ptx_local_depot.h"
#include "runtime/process.h"
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>

using namespace blockfuse;

namespace {

std::string read(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string fixture() { return read(BLOCKFUSE_SOURCE_DIR "/tests/data/mma_callseq.ptx"); }
std::string cp_async_fixture() { return read(BLOCKFUSE_SOURCE_DIR "/tests/data/cp_async_callseq.ptx"); }
std::string cvt_bf16_fixture() { return read(BLOCKFUSE_SOURCE_DIR "/tests/data/cvt_bf16_callseq.ptx"); }

// The `{ // callseq N, 0 ... } // callseq N` block of call N.
std::pair<size_t, size_t> block(const std::string &ptx, int n) {
    const std::string open = "\t{ // callseq " + std::to_string(n) + ", 0\n";
    const std::string close = "} // callseq " + std::to_string(n) + "\n";
    const size_t a = ptx.find(open), b = ptx.find(close, a);
    REQUIRE(a != std::string::npos);
    REQUIRE(b != std::string::npos);
    return {a, b + close.size()};
}
std::string insert_after_block(std::string ptx, int n, const std::string &line) {
    return ptx.insert(block(ptx, n).second, line + "\n");
}
std::string replace_in_block(std::string ptx, int n, const std::string &from, const std::string &to) {
    auto [a, b] = block(ptx, n);
    std::string blk = ptx.substr(a, b - a);
    const size_t at = blk.find(from);
    REQUIRE(at != std::string::npos);
    blk.replace(at, from.size(), to);
    return ptx.replace(a, b - a, blk);
}
std::string replace_all(std::string s, const std::string &from, const std::string &to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

void require_refused(const std::string &ptx, const std::string &why) {
    try {
        mma_ptx::rewrite(ptx);
        FAIL("rewritten without an error (expected: " << why << ")");
    } catch (const mma_ptx::RewriteError &e) {
        const std::string m = e.what();
        INFO(m);
        CHECK(m.find("PTX rewrite of kernel ") == 0);
        CHECK(m.find(why) != std::string::npos);
    }
}

// A callseq block with registers, call numbers and the register index abstracted: its shape.
std::string shape_of(const std::string &blk) {
    std::string s = std::regex_replace(blk, std::regex(R"(%[a-z]+[0-9]+)"), "%R");
    s = std::regex_replace(s, std::regex(R"(callseq [0-9]+)"), "callseq N");
    return std::regex_replace(s, std::regex(R"(\[param0\], [0-9]+)"), "[param0], I");
}
// The shapes of the call blocks of externs whose names start with `prefix`.
std::set<std::string> blockfuse_call_shapes(const std::string &ptx, const std::string &prefix = "blockfuse_") {
    std::set<std::string> out;
    static const std::regex re(R"(\t\{ // callseq ([0-9]+), 0\n[\s\S]*?\} // callseq \1\n)");
    for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), re); it != std::sregex_iterator(); ++it)
        if (it->str().find(prefix) != std::string::npos) out.insert(shape_of(it->str()));
    return out;
}

// The device code of a named CUDA gemm variant, as this build's gemm generator makes it (as the kernel cache does).
std::string emitted_ptx(const std::string &variant) {
    const KernelVariant *v = find_data_variant(variant);
    REQUIRE(v != nullptr);
    const KernelRequest r = v->request();
    REQUIRE(!generator_dir().empty());
    const std::string dir = BLOCKFUSE_TEST_TMP "/mma_ptx_emitted";
    std::filesystem::create_directories(dir);
    std::vector<std::string> cmd{
        generator_dir() + "/gemm.generator", "-g", "gemm", "-e", "device_code", "-o", dir, "-n", variant, "-f", variant,
        "target=" + r.target + "-no_runtime"};
    cmd.insert(cmd.end(), r.params.begin(), r.params.end());
    const ProcessResult pr = run_process(cmd, dir + "/" + variant + ".log", 600);
    INFO("see " << dir << "/" << variant << ".log");
    REQUIRE(pr.ok());
    return read(dir + "/" + variant + ".device_code");
}

// Every shape of `built` is in `fixed` and the other way round.
void require_same_shapes(const std::set<std::string> &built, const std::set<std::string> &fixed) {
    for (const auto &s : built) {
        INFO("emitted by this build, not in the fixture:\n" << s);
        CHECK(fixed.count(s) == 1);
    }
    for (const auto &s : fixed) {
        INFO("in the fixture, not emitted by this build:\n" << s);
        CHECK(built.count(s) == 1);
    }
}

}  // namespace

TEST_CASE("the fixture's groups become one mma.sync and two ldmatrix.x4, operands ordered around them", "[mma_ptx]") {
    mma_ptx::Stats st;
    const std::string out = mma_ptx::rewrite(fixture(), &st);
    CHECK(st.mma == 1);
    CHECK(st.ldmatrix_x4 == 2);
    CHECK(st.ldmatrix_x2 == 0);
    REQUIRE(st.kernels == std::vector<std::string>{"fixture_kernel"});
    CHECK(out.find("blockfuse_") == std::string::npos);
    CHECK(out.find("call.uni") == std::string::npos);
    CHECK(out.find("{ // callseq") == std::string::npos);
    // The expected text, checked by hand and by ptxas + cuobjdump (2 LDSM.16.M88.4, 1 HMMA.16816.F32).
    CHECK(out == read(BLOCKFUSE_SOURCE_DIR "/tests/data/mma_callseq.rewritten.ptx"));
}

TEST_CASE("a module without tensor-core externs passes unchanged", "[mma_ptx]") {
    const std::string plain = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n";
    CHECK_FALSE(mma_ptx::needs_rewrite(plain));
    CHECK(mma_ptx::rewrite(plain) == plain);
    CHECK(mma_ptx::needs_rewrite(fixture()));
    CHECK(mma_ptx::register_cap(64) == mma_ptx::kMinRegisters);  // the default's floor
    CHECK(mma_ptx::register_cap(255) == 255);
}

// runtime/ptx_local_depot.h: the depot of a function storing 16-byte vectors into local memory raised to 16 (the
// accumulator tile of a CUDA-core convolution that stopped with CUDA_ERROR_MISALIGNED_ADDRESS on an H100), another
// function's depot left where its accesses fit, a function without local vectors unchanged.
TEST_CASE("local depots are aligned for their function's widest local access, the rest of the module unchanged",
          "[ptx]") {
    const std::string head = ".version 8.0\n.target sm_90\n.address_size 64\n";
    const std::string spilled =
        ".visible .entry acc_tile()\n{\n\t.local .align 4 .b8 \t__local_depot0[448];\n"
        "\t.reg .b64 \t%SPL;\n\tmov.b64 \t%SPL, __local_depot0;\n\tadd.u64 \t%rd4, %SPL, 0;\n"
        "\tst.local.v2.b64 \t[%rd4], {%rd1, %rd2};\n\tld.local.f32 \t%f1, [%rd4+4];\n\tret;\n}\n";
    const std::string fits = ".visible .entry window()\n{\n\t.local .align 8 .b8 \t__local_depot1[64];\n"
                             "\tst.local.b64 \t[%rd4], %rd1;\n\tst.local.v2.b16 \t[%rd4+8], {%rs1, %rs2};\n\tret;\n}\n";
    const std::string scalar = ".visible .entry plain()\n{\n\t.local .align 2 .b8 \t__local_depot2[6];\n"
                               "\tcvta.local.u64 \t%rd2, %rd1;\n\tst.local.b16 \t[%rd1], %rs1;\n\tret;\n}\n";
    std::string ptx = head + spilled + fits + scalar;
    std::string expected = ptx;
    expected.replace(expected.find(".local .align 4"), 15, ".local .align 16");
    CHECK(ptx::align_local_depots(ptx) == 1);
    CHECK(ptx == expected);
    CHECK(ptx::align_local_depots(ptx) == 0);  // idempotent: a module loaded twice
    std::string none = head + scalar;
    const std::string before = none;
    CHECK(ptx::align_local_depots(none) == 0);
    CHECK(none == before);
}

TEST_CASE("the fixture has the callseq shape the current build emits", "[mma_ptx]") {
    // The PTX of a real kernel, made now by this build's gemm generator (the named variant gemm_a_f16_cuda's
    // params, as the kernel cache makes it), must hold exactly the fixture's call shapes for these externs:
    // if the LLVM in the Halide wheel prints them differently, this fails (and the fixture and the
    // rewriter must follow).
    const std::string ptx = emitted_ptx("gemm_a_f16_cuda");
    const std::set<std::string> fixed = blockfuse_call_shapes(fixture());
    REQUIRE(fixed.size() == 2);  // ldmatrix.x4, mma f16
    require_same_shapes(blockfuse_call_shapes(ptx), fixed);
    // The declarations, as emitted.
    for (const std::string decl :
         {".extern .func  (.param .b32 func_retval0) blockfuse_ldmatrix_x4\n(\n\t.param .b32 "
          "blockfuse_ldmatrix_x4_param_0,\n\t.param .b32 blockfuse_ldmatrix_x4_param_1\n)\n;\n",
          ".extern .func  (.param .b32 func_retval0) blockfuse_mma_m16n8k16_f32_f16\n(\n"})
        CHECK(ptx.find(decl) != std::string::npos);
}

TEST_CASE("the asynchronous copies become cp.async, commit_group and wait_group; the fixture is what the build emits",
          "[mma_ptx]") {
    mma_ptx::Stats st;
    const std::string out = mma_ptx::rewrite(cp_async_fixture(), &st);
    CHECK(st.cp_async == 2);
    CHECK(out.find("blockfuse_") == std::string::npos);
    // Register operands as they are; a constant byte count through a scoped register; the source made global.
    CHECK(out.find("\tcvta.to.global.u64 \t%bf_d0, %rd3;\n\tcp.async.cg.shared.global \t[%r3], [%bf_d0], 16, %r2;\n"
                   "\tmov.b32 \t%r4, 0;") != std::string::npos);
    CHECK(out.find("\tmov.b32 \t%bf_s0, 16;") != std::string::npos);
    CHECK(out.find("cp.async.cg.shared.global \t[%r5], [%bf_d0], 16, %bf_s0;") != std::string::npos);
    CHECK(out.find("\tcp.async.commit_group;\n\tmov.b32 \t%r7, 0;") != std::string::npos);
    CHECK(out.find("\tcp.async.wait_group \t1;\n\tmov.b32 \t%r8, 0;") != std::string::npos);
    // A three-stage ring's kernel as this build emits it holds exactly the fixture's call shapes.
    const std::set<std::string> fixed = blockfuse_call_shapes(cp_async_fixture());
    REQUIRE(fixed.size() == 4);  // two copies (byte count in a register, constant), commit, wait
    require_same_shapes(blockfuse_call_shapes(emitted_ptx("gemm_t_f16_cuda"), "blockfuse_cp_async"), fixed);
}

TEST_CASE("malformed asynchronous copies are refused with an error naming the kernel", "[mma_ptx]") {
    const std::string f = cp_async_fixture();
    SECTION("a wait whose group count is not a constant") {
        require_refused(replace_in_block(f, 3, "[param0], 1", "[param0], %r2"),
                        "blockfuse_cp_async_wait with '%r2', not a constant group count");
    }
    SECTION("a copy with the wrong arity") {
        require_refused(replace_in_block(f, 0, "(param0, param1, param2);", "(param0, param1);"),
                        "blockfuse_cp_async_16 called with 2 arguments (3 passed), expected 3");
    }
    SECTION("a commit inside an mma group") {
        auto [a, b] = block(f, 2);
        require_refused(insert_after_block(fixture(), 9, f.substr(a, b - a - 1)),
                        "is split by 'cp.async.commit_group;'");
    }
}

TEST_CASE("the bf16 conversion becomes cvt.rn.bf16.f32 into its result; the fixture is what the build emits",
          "[mma_ptx]") {
    mma_ptx::Stats st;
    const std::string out = mma_ptx::rewrite(cvt_bf16_fixture(), &st);
    CHECK(st.cvt_bf16 == 1);
    CHECK(out.find("blockfuse_") == std::string::npos);
    // The rounded bits zero-extended into the register the call's result was read into.
    CHECK(
        out.find("\t{\n\t.reg .b16 \t%bf_h<1>;\n\tcvt.rn.bf16.f32 \t%bf_h0, %r2;\n\tcvt.u32.u16 \t%r3, %bf_h0;\n\t}") !=
        std::string::npos);
    // A constant argument through a scoped register.
    const std::string c =
        mma_ptx::rewrite(replace_in_block(cvt_bf16_fixture(), 0, "[param0], %r2", "[param0], 0f3F800000"));
    CHECK(c.find("\tmov.b32 \t%bf_s0, 0f3F800000;") != std::string::npos);
    CHECK(c.find("\tcvt.rn.bf16.f32 \t%bf_h0, %bf_s0;") != std::string::npos);
    // A bf16 kernel's epilogue as this build emits it holds exactly the fixture's call shape.
    const std::set<std::string> fixed = blockfuse_call_shapes(cvt_bf16_fixture());
    REQUIRE(fixed.size() == 1);
    require_same_shapes(blockfuse_call_shapes(emitted_ptx("gemm_a_bf16_cuda"), "blockfuse_cvt"), fixed);
}

TEST_CASE("malformed bf16 conversions are refused with an error naming the kernel", "[mma_ptx]") {
    const std::string f = cvt_bf16_fixture();
    SECTION("a result not read") {
        require_refused(replace_in_block(f, 0, "\tld.param.b32 \t%r3, [retval0];\n", ""),
                        "blockfuse_cvt_bf16 call whose result is not read into a register");
    }
    SECTION("the wrong arity") {
        require_refused(replace_in_block(f, 0, "(param0);", "();"),
                        "blockfuse_cvt_bf16 called with 0 arguments (1 passed), expected 1");
    }
}

TEST_CASE("malformed groups are refused with an error naming the kernel", "[mma_ptx]") {
    const std::string f = fixture();
    SECTION("a label inside a group") {
        require_refused(insert_after_block(f, 9, "$L__BB0_7:"), "is split by '$L__BB0_7:'");
    }
    SECTION("a branch inside a group") {
        require_refused(insert_after_block(f, 9, "\t@%p1 bra \t$L__BB0_7;"), "is split by '@%p1 bra");
    }
    SECTION("a barrier inside a group") {
        require_refused(insert_after_block(f, 1, "\tbar.sync \t0;"), "is split by 'bar.sync");
    }
    SECTION("a store inside a group") {
        require_refused(insert_after_block(f, 10, "\tst.shared.b32 \t[%r1], %r20;"), "is split by 'st.shared.b32");
    }
    SECTION("a missing member") {
        auto [a, b] = block(f, 11);
        require_refused(std::string(f).erase(a, b - a), "lacks register 3");
    }
    SECTION("a duplicated member") {
        auto [a, b] = block(f, 9);
        std::string dup = f;
        dup.insert(b, f.substr(a, b - a));
        require_refused(dup, "has register 1 twice");
    }
    SECTION("a member with other operands") {
        require_refused(replace_in_block(f, 10, "[param1], %r10", "[param1], %r19"), "lacks register 2");
    }
    SECTION("a register index that is not a constant") {
        require_refused(replace_in_block(f, 10, "[param0], 2", "[param0], %r3"),
                        "register index '%r3' is not a constant");
    }
    SECTION("a register index out of range") {
        require_refused(replace_in_block(f, 3, "[param0], 3", "[param0], 4"), "register index 4 out of range 0..3");
    }
    SECTION("a member reading another member's result") {
        require_refused(replace_in_block(f, 9, "[param7], %r21", "[param7], %r20"),
                        "reads another member's result %r20");
    }
    SECTION("an unknown blockfuse extern") {
        require_refused(replace_all(f, "blockfuse_mma_m16n8k16_f32_f16", "blockfuse_mma_m16n8k8_f32_f16"),
                        "unknown blockfuse extern 'blockfuse_mma_m16n8k8_f32_f16'");
    }
    SECTION("a call with the wrong arity") {
        require_refused(replace_in_block(f, 0, "(param0, param1);", "(param0, param1, param1);"),
                        "blockfuse_ldmatrix_x4 called with 3 arguments (2 passed), expected 2");
    }
    SECTION("an extern used outside a call block") {
        require_refused(insert_after_block(f, 11, "\tmov.u64 \t%rd12, blockfuse_ldmatrix_x4;"),
                        "a blockfuse extern used outside a call block");
    }
}

namespace {
// The number of the first call block of `callee`, and the number of call blocks of it.
std::pair<int, int> call_blocks(const std::string &ptx, const std::string &callee) {
    static const std::regex re(R"(\t\{ // callseq ([0-9]+), 0\n[\s\S]*?\} // callseq \1\n)");
    int first = -1, count = 0;
    for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), re); it != std::sregex_iterator(); ++it)
        if (it->str().find(callee + ",") != std::string::npos) {
            if (first < 0) first = std::stoi((*it)[1].str());
            ++count;
        }
    return {first, count};
}
size_t occurrences(const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
}
}  // namespace

TEST_CASE("wgmma groups become one wgmma.mma_async each, a K step's chained on one accumulator, for sm_90a",
          "[mma_ptx]") {
    // gemm_wg_f16_cuda: 8 warps (two warpgroups) of 16 x 128, K steps of 64: 4 wgmma of m64n128k16 a K step, each
    // the 64 calls of a thread's registers; two entries (whole tiles and the general one).
    const std::string ptx = emitted_ptx("gemm_wg_f16_cuda");
    CHECK(call_blocks(ptx, "blockfuse_wgmma_m64k16_f32_f16").second == 2 * 4 * 64);
    mma_ptx::Stats st;
    const std::string out = mma_ptx::rewrite(ptx, &st);
    CHECK(st.wgmma == 2 * 4);
    CHECK(st.mma == 0);
    CHECK(st.ldmatrix_x4 + st.ldmatrix_x2 == 0);
    CHECK(out.find("blockfuse_") == std::string::npos);
    CHECK(out.find("\n.target sm_90a\n") != std::string::npos);
    CHECK(out.find("\n.version 8.0\n") != std::string::npos);
    CHECK(occurrences(out, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 \t{") == 8);
    // One fence before a K step's chain and one commit after it (a fence a wgmma puts a WARPGROUP.ARRIVE before
    // each HGMMA).
    CHECK(occurrences(out, "wgmma.fence.sync.aligned;") == 2);
    CHECK(occurrences(out, "wgmma.commit_group.sync.aligned;") == 2);
    // One wait a K step (after its four), not one a wgmma: the chain accumulates in one set of registers.
    CHECK(occurrences(out, "wgmma.wait_group.sync.aligned \t0;") == 2);
    // The panels' barriers fenced for the async proxy.
    CHECK(occurrences(out, "fence.proxy.async.shared::cta;") >= 2);
    // Descriptors (K steps of 64: the 128-byte swizzle): layout type 1 at bit 62, B's 8-row atoms 1024 bytes apart
    // (SBO 1024 >> 4 = 64 at bit 32), the unused LBO 16 bytes (1 at bit 16); each wgmma of the step 32 bytes (two
    // chunks) further into the atom.
    CHECK(out.find("or.b64 \t%bf_d1, %bf_d1, " +
                   std::to_string((uint64_t(1) << 62) | (uint64_t(64) << 32) | (1 << 16)) + ";") != std::string::npos);
    for (int k16 = 1; k16 < 4; ++k16)
        CHECK(out.find("mov.b32 \t%bf_s0, " + std::to_string(32 * k16) + ";") != std::string::npos);
    // K steps of 32 (gemm_wg_bf16_cuda): no swizzle, core matrices 128 bytes apart along K (LBO 128 >> 4 = 8), B's
    // 8-row groups 4 core matrices apart (SBO 512 >> 4 = 32).
    const std::string plain = mma_ptx::rewrite(emitted_ptx("gemm_wg_bf16_cuda"), nullptr);
    CHECK(plain.find("or.b64 \t%bf_d1, %bf_d1, " + std::to_string((uint64_t(32) << 32) | (8 << 16)) + ";") !=
          std::string::npos);
}

TEST_CASE("malformed wgmma groups are refused with an error naming the kernel", "[mma_ptx]") {
    const std::string ptx = emitted_ptx("gemm_wgk_f16_cuda");
    auto [first, count] = call_blocks(ptx, "blockfuse_wgmma_m64k16_f32_f16");
    REQUIRE(count > 0);
    SECTION("n not a constant") {
        require_refused(replace_in_block(ptx, first, "[param1], 40", "[param1], %r1"),
                        "with n '%r1', not a constant multiple of 8 from 8 to 256");
    }
    SECTION("n not a multiple of 8") {
        require_refused(replace_all(ptx, "[param1], 40", "[param1], 36"), "with n '36', not a constant multiple of 8");
    }
    SECTION("core-matrix offsets not constants") {
        require_refused(replace_in_block(ptx, first, "[param3], 16", "[param3], %r1"),
                        "with core-matrix offsets '%r1'");
    }
    SECTION("an unknown layout type") {
        require_refused(replace_in_block(ptx, first, "[param5], 1", "[param5], 2"), "with layout type '2'");
    }
    SECTION("a missing member") {
        auto [a, b] = block(ptx, first + 5);
        require_refused(std::string(ptx).erase(a, b - a), "lacks register");
    }
    SECTION("a barrier inside a group") {
        require_refused(insert_after_block(ptx, first + 3, "\tbar.sync \t0;"), "is split by 'bar.sync");
    }
}
