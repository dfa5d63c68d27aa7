#include "schedules/mma_lowering.h"
#include "generators/mma_abi.h"
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace blockfuse {
namespace {
using namespace Halide;
using namespace Halide::Internal;

bool is_ldmatrix(const std::string &n) { return n == mma::kLdmatrixX4 || n == mma::kLdmatrixX2; }
bool is_wgmma(const std::string &n) { return n == mma::kWgmmaF16 || n == mma::kWgmmaBf16; }
bool is_warp_instruction(const std::string &n) {
    return is_ldmatrix(n) || is_wgmma(n) || n == mma::kMmaF16 || n == mma::kMmaBf16;
}

// Does a statement hold a wgmma?
bool has_wgmma(const Stmt &s) {
    struct Find : IRVisitor {
        bool found = false;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            found = found || is_wgmma(op->name);
            IRVisitor::visit(op);
        }
    } f;
    s.accept(&f);
    return f.found;
}

// Before every barrier of a kernel with wgmma: fence.proxy.async, so that the shared memory its threads stored
// (the panels) is what the tensor cores read through the async proxy after the barrier.
Stmt fence_barriers(const Stmt &s) {
    struct Fence : IRMutator {
        using IRMutator::visit;
        Stmt visit(const Evaluate *op) override {
            const Call *c = op->value.as<Call>();
            if (!c || !c->is_intrinsic(Call::gpu_thread_barrier)) return op;
            return Block::make(Evaluate::make(Call::make(Int(32), mma::kFenceProxyAsync, {}, Call::Extern)), op);
        }
    } f;
    return f.mutate(s);
}

// An expression with the let-bound variables in `lets` replaced by their values, recursively: indices
// in terms of loop variables and constants only.
Expr expand(const Expr &e, const Scope<Expr> &lets) {
    struct Expand : IRMutator {
        const Scope<Expr> &lets;
        std::map<std::string, Expr> done;
        explicit Expand(const Scope<Expr> &l) : lets(l) {}
        using IRMutator::visit;
        Expr visit(const Variable *v) override {
            if (auto it = done.find(v->name); it != done.end()) return it->second;
            const Expr *value = lets.find(v->name);
            if (!value) return v;
            Expr x = mutate(*value);
            done.emplace(v->name, x);
            return x;
        }
        Expr visit(const Let *op) override {  // an inner Let shadows nothing we track: expand its body in place
            return mutate(substitute(op->name, op->value, op->body));
        }
    } m(lets);
    return simplify(m.mutate(e));
}

std::string text(const Expr &e) {
    std::ostringstream o;
    o << e;
    return o.str();
}

Expr scalar_base(const Expr &index) {
    if (const Ramp *r = index.as<Ramp>()) return r->base;
    if (const Broadcast *b = index.as<Broadcast>()) return b->value;
    return index;
}

struct ThreadLoop {
    std::string name;
    int extent;
};

// Every access of `alloc` in a statement: its index expanded (lets inside it are tracked; those outside come from
// `outer`), the conditions it runs under and the constant ranges of the loops around it inside the statement.
class CollectAccesses : public IRVisitor {
public:
    CollectAccesses(const std::string &alloc, const Scope<Expr> &outer) : alloc(alloc) {
        lets.set_containing_scope(&outer);
    }
    struct Access {
        Expr index, guard;
        std::map<std::string, Interval> loops;
    };
    std::vector<Access> accesses;

private:
    const std::string &alloc;
    Scope<Expr> lets;
    std::vector<Expr> guards;
    std::map<std::string, Interval> loops;
    using IRVisitor::visit;
    void visit(const LetStmt *op) override {
        op->value.accept(this);
        ScopedBinding<Expr> b(lets, op->name, op->value);
        op->body.accept(this);
    }
    void visit(const Let *op) override {
        op->value.accept(this);
        ScopedBinding<Expr> b(lets, op->name, op->value);
        op->body.accept(this);
    }
    void visit(const IfThenElse *op) override {
        op->condition.accept(this);
        const Expr c = expand(op->condition, lets);
        guards.push_back(c);
        op->then_case.accept(this);
        guards.back() = !c;
        if (op->else_case.defined()) op->else_case.accept(this);
        guards.pop_back();
    }
    void visit(const For *op) override {
        op->min.accept(this);
        op->extent.accept(this);
        auto lo = as_const_int(expand(op->min, lets)), n = as_const_int(expand(op->extent, lets));
        if (lo && n) loops[op->name] = Interval(int(*lo), int(*lo + *n - 1));
        op->body.accept(this);
        loops.erase(op->name);
    }
    void record(const Expr &index) {
        Expr guard = const_true();
        for (const Expr &g : guards) guard = guard && g;
        accesses.push_back({expand(index, lets), guard, loops});
    }
    void visit(const Load *op) override {
        if (op->name == alloc) record(op->index);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        if (op->name == alloc) record(op->index);
        IRVisitor::visit(op);
    }
};

// Job 4: an output whose pure definition is undef (the tensor-core outputs are written by their update
// only) counts as used on the host in Halide's AddImageChecks, which sees the undef Provide in host loops
// before it is removed, and gets a "host pointer is null" assertion; a caller handing the kernel device
// memory only (the C API, PyTorch) then fails. The assertion is dropped for every output that the
// lowered statement neither loads nor stores outside a device loop nor copies to the host.
class HostAccesses : public IRVisitor {
public:
    std::set<std::string> names;

private:
    int device_loops = 0;
    using IRVisitor::visit;
    void visit(const For *op) override {
        const bool device = op->device_api != DeviceAPI::None && op->device_api != DeviceAPI::Host;
        device_loops += device;
        IRVisitor::visit(op);
        device_loops -= device;
    }
    void visit(const Load *op) override {
        if (!device_loops) names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        if (!device_loops) names.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Call *op) override {
        if (op->name == "halide_copy_to_host" && !op->args.empty())
            if (const Variable *v = op->args[0].as<Variable>())
                names.insert(v->name.substr(0, v->name.rfind(".buffer")));
        IRVisitor::visit(op);
    }
};

Stmt drop_device_only_host_checks(const Stmt &s) {
    HostAccesses host;
    s.accept(&host);
    struct Drop : IRMutator {
        const std::set<std::string> &on_host;
        explicit Drop(const std::set<std::string> &h) : on_host(h) {}
        using IRMutator::visit;
        Stmt visit(const AssertStmt *op) override {
            const Call *c = op->message.as<Call>();
            const std::string prefix = "Output buffer ";
            if (c && c->name == "halide_error_host_is_null" && !c->args.empty())
                if (const StringImm *what = c->args[0].as<StringImm>())
                    if (what->value.rfind(prefix, 0) == 0 && !on_host.count(what->value.substr(prefix.size())))
                        return Evaluate::make(0);
            return op;
        }
    } drop(host.names);
    return drop.mutate(s);
}

class MmaLowering : public IRMutator {
public:
    MmaLowering(std::string kernel, std::vector<std::string> striped)
        : kernel(std::move(kernel)), striped_funcs(std::move(striped)) {}

private:
    std::string kernel;
    std::vector<std::string> striped_funcs;
    Scope<Expr> lets;
    Scope<MemoryType> memory;
    std::vector<ThreadLoop> threads;         // enclosing gpu_threads loops
    std::vector<ThreadLoop> lanes;           // enclosing gpu_lanes loops
    std::vector<Expr> conditions;            // enclosing if conditions
    std::map<std::string, int> stripe_size;  // striped allocation -> values each thread keeps

    [[noreturn]] void fail(const std::string &msg) const {
        throw CompileError("tensor-core kernel " + kernel + ": " + msg);
    }

    bool is_striped(const std::string &alloc) const {
        for (const auto &f : striped_funcs)
            if (alloc == f || alloc.rfind(f + ".", 0) == 0) return true;
        return false;
    }

    std::map<std::string, Expr> thread_zero() const {
        std::map<std::string, Expr> z;
        for (const auto &t : threads) z[t.name] = 0;
        return z;
    }
    // The enclosing thread loops' values of warp w (0 to the product of their extents), the first loop fastest.
    std::map<std::string, Expr> warp(int w) const {
        std::map<std::string, Expr> point;
        for (int i = 0, rest = w; i < int(threads.size()); rest /= threads[i].extent, ++i)
            point[threads[i].name] = rest % threads[i].extent;
        return point;
    }

    // Whether an access whose warp offset `d` differs in form from the slice's `offset` is at that offset in every
    // warp that can run it: under a condition that holds for some warps only (a partial tile's stores skip the
    // warps past N), Halide's simplifier substitutes the warp index the condition implies (e.g. tz * 16 for
    // (tz * 2 + ty) * 8 where ty < 1 is known). Each of the `warps` warps of the enclosing thread loops in turn:
    // skipped where the condition is false for all its lanes (the loops' ranges known), else the two offsets must be
    // equal there. A first access so specialized becomes `offset` and fails the others loudly, never silently.
    bool same_slice_where_run(const Expr &d, const Expr &offset, const CollectAccesses::Access &access,
                              int warps) const {
        Scope<Interval> ranges;
        for (const auto &[name, range] : access.loops) ranges.push(name, range);
        for (const auto &t : lanes) ranges.push(t.name, Interval(0, t.extent - 1));
        for (int w = 0; w < warps; ++w) {
            const std::map<std::string, Expr> point = warp(w);
            if (is_const_zero(simplify(substitute(point, access.guard), true, ranges))) continue;
            if (!can_prove(substitute(point, d) == substitute(point, offset))) return false;
        }
        return true;
    }

    bool top = true;         // the whole statement: Halide hands the pass its root once
    bool in_kernel = false;  // inside a kernel's outermost block loop

    Stmt mutate(const Stmt &s) override {
        if (!top) return IRMutator::mutate(s);
        top = false;
        Stmt out = drop_device_only_host_checks(IRMutator::mutate(s));
        top = true;
        return out;
    }
    using IRMutator::mutate;
    using IRMutator::visit;

    Stmt visit(const For *op) override {
        // A kernel (its outermost block loop) with wgmma: the panels' barriers fenced for the async proxy.
        if (op->for_type == ForType::GPUBlock && !in_kernel) {
            in_kernel = true;
            Stmt s = IRMutator::visit(op);
            in_kernel = false;
            return has_wgmma(s) ? fence_barriers(s) : s;
        }
        std::optional<ThreadLoop> t;
        if (op->for_type == ForType::GPUThread || op->for_type == ForType::GPULane) {
            auto e = as_const_int(op->extent);
            t = ThreadLoop{op->name, e ? int(*e) : -1};
            (op->for_type == ForType::GPUThread ? threads : lanes).push_back(*t);
        }
        Stmt s = IRMutator::visit(op);
        if (t) (op->for_type == ForType::GPUThread ? threads : lanes).pop_back();
        return s;
    }

    Stmt visit(const IfThenElse *op) override {
        Expr cond = mutate(op->condition);
        conditions.push_back(cond);
        Stmt then_case = mutate(op->then_case);
        Stmt else_case = op->else_case.defined() ? mutate(op->else_case) : Stmt();
        conditions.pop_back();
        return IfThenElse::make(cond, then_case, else_case);
    }

    Stmt visit(const LetStmt *op) override {
        Expr value = mutate(op->value);
        ScopedBinding<Expr> b(lets, op->name, value);
        return LetStmt::make(op->name, value, mutate(op->body));
    }

    Expr visit(const Let *op) override {
        Expr value = mutate(op->value);
        ScopedBinding<Expr> b(lets, op->name, value);
        return Let::make(op->name, value, mutate(op->body));
    }

    Stmt visit(const Allocate *op) override {
        ScopedBinding<MemoryType> m(memory, op->name, op->memory_type);
        if (!is_striped(op->name) || threads.empty()) return IRMutator::visit(op);
        const int size = op->constant_allocation_size();
        if (size <= 0) fail("accumulator " + op->name + " has no constant size");
        int warps = 1;
        for (const auto &t : threads) {
            if (t.extent <= 0) fail("thread loop " + t.name + " has no constant extent");
            warps *= t.extent;
        }
        if (size % warps)
            fail("accumulator " + op->name + " (" + std::to_string(size) + " values) does not split over " +
                 std::to_string(warps) + " warps");
        const int slice = size / warps;
        CollectAccesses acc(op->name, lets);
        op->body.accept(&acc);
        if (acc.accesses.empty()) fail("accumulator " + op->name + " is never accessed");
        const auto zero = thread_zero();
        Expr offset;  // the warp's slice start, the same expression for every access
        for (const auto &access : acc.accesses) {
            Expr base = scalar_base(access.index);
            Expr own = simplify(substitute(zero, base));
            auto c = as_const_int(own);
            if (!c || *c < 0 || *c >= slice)
                fail("accumulator " + op->name + " is accessed at " + text(base) +
                     ", not at a constant index of its warp's slice of " + std::to_string(slice) +
                     " (it would live in local memory)");
            Expr d = simplify(base - own);
            if (!offset.defined()) offset = d;
            else if (!equal(d, offset) && !can_prove(d == offset) && !same_slice_where_run(d, offset, access, warps))
                fail("accumulator " + op->name + " is accessed by warp at " + text(d) + " and at " + text(offset) +
                     ": not one slice per warp");
        }
        // The slice starts of the warps: 0, slice, 2 * slice, ... each once.
        std::set<int64_t> starts;
        std::vector<int> at(threads.size(), 0);
        for (int w = 0; w < warps; ++w) {
            const std::map<std::string, Expr> point = warp(w);
            auto s = as_const_int(simplify(substitute(point, offset)));
            if (!s || *s % slice || *s < 0 || *s >= size || !starts.insert(*s).second)
                fail("accumulator " + op->name + ": warp slices at " + text(offset) +
                     " do not tile the allocation one slice per warp");
        }
        stripe_size[op->name] = slice;
        Stmt body = mutate(op->body);
        stripe_size.erase(op->name);
        return Allocate::make(op->name, op->type, op->memory_type, {slice}, op->condition, body, op->new_expr,
                              op->free_function, op->padding);
    }

    Expr own_slice_index(const Expr &index) const { return simplify(substitute(thread_zero(), expand(index, lets))); }

    Expr visit(const Load *op) override {
        if (!stripe_size.count(op->name)) return IRMutator::visit(op);
        return Load::make(op->type, op->name, own_slice_index(op->index), op->image, op->param, mutate(op->predicate),
                          ModulusRemainder());
    }

    Stmt visit(const Store *op) override {
        if (!stripe_size.count(op->name)) return IRMutator::visit(op);
        return Store::make(op->name, mutate(op->value), own_slice_index(op->index), op->param, mutate(op->predicate),
                           ModulusRemainder());
    }

    // The shared-memory load an ldmatrix argument stands for (directly, or through a let).
    const Load *shared_load(const Expr &arg, const std::string &what) const {
        Expr e = arg;
        while (const Variable *v = e.as<Variable>()) {
            const Expr *value = lets.find(v->name);
            if (!value) break;
            e = *value;
        }
        const Load *l = e.as<Load>();
        if (!l) fail("ldmatrix " + what + " is not a load from shared memory: " + text(arg));
        const MemoryType *m = memory.find(l->name);
        if (!m || *m != MemoryType::GPUShared)
            fail("ldmatrix reads " + l->name + ", which is not a GPUShared allocation of this kernel");
        if (l->type != UInt(16) && l->type != Int(16) && l->type != Float(16) && l->type != BFloat(16))
            fail("ldmatrix reads " + l->name + " as " + type_to_c_type(l->type, false) + ", not as 16-bit elements");
        if (!is_const_one(l->predicate)) fail("ldmatrix reads " + l->name + " under a predicate");
        return l;
    }

    void check_converged(const std::string &call) const {
        if (lanes.size() != 1 || lanes[0].extent != mma::kWarp)
            fail(call + " is not inside one gpu_lanes loop of extent 32 (mma.sync and ldmatrix need the whole warp)");
        for (const Expr &c : conditions) {
            bool thread_dependent = expr_uses_var(expand(c, lets), lanes[0].name);
            for (const auto &t : threads) thread_dependent = thread_dependent || expr_uses_var(expand(c, lets), t.name);
            if (thread_dependent)
                fail(call + " is under the thread-dependent condition " + text(c) + " (lanes would diverge)");
        }
    }

    // A 16-bit element index into a shared allocation, proved a multiple of 8 (16 bytes), as ldmatrix rows and wgmma
    // tiles must start.
    void require_16_byte_aligned(const Expr &start, const std::string &what, const std::string &alloc,
                                 const std::string &hint) const {
        ModulusRemainder mr = modulus_remainder(start);
        if (mr.modulus % 8 != 0 || mr.remainder % 8 != 0)
            fail(what + " " + text(start) + " in " + alloc + " is not provably 16-byte aligned" + hint);
    }

    // A wgmma operand's tile from its panel elements at (k, row) = (0, 0), (0, 1), (8, 0), (0, 8) and its last
    // (generators/mma.h): {shared byte address, the descriptor's leading and stride byte offsets, its layout type
    // (generators/mma_abi.h)}, having checked the layout the descriptor describes: core matrices (row (0, 1) 8 elements
    // on), or the 128-byte swizzle (row (0, 1) a 64-element line and one chunk on: chunk 1 ^ 1 of the tile's first two,
    // which start at an even chunk of a 1024-byte aligned atom).
    std::vector<Expr> wgmma_operand(const Call *op, size_t at, const std::string &which, int rows) const {
        const Load *l[5];
        for (int j = 0; j < 5; ++j) l[j] = shared_load(op->args[at + j], "wgmma " + which + " tile");
        for (int j = 1; j < 5; ++j)
            if (l[j]->name != l[0]->name) fail("wgmma " + which + " tile spans two allocations");
        const Expr start = expand(l[0]->index, lets);
        int64_t step[4];
        for (int j = 1; j < 5; ++j) {
            const Expr d = simplify(expand(l[j]->index, lets) - start);
            auto c = as_const_int(d);
            if (!c) fail("wgmma " + which + " tile in " + l[0]->name + ": element offset " + text(d) + " not constant");
            step[j - 1] = *c;
        }
        const int64_t row = step[0], lbo = step[1], sbo = step[2], last = step[3];
        const std::string tile = "wgmma " + which + " tile in " + l[0]->name;
        const int bytes = l[0]->type.bytes();  // the descriptor holds each offset in 14 bits of 16 bytes
        require_16_byte_aligned(start, "wgmma " + which + " tile start", l[0]->name, "");
        if (row == 8 + 64) {
            // 128-byte swizzle: 64 elements a row, the tile's chunks c0, c0 + 1 (c0 even) of the atom's 8
            const ModulusRemainder mr = modulus_remainder(start);
            const int64_t atom = 8 * 64, c0 = mr.remainder % atom / 8;
            if (mr.modulus % atom != 0 || mr.remainder % 16 != 0 || c0 > 6)
                fail(tile + ": the 128-byte swizzle's atom is not provably 1024-byte aligned (tile start " +
                     text(start) + ")");
            const int64_t want_last = atom * (rows / 8 - 1) + 7 * 64 + 8 * (((c0 + 1) ^ 7) - c0) + 7;
            if (lbo != 8 || sbo != atom || last != want_last)
                fail(tile + " is not in 128-byte swizzled rows (K chunk " + std::to_string(lbo) +
                     " elements on, row 8 " + std::to_string(sbo) + ", the last element at " + std::to_string(last) +
                     ", expected 8, " + std::to_string(atom) + ", " + std::to_string(want_last) + ")");
            return {cast(Int(32), l[0]->index) * bytes, Expr(16), Expr(int(atom * bytes)), Expr(mma::kWgmmaSwizzle128)};
        }
        if (row != 8)
            fail(tile + ": rows " + std::to_string(row) +
                 " elements apart, not 8 (a core matrix is 8 rows of 16 contiguous bytes) nor 72 (128-byte swizzle)");
        const int64_t want_last = 7 + 8 * 7 + lbo + sbo * (rows / 8 - 1);
        if (lbo <= 0 || sbo <= 0 || lbo % 8 || sbo % 8 || last != want_last || lbo * bytes >= (1 << 18) ||
            sbo * bytes >= (1 << 18))
            fail(tile + " is not in core matrices (core matrices " + std::to_string(lbo) + " elements apart along K, " +
                 std::to_string(sbo) + " along the rows, the last element at " + std::to_string(last) + ", expected " +
                 std::to_string(want_last) + ")");
        return {cast(Int(32), l[0]->index) * bytes, Expr(int(lbo * bytes)), Expr(int(sbo * bytes)),
                Expr(mma::kWgmmaInterleave)};
    }

    Expr visit(const Call *op) override {
        if (!is_warp_instruction(op->name)) return IRMutator::visit(op);
        check_converged(op->name);
        if (is_wgmma(op->name)) {
            if (op->args.size() != 13)
                fail(op->name + " with " + std::to_string(op->args.size()) + " arguments (expected 13)");
            auto n = as_const_int(op->args[1]);
            if (!n || *n < 8 || *n > mma::kWgmmaMaxN || *n % 8) fail(op->name + " with n = " + text(op->args[1]));
            std::vector<Expr> args{mutate(op->args[0]), op->args[1]};
            for (const Expr &e : wgmma_operand(op, 2, "A", mma::kWgmmaM)) args.push_back(mutate(e));
            for (const Expr &e : wgmma_operand(op, 7, "B", int(*n))) args.push_back(mutate(e));
            args.push_back(mutate(op->args[12]));
            return Call::make(op->type, op->name, args, op->call_type);
        }
        if (!is_ldmatrix(op->name)) return IRMutator::visit(op);
        if (op->args.size() != 3)
            fail(op->name + " with " + std::to_string(op->args.size()) + " arguments (expected 3)");
        const Load *first = shared_load(op->args[1], "row start"), *last = shared_load(op->args[2], "row end");
        if (first->name != last->name) fail("ldmatrix row spans two allocations");
        Expr start = expand(first->index, lets);
        Expr span = simplify(expand(last->index, lets) - start);
        if (!is_const(span, 7))
            fail("ldmatrix row in " + first->name + " is not 8 contiguous elements (last - first = " + text(span) +
                 "): the panel's k must be its innermost storage dimension");
        require_16_byte_aligned(start, "ldmatrix row start", first->name,
                                " (pad panel rows to a multiple of 8 elements)");
        Expr address = cast(Int(32), first->index) * first->type.bytes();
        return Call::make(op->type, op->name, {mutate(op->args[0]), mutate(address)}, op->call_type);
    }
};

}  // namespace

Halide::Internal::IRMutator *make_mma_lowering_pass(const std::string &kernel, std::vector<std::string> warp_striped) {
    return new MmaLowering(kernel, std::move(warp_striped));
}

}  // namespace blockfuse
