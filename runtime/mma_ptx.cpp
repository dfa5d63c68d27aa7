#include "runtime/mma_ptx.h"
#include "generators/mma_abi.h"
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace blockfuse::mma_ptx {
namespace {

enum class Op {
    mma_f16,
    mma_bf16,
    ldmatrix_x4,
    ldmatrix_x2,
    cp_async_16,
    cp_async_commit,
    cp_async_wait,
    wgmma_f16,
    wgmma_bf16,
    fence_proxy_async,
    cvt_bf16
};

// The externs the rewrite knows, once: their names and what each stands for.
constexpr std::pair<const char *, Op> kExterns[] = {{mma::kMmaF16, Op::mma_f16},
                                                    {mma::kMmaBf16, Op::mma_bf16},
                                                    {mma::kLdmatrixX4, Op::ldmatrix_x4},
                                                    {mma::kLdmatrixX2, Op::ldmatrix_x2},
                                                    {mma::kCpAsync16, Op::cp_async_16},
                                                    {mma::kCpAsyncCommit, Op::cp_async_commit},
                                                    {mma::kCpAsyncWait, Op::cp_async_wait},
                                                    {mma::kWgmmaF16, Op::wgmma_f16},
                                                    {mma::kWgmmaBf16, Op::wgmma_bf16},
                                                    {mma::kFenceProxyAsync, Op::fence_proxy_async},
                                                    {mma::kCvtBf16, Op::cvt_bf16}};

std::optional<Op> known_extern(const std::string &name) {
    for (const auto &[n, op] : kExterns)
        if (name == n) return op;
    return std::nullopt;
}
std::string known_externs() {
    std::string out;
    for (const auto &[n, op] : kExterns) out += (out.empty() ? "" : ", ") + std::string(n);
    return out;
}
bool is_mma(Op op) { return op == Op::mma_f16 || op == Op::mma_bf16; }
bool is_wgmma(Op op) { return op == Op::wgmma_f16 || op == Op::wgmma_bf16; }
// The wgmma extern's operands (generators/mma_abi.h): i, n, A's descriptor fields (shared address, leading and stride
// byte offsets, layout type), B's, then c.
constexpr size_t kWgmmaN = 1, kWgmmaA = 2, kWgmmaB = 6, kWgmmaC = 10;
// The asynchronous copies, the proxy fence and the bf16 conversion: one call, one instruction (no group).
bool is_single(Op op) {
    return op == Op::cp_async_16 || op == Op::cp_async_commit || op == Op::cp_async_wait ||
           op == Op::fence_proxy_async || op == Op::cvt_bf16;
}
size_t params_of(Op op) {
    switch (op) {
    case Op::mma_f16:
    case Op::mma_bf16: return 8;
    case Op::wgmma_f16:
    case Op::wgmma_bf16: return kWgmmaC + 1;
    case Op::cp_async_16: return 3;
    case Op::cp_async_commit:
    case Op::fence_proxy_async: return 0;
    case Op::cp_async_wait:
    case Op::cvt_bf16: return 1;
    default: return 2;
    }
}
bool ours(const std::string &name) { return name.rfind(mma::kExternPrefix, 0) == 0; }

std::string trim(const std::string &s) {
    size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
    return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

bool is_register(const std::string &operand) { return !operand.empty() && operand[0] == '%'; }
bool is_constant(const std::string &operand) {
    return !operand.empty() && operand.find_first_not_of("0123456789") == std::string::npos;
}

// Immediate operands of a rewritten instruction through registers declared in a scope of its own (mma.sync and
// cp.async take registers): %bf_s<i> 32-bit, %bf_d<i> 64-bit; and temporaries the text writes, %bf_h<i> 16-bit too.
struct ScopedTemps {
    std::vector<std::string> movs;
    int b16 = 0, b32 = 0, b64 = 0;
    std::string reg(const std::string &v, bool wide = false) {
        if (is_register(v)) return v;
        const std::string t = wide ? fresh64() : "%bf_s" + std::to_string(b32++);
        movs.push_back(std::string("\tmov.") + (wide ? "b64" : "b32") + " \t" + t + ", " + v + ";");
        return t;
    }
    std::string fresh64() { return "%bf_d" + std::to_string(b64++); }  // a 64-bit temporary the text writes
    std::string fresh16() { return "%bf_h" + std::to_string(b16++); }  // a 16-bit one
    // `text` after the immediates are set, in a scope declaring the temporaries; as it is without any.
    std::vector<std::string> scoped(const std::vector<std::string> &text) const {
        if (!b16 && !b32 && !b64) return text;
        std::vector<std::string> out{"\t{"};
        if (b16) out.push_back("\t.reg .b16 \t%bf_h<" + std::to_string(b16) + ">;");
        if (b32) out.push_back("\t.reg .b32 \t%bf_s<" + std::to_string(b32) + ">;");
        if (b64) out.push_back("\t.reg .b64 \t%bf_d<" + std::to_string(b64) + ">;");
        out.insert(out.end(), movs.begin(), movs.end());
        out.insert(out.end(), text.begin(), text.end());
        out.push_back("\t}");
        return out;
    }
};

// f(start, end) for each register name (%name) in text.
template <class F>
void scan_registers(const std::string &text, F f) {
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') continue;
        size_t j = i + 1;
        while (j < text.size() && (std::isalnum((unsigned char)text[j]) || text[j] == '_')) ++j;
        if (j > i + 1) f(i, j);
        i = j - 1;
    }
}

std::set<std::string> registers_in(const std::string &text) {
    std::set<std::string> out;
    scan_registers(text, [&](size_t a, size_t b) { out.insert(text.substr(a, b - a)); });
    return out;
}

// One statement of a function body. A callseq block is one statement.
struct Instr {
    enum Kind { text, split, plain, member, fused } kind = text;
    std::vector<std::string> lines;
    std::set<std::string> defs, uses;
    // members
    Op op{};
    int members = 0;                      // calls in the group: 4 (mma, ldmatrix.x4), 2 (x2), n / 2 (wgmma)
    bool wgmma = false;                   // a fused wgmma (committed, its wait placed by wait_for_wgmma)
    std::vector<std::string> wg_c, wg_d;  // a fused wgmma's C and D registers, as the call blocks named them
    int index = -1;                       // q, r or i
    std::vector<std::string> operands;    // the extern's arguments, in order
    std::string result;
    std::string key;  // what the members of one group share: the extern and every operand but the index and c
    void set_key() {
        key = std::to_string(int(op));
        const size_t shared = is_mma(op) || is_wgmma(op) ? operands.size() - 1 : operands.size();
        for (size_t i = 1; i < shared; ++i) key += "|" + operands[i];
    }
};

class Rewriter {
public:
    explicit Rewriter(Stats *stats) : stats(stats) {}

    std::string run(std::string_view ptx) {
        std::vector<std::string> lines;
        {
            std::string all(ptx);
            std::istringstream in(all);
            for (std::string l; std::getline(in, l);) lines.push_back(l);
        }
        std::ostringstream out;
        for (size_t i = 0; i < lines.size();) {
            const std::string t = trim(lines[i]);
            if (t.rfind(".extern .func", 0) == 0 || t.rfind(".func", 0) == 0 || t.rfind(".visible .func", 0) == 0 ||
                t.rfind(".weak .func", 0) == 0) {
                i = declaration(lines, i, out);
                continue;
            }
            if (t.find(".entry ") != std::string::npos) {
                i = function(lines, i, out);
                continue;
            }
            if (t.find(mma::kExternPrefix) != std::string::npos)
                throw RewriteError("(module)", "a blockfuse extern outside a declaration or kernel: " + t);
            out << lines[i] << "\n";
            ++i;
        }
        return out.str();
    }

    bool hopper = false;  // an instruction of sm_90a was written (wgmma, the async proxy's fence)

private:
    Stats *stats;
    std::string kernel = "(module)";

    [[noreturn]] void fail(const std::string &what) const { throw RewriteError(kernel, what); }

    // A .func declaration or definition: ours are dropped (known) or refused (unknown); others kept.
    size_t declaration(const std::vector<std::string> &lines, size_t i, std::ostringstream &out) {
        size_t end = i;
        std::string text;
        int depth = 0;
        bool body = false;
        for (; end < lines.size(); ++end) {
            text += lines[end] + "\n";
            for (char c : lines[end]) {
                if (c == '(' || c == '{') depth++;
                if (c == ')' || c == '}') depth--;
                if (c == '{') body = true;
            }
            const std::string t = trim(lines[end]);
            if (depth == 0 && ((!body && !t.empty() && t.back() == ';') || (body && t == "}"))) break;
        }
        static const std::regex name_re(R"(\.func\s*(?:\([^)]*\))?\s*([A-Za-z_$][A-Za-z0-9_$]*))");
        std::smatch m;
        const std::string flat = std::regex_replace(text, std::regex("\n"), " ");
        std::string name = std::regex_search(flat, m, name_re) ? m[1].str() : "";
        if (ours(name)) {
            if (!known_extern(name) || body)
                throw RewriteError("(module)",
                                   "unknown blockfuse extern '" + name + "' (known: " + known_externs() + ")");
        } else {
            out << text;
        }
        return end + 1;
    }

    size_t function(const std::vector<std::string> &lines, size_t i, std::ostringstream &out) {
        static const std::regex entry_re(R"(\.entry\s+([A-Za-z_$][A-Za-z0-9_$]*))");
        std::smatch m;
        kernel = std::regex_search(lines[i], m, entry_re) ? m[1].str() : "(unnamed entry)";
        // The signature, up to the body's opening brace.
        for (; i < lines.size() && trim(lines[i]) != "{"; ++i) out << lines[i] << "\n";
        if (i == lines.size()) fail("no function body");
        out << lines[i++] << "\n";
        std::vector<Instr> body;
        for (; i < lines.size() && trim(lines[i]) != "}"; ++i) {
            const std::string t = trim(lines[i]);
            if (t.rfind("{ // callseq", 0) == 0) {
                i = callseq(lines, i, body);
                continue;
            }
            body.push_back(statement(lines[i]));
        }
        if (i == lines.size()) fail("function body not closed");
        const int before = stats ? stats->mma + stats->ldmatrix_x4 + stats->ldmatrix_x2 + stats->wgmma : 0;
        fuse_all(body);
        chain_wgmma(body);
        wait_for_wgmma(body);
        for (const Instr &in : body) {
            if (in.kind == Instr::member) fail("member left unfused (internal error)");
            for (const auto &l : in.lines) out << l << "\n";
        }
        if (stats && stats->mma + stats->ldmatrix_x4 + stats->ldmatrix_x2 + stats->wgmma > before)
            stats->kernels.push_back(kernel);
        out << lines[i] << "\n";
        kernel = "(module)";
        return i + 1;
    }

    Instr statement(const std::string &line) const {
        Instr in;
        in.lines.push_back(line);
        std::string t = trim(line);
        if (auto c = t.find("//"); c != std::string::npos) t = trim(t.substr(0, c));
        if (t.empty() || t[0] == '.') return in;  // blank, comment, directive (.reg, .local, ...)
        if (t.back() == ':' || t == "{" || t == "}") {
            in.kind = Instr::split;  // a label, or a scope
            return in;
        }
        if (t.find(mma::kExternPrefix) != std::string::npos) fail("a blockfuse extern used outside a call block: " + t);
        std::string guard;
        if (t[0] == '@') {
            const size_t sp = t.find_first_of(" \t");
            guard = t.substr(0, sp);
            t = trim(t.substr(sp));
        }
        const size_t sp = t.find_first_of(" \t;");
        const std::string opcode = t.substr(0, sp);
        std::string rest = sp == std::string::npos ? "" : t.substr(sp);
        static const char *splits[] = {"bra",      "ret",  "exit", "trap",     "brkpt",   "bar",  "barrier",
                                       "st",       "atom", "red",  "membar",   "fence",   "call", "cp",
                                       "mbarrier", "wmma", "mma",  "ldmatrix", "stmatrix"};
        const std::string root = opcode.substr(0, opcode.find('.'));
        if (std::find(std::begin(splits), std::end(splits), root) != std::end(splits)) {
            in.kind = Instr::split;
            return in;
        }
        in.kind = Instr::plain;
        // The destination is the first operand (a register, a {vector} or p|q); the rest are sources.
        int depth = 0;
        size_t comma = std::string::npos;
        for (size_t k = 0; k < rest.size(); ++k) {
            if (rest[k] == '{' || rest[k] == '[') depth++;
            if (rest[k] == '}' || rest[k] == ']') depth--;
            if (rest[k] == ',' && depth == 0) {
                comma = k;
                break;
            }
        }
        const std::string dest = comma == std::string::npos ? rest : rest.substr(0, comma);
        in.defs = registers_in(dest);
        in.uses = registers_in((comma == std::string::npos ? "" : rest.substr(comma)) + " " + guard);
        if (dest.find('[') != std::string::npos) {  // not a register destination: be conservative
            in.uses.insert(in.defs.begin(), in.defs.end());
            in.defs.clear();
            in.kind = Instr::split;
        }
        return in;
    }

    // A `{ // callseq N, 0 ... } // callseq N` block: a member when it calls one of our externs.
    size_t callseq(const std::vector<std::string> &lines, size_t i, std::vector<Instr> &body) {
        Instr in;
        size_t end = i;
        for (; end < lines.size(); ++end) {
            in.lines.push_back(lines[end]);
            if (end > i && trim(lines[end]).rfind("} // callseq", 0) == 0) break;
        }
        if (end == lines.size()) fail("call block not closed: " + trim(lines[i]));
        static const std::regex call_re(R"(^call(?:\.uni)?\s*\((\w+)\),\s*([A-Za-z_$][A-Za-z0-9_$]*),\s*\(([^)]*)\);)");
        static const std::regex st_re(R"(^st\.param\.b(?:32|64)\s*\[param(\d+)\],\s*([^;]+);)");
        static const std::regex ld_re(R"(^ld\.param\.b32\s*(%\w+),\s*\[(\w+)\];)");
        std::string callee, retval;
        std::map<int, std::string> params;
        size_t param_count = 0;
        bool other = false;
        for (size_t k = 1; k + 1 < in.lines.size(); ++k) {
            const std::string t = trim(in.lines[k]);
            std::smatch m;
            if (t.empty() || t.rfind(".param", 0) == 0) continue;
            if (std::regex_search(t, m, call_re)) {
                callee = m[2].str();
                retval = m[1].str();
                std::string list = m[3].str();
                param_count = list.empty() ? 0 : size_t(std::count(list.begin(), list.end(), ',') + 1);
            } else if (std::regex_search(t, m, st_re)) {
                params[std::stoi(m[1].str())] = trim(m[2].str());
            } else if (std::regex_search(t, m, ld_re) && m[2].str() == retval && !retval.empty()) {
                in.result = m[1].str();
            } else {
                other = true;
            }
        }
        if (!ours(callee)) {
            if (callee.empty() && in.lines.size() > 0) {
                for (const auto &l : in.lines)
                    if (l.find(mma::kExternPrefix) != std::string::npos) fail("unrecognized call block: " + trim(l));
            }
            in.kind = Instr::split;  // some other call: a barrier to fusion
            body.push_back(in);
            return end;
        }
        auto op = known_extern(callee);
        if (!op) fail("call to unknown blockfuse extern '" + callee + "' (" + trim(in.lines[0]) + ")");
        if (other) fail("unexpected statement in the call block of " + callee + " (" + trim(in.lines[0]) + ")");
        if (param_count != params_of(*op) || params.size() != param_count)
            fail(callee + " called with " + std::to_string(param_count) + " arguments (" +
                 std::to_string(params.size()) + " passed), expected " + std::to_string(params_of(*op)));
        for (size_t p = 0; p < param_count; ++p) in.operands.push_back(params[int(p)]);
        if (is_single(*op)) {
            body.push_back(single(*op, in));
            return end;
        }
        if (in.result.empty()) fail(callee + " call whose result is not read into a register");
        const std::string &idx = in.operands[0];
        if (!is_constant(idx)) fail(callee + " register index '" + idx + "' is not a constant");
        in.index = std::stoi(idx);
        in.members = *op == Op::ldmatrix_x2 ? 2 : 4;
        if (is_wgmma(*op)) {  // n / 2 registers, n a constant multiple of 8 up to 256
            const std::string &n = in.operands[kWgmmaN];
            if (!is_constant(n) || std::stoi(n) % 8 || std::stoi(n) < 8 || std::stoi(n) > mma::kWgmmaMaxN)
                fail(callee + " with n '" + n + "', not a constant multiple of 8 from 8 to 256");
            for (size_t at : {kWgmmaA, kWgmmaB}) {
                if (!is_constant(in.operands[at + 1]) || !is_constant(in.operands[at + 2]))
                    fail(callee + " with core-matrix offsets '" + in.operands[at + 1] + "', '" + in.operands[at + 2] +
                         "', not constants");
                const std::string &layout = in.operands[at + 3];
                if (layout != std::to_string(mma::kWgmmaInterleave) && layout != std::to_string(mma::kWgmmaSwizzle128))
                    fail(callee + " with layout type '" + layout +
                         "' (known: " + std::to_string(mma::kWgmmaInterleave) + ", no swizzle; " +
                         std::to_string(mma::kWgmmaSwizzle128) + ", the 128-byte swizzle)");
            }
            in.members = std::stoi(n) / 2;
        }
        if (in.index >= in.members)
            fail(callee + " register index " + idx + " out of range 0.." + std::to_string(in.members - 1));
        in.kind = Instr::member;
        in.op = *op;
        in.set_key();
        in.defs = {in.result};
        for (size_t p = 1; p < in.operands.size(); ++p)
            if (is_register(in.operands[p])) in.uses.insert(in.operands[p]);
        body.push_back(in);
        return end;
    }

    // An asynchronous-copy call as its instruction (a result read from it becomes 0). A copy is an ordinary
    // instruction to the fusion (it reads its operand registers; its shared destination is a ring copy no
    // ldmatrix of the same step reads); a commit or wait orders the copies, so nothing is fused across it.
    Instr single(Op op, const Instr &call) {
        Instr in;
        ScopedTemps temps;
        std::vector<std::string> text;
        if (op == Op::cp_async_16) {
            const std::string dst = temps.reg(call.operands[0]), src = temps.reg(call.operands[1], true),
                              bytes = temps.reg(call.operands[2]), global = temps.fresh64();
            text.push_back("\tcvta.to.global.u64 \t" + global + ", " + src + ";");
            text.push_back("\tcp.async.cg.shared.global \t[" + dst + "], [" + global + "], 16, " + bytes + ";");
            in.kind = Instr::plain;
            for (const std::string &o : call.operands)
                if (is_register(o)) in.uses.insert(o);
            if (stats) stats->cp_async++;
        } else if (op == Op::cp_async_commit) {
            text.push_back("\tcp.async.commit_group;");
            in.kind = Instr::split;
        } else if (op == Op::fence_proxy_async) {
            text.push_back("\tfence.proxy.async.shared::cta;");
            in.kind = Instr::split;
            hopper = true;
        } else if (op == Op::cvt_bf16) {
            // The rounded 16 bits zero-extended into the call's 32-bit result (the extern returns a uint16).
            if (call.result.empty())
                fail(std::string(mma::kCvtBf16) + " call whose result is not read into a register");
            const std::string x = temps.reg(call.operands[0]), bits = temps.fresh16();
            text.push_back("\tcvt.rn.bf16.f32 \t" + bits + ", " + x + ";");
            text.push_back("\tcvt.u32.u16 \t" + call.result + ", " + bits + ";");
            in.kind = Instr::plain;
            if (is_register(call.operands[0])) in.uses.insert(call.operands[0]);
            in.defs.insert(call.result);
            if (stats) stats->cvt_bf16++;
            in.lines = temps.scoped(text);
            return in;
        } else {
            const std::string &n = call.operands[0];
            if (!is_constant(n)) fail(std::string(mma::kCpAsyncWait) + " with '" + n + "', not a constant group count");
            text.push_back("\tcp.async.wait_group \t" + n + ";");
            in.kind = Instr::split;
        }
        if (!call.result.empty()) {
            text.push_back("\tmov.b32 \t" + call.result + ", 0;");
            in.defs.insert(call.result);
        }
        in.lines = temps.scoped(text);
        return in;
    }

    std::string group_text(const Instr &m) const {
        if (is_wgmma(m.op))
            return std::string(m.op == Op::wgmma_f16 ? mma::kWgmmaF16 : mma::kWgmmaBf16) + "(n " + m.operands[kWgmmaN] +
                   ", a " + m.operands[kWgmmaA] + ", b " + m.operands[kWgmmaB] + ")";
        return std::string(m.op == Op::mma_f16       ? mma::kMmaF16
                           : m.op == Op::mma_bf16    ? mma::kMmaBf16
                           : m.op == Op::ldmatrix_x4 ? mma::kLdmatrixX4
                                                     : mma::kLdmatrixX2) +
               "(" + (is_mma(m.op) ? "a/b " + m.operands[1] + ".." + m.operands[6] : "address " + m.operands[1]) + ")";
    }

    // The lines a wgmma group is fenced and committed by (chain_wgmma keeps one of each a chain).
    static constexpr const char *kWgmmaFenceLine = "\twgmma.fence.sync.aligned;";
    static constexpr const char *kWgmmaCommitLine = "\twgmma.commit_group.sync.aligned;";

    // A wgmma group: the matrix descriptors ((address >> 4) & 0x3fff, the leading byte offset >> 4 at bit 16, the stride
    // byte offset >> 4 at bit 32, the layout type at bit 62; the base offset 0: the lowering proved swizzled atoms
    // 1024-byte aligned), C moved into D (wgmma accumulates in place), then the instruction
    // after a fence on the accumulator registers, committed; wait_for_wgmma places the wait.
    std::vector<std::string> wgmma_instruction(const std::vector<Instr> &body, const std::vector<int> &g,
                                               const std::vector<std::string> &d, ScopedTemps &temps) {
        const Instr &m0 = body[g[0]];
        std::vector<std::string> text;
        auto descriptor = [&](size_t at) {
            const std::string address = temps.reg(m0.operands[at]), desc = temps.fresh64();
            const uint64_t offsets = (uint64_t(std::stoll(m0.operands[at + 1])) >> 4 << 16) |
                                     (uint64_t(std::stoll(m0.operands[at + 2])) >> 4 << 32) |
                                     (uint64_t(std::stoll(m0.operands[at + 3])) << 62);
            text.push_back("\tcvt.u64.u32 \t" + desc + ", " + address + ";");
            text.push_back("\tshr.u64 \t" + desc + ", " + desc + ", 4;");
            text.push_back("\tand.b64 \t" + desc + ", " + desc + ", 16383;");
            text.push_back("\tor.b64 \t" + desc + ", " + desc + ", " + std::to_string(offsets) + ";");
            return desc;
        };
        const std::string a = descriptor(kWgmmaA), b = descriptor(kWgmmaB);
        const std::set<std::string> results(d.begin(), d.end());
        for (size_t k = 0; k < g.size(); ++k) {
            const std::string &c = body[g[k]].operands[kWgmmaC];
            if (c == d[k]) continue;
            if (results.count(c))
                fail("group " + group_text(m0) + ": accumulator " + c + " is another register's result");
            text.push_back("\tmov.b32 \t" + d[k] + ", " + c + ";");
        }
        std::string list;
        for (size_t k = 0; k < d.size(); ++k) list += (k ? ", " : "") + d[k];
        const char *types = m0.op == Op::wgmma_f16 ? "f16.f16" : "bf16.bf16";
        text.push_back("\t.reg .pred \t%bf_p;");
        text.push_back("\tsetp.eq.u32 \t%bf_p, 1, 1;");
        text.push_back(kWgmmaFenceLine);
        text.push_back("\twgmma.mma_async.sync.aligned.m64n" + m0.operands[kWgmmaN] + "k16.f32." + types + " \t{" +
                       list + "}, " + a + ", " + b + ", %bf_p, 1, 1, 0, 0;");
        text.push_back(kWgmmaCommitLine);
        hopper = true;
        if (stats) stats->wgmma++;
        return temps.scoped(text);
    }

    // A chain of wgmma, each one's C the D of the one before and nothing else reading those (a K step's instructions on
    // one accumulator, with no barrier, store or branch between them), accumulates in one set of registers: the
    // chain's last D (which, in a loop, is where its first C comes from), so the copies C -> D between its members
    // go. Without this, ptxas waits for each wgmma before the copy reads its result (C7517) and the chain runs one
    // instruction at a time. A chain whose registers are read elsewhere is left with its copies (correct, slower).
    void chain_wgmma(std::vector<Instr> &body) {
        auto is_wgmma_at = [&](size_t i) { return body[i].kind == Instr::fused && body[i].wgmma; };
        bool any = false;  // the register counts below only for a function with wgmma (module load stays as it was)
        for (size_t i = 0; i < body.size() && !any; ++i) any = is_wgmma_at(i);
        if (!any) return;
        std::map<std::string, int> total;
        std::vector<std::map<std::string, int>> per(body.size());
        for (size_t i = 0; i < body.size(); ++i)
            for (const std::string &l : body[i].lines)
                scan_registers(l, [&](size_t a, size_t b) {
                    const std::string r = l.substr(a, b - a);
                    total[r]++, per[i][r]++;
                });
        for (size_t first = 0; first < body.size(); ++first) {
            if (!is_wgmma_at(first)) continue;
            std::vector<size_t> chain{first};
            for (size_t j = first + 1; j < body.size() && body[j].kind != Instr::split; ++j)
                if (is_wgmma_at(j)) {
                    if (body[j].wg_c != body[chain.back()].wg_d) break;
                    chain.push_back(j);
                }
            first = chain.back();
            if (chain.size() < 2) continue;
            const std::vector<std::string> &result = body[chain.back()].wg_d, &start = body[chain.front()].wg_c;
            bool ok = true;
            for (size_t j = 0; j + 1 < chain.size() && ok; ++j)
                for (const std::string &d : body[chain[j]].wg_d)  // read by the next member only
                    ok = ok && total[d] == per[chain[j]][d] + per[chain[j + 1]][d];
            // The result registers take the whole chain's values: nowhere between its first and last member if
            // the first reads them (a loop's accumulator, carried over from the last), else nowhere before its last.
            for (size_t k = 0; k < result.size() && ok; ++k) {
                const size_t from = start[k] == result[k] ? chain.front() + 1 : 0;
                for (size_t i = from; i < chain.back() && ok; ++i) ok = per[i].count(result[k]) == 0;
            }
            if (!ok) continue;
            for (size_t j = 0; j < chain.size(); ++j) {
                Instr &in = body[chain[j]];
                std::map<std::string, std::string> rename;
                for (size_t k = 0; k < result.size(); ++k) {
                    rename[in.wg_d[k]] = result[k];
                    if (j > 0) rename[in.wg_c[k]] = result[k];
                }
                rename_registers(in, rename);
                // One fence before the chain and one commit after it: wgmma of one shape accumulating in the same
                // registers are ordered without a fence between them (PTX ISA, wgmma.fence), and a fence or commit
                // per member makes ptxas put a WARPGROUP.ARRIVE before each HGMMA and wait on each.
                const bool first = j == 0, last = j + 1 == chain.size();
                in.lines.erase(std::remove_if(in.lines.begin(), in.lines.end(),
                                              [&](const std::string &l) {
                                                  if (!first && l == kWgmmaFenceLine) return true;
                                                  if (!last && l == kWgmmaCommitLine) return true;
                                                  for (const std::string &r : result)
                                                      if (l == "\tmov.b32 \t" + r + ", " + r + ";") return true;
                                                  return false;
                                              }),
                               in.lines.end());
                in.wg_d = result;
                if (j > 0) in.wg_c = result;
            }
        }
    }

    static std::string renamed(const std::string &text, const std::map<std::string, std::string> &rename) {
        std::string out;
        size_t done = 0;
        scan_registers(text, [&](size_t a, size_t b) {
            auto it = rename.find(text.substr(a, b - a));
            if (it == rename.end()) return;
            out += text.substr(done, a - done) + it->second;
            done = b;
        });
        return done ? out + text.substr(done) : text;
    }
    static void rename_registers(Instr &in, const std::map<std::string, std::string> &rename) {
        for (std::string &l : in.lines) l = renamed(l, rename);
        for (auto *set : {&in.defs, &in.uses}) {
            std::set<std::string> out;
            for (const std::string &r : *set) out.insert(rename.count(r) ? rename.at(r) : r);
            *set = out;
        }
    }

    // wgmma.wait_group 0 before the first statement after a wgmma that is not the next wgmma of the chain and touches
    // its accumulators, or may touch what it reads (a store, a barrier, a call, a label or branch: the panels are
    // rewritten after the next barrier), and at the end: consecutive wgmma on the same accumulators (a K step's) run
    // back to back in the tensor cores, and nothing reads a register or overwrites a panel an unfinished one uses.
    void wait_for_wgmma(std::vector<Instr> &body) {
        std::set<std::string> pending;  // results of wgmma not yet waited for
        const Instr wait{Instr::split, {"\twgmma.wait_group.sync.aligned \t0;"}};
        auto meets = [&](const std::set<std::string> &regs) {
            return std::any_of(regs.begin(), regs.end(), [&](const std::string &r) { return pending.count(r) > 0; });
        };
        for (size_t i = 0; i < body.size(); ++i) {
            Instr &in = body[i];
            if (in.kind == Instr::fused && in.wgmma) {
                pending.insert(in.defs.begin(), in.defs.end());
                continue;
            }
            if (pending.empty() || in.kind == Instr::text) continue;  // a directive, a comment, a blank
            if (in.kind == Instr::split || in.kind == Instr::fused || meets(in.uses) || meets(in.defs)) {
                body.insert(body.begin() + long(i), wait);
                ++i;
                pending.clear();
            }
        }
        if (!pending.empty()) body.push_back(wait);
    }

    void fuse_all(std::vector<Instr> &body) {
        size_t segment_start = 0;
        for (;;) {
            std::map<std::string, std::vector<int>> open;  // key -> member index by register (-1: missing)
            bool fused = false;
            size_t i = segment_start;
            for (; i < body.size(); ++i) {
                const Instr &in = body[i];
                if (in.kind == Instr::split) {
                    for (const auto &[k, g] : open) incomplete(body, g, i);
                    segment_start = i + 1;
                    continue;
                }
                if (in.kind != Instr::member) continue;
                auto &g = open[in.key];
                if (g.empty()) g.assign(in.members, -1);
                if (g[in.index] >= 0)
                    fail("group " + group_text(in) + " has register " + std::to_string(in.index) +
                         " twice before its other members");
                g[in.index] = int(i);
                if (std::all_of(g.begin(), g.end(), [](int x) { return x >= 0; })) {
                    fuse(body, g);
                    fused = true;
                    break;
                }
            }
            if (fused) continue;  // rescan the segment: indices moved
            for (const auto &[k, g] : open) incomplete(body, g, body.size());
            return;
        }
    }

    // The error for a group still incomplete at statement `at` (a split point, or the end): split, if a
    // missing member comes later in the function, else lacking it.
    [[noreturn]] void incomplete(const std::vector<Instr> &body, const std::vector<int> &g, size_t at) const {
        const Instr &any = body[*std::max_element(g.begin(), g.end())];
        for (size_t r = 0; r < g.size(); ++r) {
            if (g[r] >= 0) continue;
            for (size_t j = at; j < body.size(); ++j)
                if (body[j].kind == Instr::member && body[j].key == any.key && body[j].index == int(r))
                    fail("group " + group_text(any) + " is split by '" + trim(body[at].lines[0]) +
                         "' before all its members");
            fail("group " + group_text(any) + " lacks register " + std::to_string(r));
        }
        fail("group " + group_text(any) + " incomplete (internal error)");
    }

    // Replaces the members body[g[..]] by one instruction F that reads every member's operands and then
    // writes every member's result. The other instructions between the members keep their order, split
    // into those that must run before F and the rest after it, so that each still reads the values it
    // read before: before F if F needs what it writes (or it needs a value a member overwrites), after
    // F if it reads a member's result (or overwrites a member's operand), and so on transitively. A
    // member reading another member's result, or an instruction bound both ways, is an error. (A member
    // may read and write one register, the accumulator updated in place: F reads before it writes.)
    void fuse(std::vector<Instr> &body, const std::vector<int> &g) {
        const Instr &m0 = body[g[0]];
        const int first = *std::min_element(g.begin(), g.end()), last = *std::max_element(g.begin(), g.end());
        const std::set<int> members(g.begin(), g.end());
        Instr f;
        f.kind = Instr::fused;
        for (int i : g) {
            f.defs.insert(body[i].result);
            f.uses.insert(body[i].uses.begin(), body[i].uses.end());
        }
        if (f.defs.size() != g.size()) fail("group " + group_text(m0) + " writes one register twice");
        for (int i : g)
            for (int j : g)
                if (i < j && body[j].uses.count(body[i].result))
                    fail("group " + group_text(m0) + ": a member reads another member's result " + body[i].result);
        auto meets = [](const std::set<std::string> &a, const std::set<std::string> &b) {
            return std::any_of(a.begin(), a.end(), [&](const std::string &r) { return b.count(r) > 0; });
        };
        // Does y (after x) depend on x: reads what x writes, writes what x reads or writes?
        auto depends = [&](const Instr &x, const Instr &y) {
            return meets(y.uses, x.defs) || meets(y.defs, x.uses) || meets(y.defs, x.defs);
        };
        std::vector<int> others;
        for (int i = first + 1; i < last; ++i)
            if (!members.count(i)) others.push_back(i);
        std::map<int, bool> before, after;
        for (int x : others) {
            for (int mi : g) {
                const Instr &m = body[mi];
                if (x < mi && depends(body[x], m))
                    before[x] = true;  // the member needs it, or it reads m's operand first
                if (mi < x && depends(m, body[x])) after[x] = true;  // it needs m's result, or overwrites m's operand
            }
        }
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t a = 0; a < others.size(); ++a)
                for (size_t b = a + 1; b < others.size(); ++b) {
                    const int x = others[a], y = others[b];
                    if (!depends(body[x], body[y])) continue;
                    if (before[y] && !before[x]) before[x] = changed = true;
                    if (after[x] && !after[y]) after[y] = changed = true;
                }
        }
        for (int x : others)
            if (before[x] && after[x])
                fail("an instruction between the members of " + group_text(m0) +
                     " must run both before and after the fused instruction: '" + trim(body[x].lines[0]) + "'");
        f.lines = instruction(body, g);
        f.wgmma = is_wgmma(m0.op);
        for (int i : g)
            if (f.wgmma) f.wg_c.push_back(body[i].operands[kWgmmaC]), f.wg_d.push_back(body[i].result);
        std::vector<Instr> span;
        for (int x : others)
            if (before[x]) span.push_back(std::move(body[x]));
        span.push_back(std::move(f));
        for (int x : others)
            if (!before[x]) span.push_back(std::move(body[x]));
        // The span shrinks by the members it lost: the freed slots become empty text, so nothing after
        // the span moves.
        std::move(span.begin(), span.end(), body.begin() + first);
        for (int i = first + int(span.size()); i <= last; ++i) body[i] = Instr{};
    }

    // The fused instruction's text; immediate operands go through scoped temporaries (mma takes registers).
    std::vector<std::string> instruction(const std::vector<Instr> &body, const std::vector<int> &g) {
        const Instr &m0 = body[g[0]];
        ScopedTemps temps;
        auto reg = [&](const std::string &v) { return temps.reg(v); };
        auto list = [](const std::vector<std::string> &v) {
            std::string s = "{";
            for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
            return s + "}";
        };
        std::vector<std::string> d;
        for (int idx : g) d.push_back(body[idx].result);
        std::string text;
        if (is_wgmma(m0.op)) return wgmma_instruction(body, g, d, temps);
        if (is_mma(m0.op)) {
            std::vector<std::string> a, b, c;
            for (int k = 1; k <= 4; ++k) a.push_back(reg(m0.operands[k]));
            for (int k = 5; k <= 6; ++k) b.push_back(reg(m0.operands[k]));
            for (int idx : g) c.push_back(reg(body[idx].operands[7]));
            const char *types = m0.op == Op::mma_f16 ? "f16.f16" : "bf16.bf16";
            text = std::string("\tmma.sync.aligned.m16n8k16.row.col.f32.") + types + ".f32 \t" + list(d) + ", " +
                   list(a) + ", " + list(b) + ", " + list(c) + ";";
            if (stats) stats->mma++;
        } else {
            const bool x4 = m0.op == Op::ldmatrix_x4;
            text = std::string("\tldmatrix.sync.aligned.m8n8.") + (x4 ? "x4" : "x2") + ".shared.b16 \t" + list(d) +
                   ", [" + m0.operands[1] + "];";
            if (stats) (x4 ? stats->ldmatrix_x4 : stats->ldmatrix_x2)++;
        }
        return temps.scoped({text});
    }
};

}  // namespace

namespace {
// wgmma and the async proxy need PTX ISA 8.0 and the sm_90a target (Hopper's arch-specific instructions; such a
// module loads on compute capability 9.0 only).
std::string for_sm90a(const std::string &ptx) {
    static const std::regex version(R"(^\.version (\d+)\.(\d+))", std::regex::multiline),
        target(R"(^\.target sm_\d+a?)", std::regex::multiline);
    std::smatch m;
    std::string out = ptx;
    if (!std::regex_search(out, m, target)) throw RewriteError("(module)", "no .target line to raise to sm_90a");
    out = std::regex_replace(out, target, ".target sm_90a", std::regex_constants::format_first_only);
    if (std::regex_search(out, m, version) && std::stoi(m[1].str()) < 8)
        out = std::regex_replace(out, version, ".version 8.0", std::regex_constants::format_first_only);
    return out;
}
}  // namespace

bool needs_rewrite(std::string_view ptx) { return ptx.find(mma::kExternPrefix) != std::string_view::npos; }

std::string rewrite(std::string_view ptx, Stats *stats) {
    Rewriter r(stats);
    std::string out = r.run(ptx);
    if (r.hopper) out = for_sm90a(out);
    if (out.find(mma::kExternPrefix) != std::string::npos) {
        const size_t at = out.find(mma::kExternPrefix);
        throw RewriteError("(module)", "a blockfuse extern is still referenced after the rewrite: '" +
                                           out.substr(at, out.find_first_of(",;( \n", at) - at) + "'");
    }
    return out;
}

}  // namespace blockfuse::mma_ptx
