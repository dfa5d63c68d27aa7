#include "schedules/panel_prefetch.h"
#include "generators/mma_abi.h"
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace blockfuse {
namespace {
using namespace Halide;
using namespace Halide::Internal;

template <class T>
std::string text(const T &node) {
    std::ostringstream o;
    o << node;
    return o.str();
}

bool is_barrier(const Stmt &s) {
    const Evaluate *e = s.as<Evaluate>();
    const Call *c = e ? e->value.as<Call>() : nullptr;
    return c && c->is_intrinsic(Call::gpu_thread_barrier);
}

// A statement as its sequence of parts; the consume markers of `panels` (Halide nests what follows a producer in
// one) are opened, so the loads and what reads them are one flat list whatever the order of production.
void flatten(const Stmt &s, const std::vector<std::string> &panels, std::vector<Stmt> &out) {
    const ProducerConsumer *pc = s.as<ProducerConsumer>();
    if (const Block *b = s.as<Block>()) {
        flatten(b->first, panels, out);
        flatten(b->rest, panels, out);
    } else if (pc && !pc->is_producer && std::find(panels.begin(), panels.end(), pc->name) != panels.end()) {
        flatten(pc->body, panels, out);
    } else {
        out.push_back(s);
    }
}

// A K loop's body in three parts: the lets that open it (they may use the loop variable; each copy of what
// they enclose takes them along), the leading panel loads (the panels' producers and the barriers between and
// after them) and the rest, which reads the panels. `barriers`: the loads are followed by a barrier.
struct KLoopParts {
    std::vector<const LetStmt *> lets;
    std::vector<Stmt> loads, rest;
    bool barriers = false;
    Stmt with_lets(Stmt s) const {
        for (auto l = lets.rbegin(); l != lets.rend(); ++l) s = LetStmt::make((*l)->name, (*l)->value, s);
        return s;
    }
};

bool produces(const Stmt &s, const std::vector<std::string> &panels) {
    const ProducerConsumer *pc = s.as<ProducerConsumer>();
    return pc && pc->is_producer && std::find(panels.begin(), panels.end(), pc->name) != panels.end();
}

// The loop itself, or as Halide's sliding-window pass renames it (".$n" per rewrite) where the panels are
// stored outside it (the CPU schedules).
bool named(std::string name, const std::string &loop) {
    while (name.size() > loop.size() && name.compare(name.size() - 3, 3, ".$n") == 0) name.resize(name.size() - 3);
    return name == loop;
}

// `fail` is called with the reason where the loop is not of that form.
template <class Fail>
KLoopParts split_k_loop(const For *op, const std::vector<std::string> &panels, const Fail &fail) {
    KLoopParts k;
    Stmt body = op->body;
    while (const LetStmt *l = body.as<LetStmt>()) {
        k.lets.push_back(l);
        body = l->body;
    }
    if (body.as<Allocate>())
        fail("the K loop " + op->name + " allocates inside its body: the panels must be stored outside it");
    std::vector<Stmt> parts;
    flatten(body, panels, parts);
    size_t loads_end = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (produces(parts[i], panels)) loads_end = i + 1;
        else if (is_barrier(parts[i]) && loads_end > 0) k.barriers = true;
        else break;
    }
    if (loads_end == 0) fail("the K loop " + op->name + " does not start with its panels' loads");
    while (loads_end < parts.size() && is_barrier(parts[loads_end])) ++loads_end;
    k.loads.assign(parts.begin(), parts.begin() + loads_end);
    k.rest.assign(parts.begin() + loads_end, parts.end());
    for (const Stmt &s : k.rest)
        if (produces(s, panels)) fail("the K loop " + op->name + " loads a panel after reading one");
    if (k.rest.empty()) fail("the K loop " + op->name + " reads nothing from its panels");
    // With barriers, the panels may be overwritten only once every thread has read them.
    if (k.barriers && !is_barrier(k.rest.back()))
        fail("the K loop " + op->name + " does not end with a barrier after reading its panels");
    return k;
}

// The values a loop's variable takes, bounded over `scope`.
Interval loop_range(const For *f, const Scope<Interval> &scope) {
    return Interval(bounds_of_expr_in_scope(f->min, scope).min,
                    bounds_of_expr_in_scope(simplify(f->min + f->extent - 1), scope).max);
}

// What both passes share: the named K loops, each of which must be met once at least (each specialization is a
// copy), and errors that name the kernel and the pass.
class KLoopPass : public IRMutator {
public:
    KLoopPass(std::string kernel, std::vector<PanelLoop> loops, std::string pass)
        : kernel(std::move(kernel)), loops(std::move(loops)), pass(std::move(pass)) {}

    Stmt mutate(const Stmt &s) override {
        const bool top = depth++ == 0;
        Stmt out = IRMutator::mutate(s);
        --depth;
        if (top)
            for (const PanelLoop &l : loops)
                if (!rewritten.count(l.loop)) fail("no K loop named " + l.loop + " to pipeline");
        return out;
    }
    using IRMutator::mutate;

protected:
    std::string kernel;
    std::vector<PanelLoop> loops;
    std::string pass;
    std::map<std::string, int> rewritten;
    int depth = 0;

    [[noreturn]] void fail(const std::string &msg) const {
        throw CompileError("tensor-core kernel " + kernel + ": " + pass + ": " + msg);
    }
    // The named loop `op` is (counted as met), or null.
    const PanelLoop *k_loop(const For *op) {
        auto it = std::find_if(loops.begin(), loops.end(), [&](const PanelLoop &l) { return named(op->name, l.loop); });
        if (it == loops.end()) return nullptr;
        rewritten[it->loop]++;
        return &*it;
    }
    KLoopParts split(const For *op, const PanelLoop &l) const {
        return split_k_loop(op, l.panels, [this](const std::string &m) { fail(m); });
    }
};

class PanelPrefetch : public KLoopPass {
public:
    PanelPrefetch(std::string kernel, std::vector<PanelLoop> loops)
        : KLoopPass(std::move(kernel), std::move(loops), "panel prefetch") {}

private:
    // The register slots of the loop being rewritten: their name and element type.
    std::string slots;
    Type slot_type;

    // Elements a statement stores, counted statically: loops of constant extent times their body, both arms
    // of a condition. Anything but stores, lets, conditions, loops and barriers is refused.
    int stored_elements(const Stmt &s) const {
        if (!s.defined()) return 0;
        if (const Block *b = s.as<Block>()) return stored_elements(b->first) + stored_elements(b->rest);
        if (const For *f = s.as<For>()) {
            const auto extent = as_const_int(f->extent);
            if (!extent) fail("the panel load loop " + f->name + " has no constant extent");
            return int(*extent) * stored_elements(f->body);
        }
        if (const IfThenElse *c = s.as<IfThenElse>())
            return stored_elements(c->then_case) + stored_elements(c->else_case);
        if (const LetStmt *l = s.as<LetStmt>()) return stored_elements(l->body);
        if (const ProducerConsumer *pc = s.as<ProducerConsumer>()) return stored_elements(pc->body);
        if (const Store *st = s.as<Store>()) return st->value.type().lanes();
        if (is_barrier(s)) return 0;
        fail("unexpected statement in the panel loads: " +
             std::string(s->node_type == IRNodeType::Allocate ? "an allocation" : "a node it cannot count stores of"));
    }

    enum class Mode { to_slots, from_slots };
    // `s` with every store redirected (to_slots: its value into the register slots from `slot` on, barriers
    // dropped; from_slots: the slots' values into the store's own buffer and index, barriers kept).
    Stmt redirect(const Stmt &s, const Expr &slot, Mode mode) {
        if (!s.defined()) return s;
        if (const Block *b = s.as<Block>())
            return Block::make(redirect(b->first, slot, mode),
                               redirect(b->rest, simplify(slot + stored_elements(b->first)), mode));
        if (const For *f = s.as<For>()) {
            Expr inner = simplify(slot + (Variable::make(Int(32), f->name) - f->min) * stored_elements(f->body));
            return For::make(f->name, f->min, f->extent, f->for_type, f->partition_policy, f->device_api,
                             redirect(f->body, inner, mode));
        }
        if (const IfThenElse *c = s.as<IfThenElse>())
            return IfThenElse::make(c->condition, redirect(c->then_case, slot, mode),
                                    redirect(c->else_case, simplify(slot + stored_elements(c->then_case)), mode));
        if (const LetStmt *l = s.as<LetStmt>()) return LetStmt::make(l->name, l->value, redirect(l->body, slot, mode));
        if (const ProducerConsumer *pc = s.as<ProducerConsumer>())
            return ProducerConsumer::make(pc->name, pc->is_producer, redirect(pc->body, slot, mode));
        if (const Store *st = s.as<Store>()) {
            const Type t = st->value.type();
            if (!slot_type.is_handle() && t.element_of() != slot_type)
                fail("the panels store both " + type_to_c_type(slot_type, false) + " and " +
                     type_to_c_type(t.element_of(), false));
            slot_type = t.element_of();
            Expr index = t.lanes() == 1 ? slot : Ramp::make(slot, 1, t.lanes());
            if (mode == Mode::to_slots)
                return Store::make(slots, st->value, index, Parameter(), st->predicate, ModulusRemainder());
            Expr held = Load::make(t, slots, index, Buffer<>(), Parameter(), st->predicate, ModulusRemainder());
            return Store::make(st->name, held, st->index, st->param, st->predicate, st->alignment);
        }
        if (is_barrier(s)) return mode == Mode::to_slots ? Evaluate::make(0) : s;
        stored_elements(s);  // fails, naming the node
        return s;
    }

    Stmt visit(const For *op) override {
        const PanelLoop *l = k_loop(op);
        if (!l) return IRMutator::visit(op);
        const KLoopParts k = split(op, *l);

        slots = unique_name("panel_prefetch");  // not under the loop's Func: the mma pass stripes those
        slot_type = Handle();
        const Stmt load_block = k.with_lets(Block::make(k.loads));
        const int count = stored_elements(load_block);
        if (count == 0) fail("the panel loads of " + op->name + " store nothing");
        Expr last = simplify(op->min + op->extent - 1);
        Stmt next_block = substitute(op->name, min(Variable::make(Int(32), op->name) + 1, last), load_block);
        Stmt to_slots = redirect(next_block, 0, Mode::to_slots);
        Stmt from_slots = redirect(next_block, 0, Mode::from_slots);
        Stmt loop_body = Block::make({to_slots, k.with_lets(Block::make(k.rest)), from_slots});
        Stmt loop =
            For::make(op->name, op->min, op->extent, op->for_type, op->partition_policy, op->device_api, loop_body);
        Stmt first = IfThenElse::make(op->extent > 0, substitute(op->name, op->min, load_block));
        Stmt pipelined = Block::make({first, loop, Free::make(slots)});
        return Allocate::make(slots, slot_type, MemoryType::Stack, {count}, const_true(), pipelined);
    }
};

// The multi-stage ring (schedules/panel_prefetch.h): the panels' allocations hold `stages` copies; K step p's loads
// go to copy p % stages, issued stages - 1 steps ahead of the step that reads them.
class PanelPipeline : public KLoopPass {
public:
    PanelPipeline(std::string kernel, std::vector<PanelLoop> loops, bool async)
        : KLoopPass(std::move(kernel), std::move(loops), "panel pipeline"), async(async) {}

private:
    bool async;
    Scope<int> sizes;                                    // enclosing allocations: elements (0 if not constant)
    std::map<std::string, int> staged;                   // allocations the rewritten loops use -> stages
    std::map<std::string, int> stage_elements;           // of the loop being rewritten: its panel allocations' spans
    std::map<std::string, int> spans;                    // allocations the rewritten loops use -> their spans
    std::map<std::string, std::string> device_pointers;  // of the kernel being rewritten: buffer -> its variable
    bool in_kernel = false;
    Scope<> kernel_allocations;     // made inside the kernel (shared memory, registers): no cp.async source
    Scope<Interval> ranges;         // the enclosing loops' variables and lets' values (panel_span's bounds)
    Scope<Stmt> allocation_bodies;  // the enclosing allocations' bodies (panel_span's scan ahead of the K loop)

    using IRMutator::visit;

    // Halide pools a kernel's shared allocations into one, so a panel's allocation may also hold memory used only
    // past the K loop (the epilogue's staged C tile, schedules/gemm_schedule.cpp), which needs no copies. The copies
    // then need only the span the K loop's loads store (elements, a whole number of 16-byte rows), and the allocation
    // the larger of `stages` of them and its own size: the rest lies over copies 1 and on, dead by then (the loop's
    // last barrier and its final cp.async wait). The whole allocation where that span has no constant bound or the
    // allocation is touched ahead of the loop (memory that may be live across it).
    int panel_span(const std::string &alloc, int size, const KLoopParts &k) const {
        // (the CPU's panels, lifted out of the K loop by this pass, are no allocation met here)
        if (!allocation_bodies.contains(alloc) || touched_ahead_of_k_loop(allocation_bodies.get(alloc), alloc))
            return size;
        // The last element the loads store: each store's index bounded over the loops and lets around it.
        struct LastStored : IRVisitor {
            const std::string &alloc;
            Scope<Interval> scope;
            Expr last;
            int bytes = 1;  // of an element
            bool unbounded = false;
            LastStored(const std::string &a, const Scope<Interval> &outer) : alloc(a) {
                scope.set_containing_scope(&outer);
            }
            using IRVisitor::visit;
            void visit(const For *f) override {
                ScopedBinding<Interval> b(scope, f->name, loop_range(f, scope));
                f->body.accept(this);
            }
            void visit(const LetStmt *l) override {
                ScopedBinding<Interval> b(scope, l->name, bounds_of_expr_in_scope(l->value, scope));
                l->body.accept(this);
            }
            void visit(const Store *st) override {
                IRVisitor::visit(st);
                if (st->name != alloc) return;
                bytes = st->value.type().bytes();
                const Ramp *r = st->index.as<Ramp>();
                const Expr at = r ? r->base + r->stride * (r->lanes - 1) : st->index;
                const Interval i = bounds_of_expr_in_scope(at, scope);
                if (!i.has_upper_bound()) unbounded = true;
                else last = last.defined() ? max(last, i.max) : i.max;
            }
        } stored(alloc, ranges);
        k.with_lets(Block::make(k.loads)).accept(&stored);
        if (stored.unbounded || !stored.last.defined()) return size;
        const auto last = as_const_int(simplify(stored.last));
        if (!last || *last + 1 >= size) return size;
        const int row = 16 / std::max(1, stored.bytes);
        return std::min(size, int((*last + 1 + row - 1) / row * row));
    }

    // Whether `body` reads or writes `alloc` ahead of any K loop (a kernel's statements run in IR order).
    bool touched_ahead_of_k_loop(const Stmt &body, const std::string &alloc) const {
        struct Scan : IRVisitor {
            const std::vector<PanelLoop> &loops;
            const std::string &alloc;
            bool done = false, touched = false;
            Scan(const std::vector<PanelLoop> &l, const std::string &a) : loops(l), alloc(a) {}
            using IRVisitor::visit;
            void visit(const For *f) override {
                for (const PanelLoop &l : loops)
                    if (named(f->name, l.loop)) done = true;
                if (!done) IRVisitor::visit(f);
            }
            void visit(const Load *l) override {
                touched |= !done && l->name == alloc;
                IRVisitor::visit(l);
            }
            void visit(const Store *st) override {
                touched |= !done && st->name == alloc;
                IRVisitor::visit(st);
            }
        } scan(loops, alloc);
        body.accept(&scan);
        return scan.touched;
    }

    Stmt visit(const LetStmt *op) override {
        ScopedBinding<Interval> b(ranges, op->name, bounds_of_expr_in_scope(op->value, ranges));
        Stmt body = mutate(op->body);
        return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
    }

    Stmt visit(const Allocate *op) override {
        Stmt body;
        {
            ScopedBinding<Stmt> t(allocation_bodies, op->name, op->body);
            ScopedBinding<int> b(sizes, op->name, int(op->constant_allocation_size()));
            ScopedBinding<> k(in_kernel, kernel_allocations, op->name);
            body = mutate(op->body);
        }
        auto it = staged.find(op->name);
        if (it == staged.end())
            return body.same_as(op->body)
                       ? Stmt(op)
                       : Allocate::make(op->name, op->type, op->memory_type, op->extents, op->condition, body,
                                        op->new_expr, op->free_function, op->padding);
        const int stages = it->second;
        staged.erase(it);
        return with_copies(op, body, stages);
    }

    // `a` holding `stages` copies of itself (the copies outermost: its flat last extent scaled) around `body`.
    Stmt with_copies(const Allocate *a, const Stmt &body, int stages) {
        std::vector<Expr> extents = a->extents;
        const int size = int(a->constant_allocation_size()), span = spans.count(a->name) ? spans.at(a->name) : size;
        // (the last extent scaled: 1-D in a kernel, as Halide pools shared memory)
        extents.back() = span < size && extents.size() == 1 ? Expr(std::max(size, stages * span))
                                                            : simplify(extents.back() * stages);
        spans.erase(a->name);
        return Allocate::make(a->name, a->type, a->memory_type, extents, a->condition, body, a->new_expr,
                              a->free_function, a->padding);
    }

    // `index` moved to copy `stage` of its allocation.
    Expr in_stage(const std::string &alloc, const Expr &index, const Expr &stage) const {
        Expr offset = stage * stage_elements.at(alloc);
        if (const Ramp *r = index.as<Ramp>()) return Ramp::make(simplify(r->base + offset), r->stride, r->lanes);
        return simplify(index + offset);
    }

    // The 16-byte global row a panel store copies, and the (uniform) condition under which it is not zero:
    // value = [select(c, ] [reinterpret(] load [)] [, 0)], nested selects' conditions and-ed.
    std::pair<const Load *, Expr> global_row(const Store *st) const {
        const std::string where = "the store into " + st->name + " at " + text(st->index);
        Expr v = st->value, cond = const_true();
        for (;;) {
            if (const Select *sel = v.as<Select>()) {
                // The zero on either side (the simplifier puts it where it likes).
                const bool zero_true = is_const_zero(sel->true_value);
                if (!zero_true && !is_const_zero(sel->false_value))
                    fail(where + " selects between two values that are not zero (cp.async can only fill zeros): " +
                         text(st->value));
                Expr c = sel->condition;
                if (const Broadcast *b = c.as<Broadcast>()) c = b->value;
                if (!c.type().is_scalar())
                    fail(where + " reads under a condition that differs between the row's elements (cp.async copies "
                                 "whole 16-byte rows: channels a multiple of 8)");
                cond = cond && (zero_true ? !c : c);
                v = zero_true ? sel->false_value : sel->true_value;
            } else if (const Reinterpret *r = v.as<Reinterpret>()) {
                v = r->value;
            } else {
                break;
            }
        }
        const Load *ld = v.as<Load>();
        const Ramp *r = ld ? ld->index.as<Ramp>() : nullptr;
        if (!ld || !r || !is_const_one(r->stride) || ld->type.bits() * ld->type.lanes() != 128)
            fail(where + " is not a copy of 16 contiguous bytes from global memory (" + text(st->value) +
                 "): cp.async needs whole 16-byte rows (channels a multiple of 8)");
        // A global buffer the pipeline allocates (a previous layer's output) is copied like an input; memory of the
        // kernel itself is not global.
        if (kernel_allocations.contains(ld->name))
            fail(where + " reads " + ld->name + ", an allocation of the kernel, not global memory");
        if (!is_const_one(ld->predicate)) fail(where + " reads under a predicate");
        const int lanes = ld->type.lanes();
        if (ld->alignment.modulus % lanes || ld->alignment.remainder % lanes)
            fail(where + " reads " + ld->name + " at a row start not provably 16-byte aligned");
        return {ld, simplify(cond)};
    }

    // The load block's stores redirected into copy `stage` (`valid`: the step exists; past the last one the
    // copy is filled with zeros and reads nothing). Async: each store one cp.async of 16 bytes, barriers dropped.
    Stmt to_stage(const Stmt &s, const Expr &stage, const Expr &valid) {
        if (!s.defined()) return s;
        if (const Block *b = s.as<Block>())
            return Block::make(to_stage(b->first, stage, valid), to_stage(b->rest, stage, valid));
        if (const For *f = s.as<For>())
            return For::make(f->name, f->min, f->extent, f->for_type, f->partition_policy, f->device_api,
                             to_stage(f->body, stage, valid));
        if (const IfThenElse *c = s.as<IfThenElse>())
            return IfThenElse::make(c->condition, to_stage(c->then_case, stage, valid),
                                    to_stage(c->else_case, stage, valid));
        if (const LetStmt *l = s.as<LetStmt>())
            return LetStmt::make(l->name, l->value, to_stage(l->body, stage, valid));
        if (const ProducerConsumer *pc = s.as<ProducerConsumer>())
            return ProducerConsumer::make(pc->name, pc->is_producer, to_stage(pc->body, stage, valid));
        if (is_barrier(s)) return async ? Evaluate::make(0) : s;
        const Store *st = s.as<Store>();
        if (!st) fail("unexpected statement in the panel loads: " + text(s));
        if (!stage_elements.count(st->name)) fail("the panel loads store into " + st->name + ", not a panel");
        if (!is_const_one(st->predicate)) fail("the store into " + st->name + " is predicated");
        const Expr index = in_stage(st->name, st->index, stage);
        // A row known to be zero (past N or in the padding, where the simplifier proved it) stays a plain store: the
        // copy it writes is not read before the barrier that makes it visible.
        if (!async || is_const_zero(st->value))
            return Store::make(st->name, select(valid, st->value, make_zero(st->value.type())), index, st->param,
                               st->predicate, ModulusRemainder());
        auto [ld, cond] = global_row(st);
        const Ramp *dst = index.as<Ramp>();
        if (!dst || !is_const_one(dst->stride) || st->value.type().bits() * st->value.type().lanes() != 128)
            fail("the store into " + st->name + " at " + text(st->index) + " is not one 16-byte row");
        const Type elem = st->value.type().element_of();
        if (st->alignment.modulus % dst->lanes || st->alignment.remainder % dst->lanes ||
            stage_elements.at(st->name) * elem.bytes() % 16)
            fail("the store into " + st->name + " at " + text(st->index) + " is not provably 16-byte aligned");
        // The source address: the buffer's device pointer (a kernel argument of its own, set where the kernel is
        // launched; Halide 21 has no address-of) plus the row's byte offset.
        std::string &ptr = device_pointers[ld->name];
        if (ptr.empty()) ptr = unique_name("bf_device_" + ld->name);
        Expr src = Variable::make(UInt(64), ptr) +
                   cast(UInt(64), cast(Int(64), ld->index.as<Ramp>()->base) * ld->type.bytes());
        Expr dst_bytes = simplify(cast(Int(32), dst->base) * elem.bytes());
        Expr src_bytes = select(valid && cond, 16, 0);
        return Evaluate::make(Call::make(Int(32), mma::kCpAsync16, {dst_bytes, src, src_bytes}, Call::Extern));
    }

    // The reads of the panels moved to copy `stage`; a store into a panel there is refused.
    Stmt reading(const Stmt &s, const Expr &stage) {
        struct Reading : IRMutator {
            PanelPipeline &pass;
            Expr stage;
            Reading(PanelPipeline &p, Expr s) : pass(p), stage(std::move(s)) {}
            using IRMutator::visit;
            Expr visit(const Load *op) override {
                Expr index = mutate(op->index);
                if (!pass.stage_elements.count(op->name))
                    return index.same_as(op->index) ? Expr(op)
                                                    : Load::make(op->type, op->name, index, op->image, op->param,
                                                                 mutate(op->predicate), op->alignment);
                return Load::make(op->type, op->name, pass.in_stage(op->name, index, stage), op->image, op->param,
                                  mutate(op->predicate), ModulusRemainder());
            }
            Stmt visit(const Store *op) override {
                if (pass.stage_elements.count(op->name))
                    pass.fail("the K loop stores into the panel " + op->name + " after its loads");
                return IRMutator::visit(op);
            }
        } m(*this, stage);
        return m.mutate(s);
    }

    static Stmt call(const char *name, std::vector<Expr> args) {
        return Evaluate::make(Call::make(Int(32), name, std::move(args), Call::Extern));
    }

    // A kernel (its outermost GPU block loop) whose copies read buffers: their device pointers bound where it is
    // launched (after Halide's copies to the device), so the kernel takes them as arguments.
    Stmt kernel(const For *op) {
        in_kernel = true;
        device_pointers.clear();
        Stmt s = IRMutator::visit(op);
        in_kernel = false;
        for (const auto &[buffer, var] : device_pointers) {
            Expr handle = Variable::make(type_of<struct halide_buffer_t *>(), buffer + ".buffer");
            s = LetStmt::make(var, Call::make(UInt(64), Call::buffer_get_device, {handle}, Call::Extern), s);
        }
        device_pointers.clear();
        return s;
    }

    // The CPU schedule allocates each K step's panels inside the loop: the allocations lifted out of it (their
    // sizes must not depend on the step), their frees dropped.
    Stmt lift_panel_allocations(const For *op, const PanelLoop &l, std::vector<const Allocate *> &lifted) {
        struct Lift : IRMutator {
            const PanelLoop &l;
            std::vector<const Allocate *> &lifted;
            Lift(const PanelLoop &l, std::vector<const Allocate *> &lifted) : l(l), lifted(lifted) {}
            using IRMutator::visit;
            bool panel(const std::string &n) const {
                return std::find(l.panels.begin(), l.panels.end(), n) != l.panels.end();
            }
            Stmt visit(const Allocate *a) override {
                if (!panel(a->name)) return IRMutator::visit(a);
                lifted.push_back(a);
                return mutate(a->body);
            }
            Stmt visit(const Free *f) override { return panel(f->name) ? Evaluate::make(0) : Stmt(f); }
        } lift(l, lifted);
        Stmt body = lift.mutate(op->body);
        for (const Allocate *a : lifted)
            for (const Expr &e : a->extents)
                if (!is_const(e)) fail("the panel " + a->name + " has no constant size in the K loop " + op->name);
        return For::make(op->name, op->min, op->extent, op->for_type, op->partition_policy, op->device_api, body);
    }

    Stmt visit(const For *op) override {
        if (async && !in_kernel && op->for_type == ForType::GPUBlock) return kernel(op);
        const PanelLoop *l = k_loop(op);
        if (!l) {
            ScopedBinding<Interval> b(ranges, op->name, loop_range(op, ranges));
            return IRMutator::visit(op);
        }
        const int S = l->stages;
        if (S < 2) fail("the K loop " + op->name + " with " + std::to_string(S) + " stages (at least 2)");
        std::vector<const Allocate *> lifted;
        Stmt lifted_loop;
        if (!async) {
            lifted_loop = lift_panel_allocations(op, *l, lifted);
            op = lifted_loop.as<For>();
        }
        for (const Allocate *a : lifted) sizes.push(a->name, int(a->constant_allocation_size()));
        Stmt result = pipeline(op, l, S);
        for (const Allocate *a : lifted) {
            sizes.pop(a->name);
            staged.erase(a->name);  // allocated here, with its copies
            result = with_copies(a, result, S);
        }
        return result;
    }

    Stmt pipeline(const For *op, const PanelLoop *l, int S) {
        KLoopParts k = split(op, *l);
        if (async && !k.barriers)
            fail("the K loop " + op->name + " has no barrier between its panels' loads and their reads");
        const Stmt barrier = async ? k.loads.back() : Stmt();
        if (async) k.rest.pop_back();  // the next step's leading barrier guards the copy this step read

        // The allocations the loads store into: found outside the loop, of a constant size.
        stage_elements.clear();
        struct Stores : IRVisitor {
            std::set<std::string> names;
            using IRVisitor::visit;
            void visit(const Store *op) override {
                names.insert(op->name);
                IRVisitor::visit(op);
            }
        } stores;
        for (const Stmt &s : k.loads) s.accept(&stores);
        for (const std::string &a : stores.names) {
            const int *size = sizes.find(a);
            if (!size) fail("the panel " + a + " is not allocated outside the K loop " + op->name);
            if (*size <= 0) fail("the panel " + a + " has no constant size");
            if (auto it = staged.find(a); it != staged.end() && it->second != S)
                fail("the panel " + a + " is pipelined with " + std::to_string(it->second) + " and " +
                     std::to_string(S) + " stages");
            staged[a] = S;
            stage_elements[a] = panel_span(a, *size, k);
            spans[a] = std::max(spans.count(a) ? spans[a] : 0, stage_elements[a]);
        }

        const Expr p = Variable::make(Int(32), op->name), first = op->min, last = simplify(op->min + op->extent - 1);
        const Stmt load_block = k.with_lets(Block::make(k.loads));
        auto copies = [&](const Expr &step) {
            Stmt block = substitute(op->name, min(step, last), load_block);
            return to_stage(block, simplify((step - first) % S), simplify(step <= last));
        };
        std::vector<Stmt> prologue;
        for (int s = 0; s + 1 < S; ++s) {
            prologue.push_back(copies(simplify(first + s)));
            if (async) prologue.push_back(call(mma::kCpAsyncCommit, {}));
        }
        std::vector<Stmt> body;
        if (async) {
            body.push_back(call(mma::kCpAsyncWait, {S - 2}));  // step p's copies have landed (this thread's)
            body.push_back(barrier);                           // ... every thread's, and step p - 1 is read
        }
        body.push_back(copies(p + (S - 1)));
        if (async) body.push_back(call(mma::kCpAsyncCommit, {}));
        body.push_back(reading(k.with_lets(Block::make(k.rest)), simplify((p - first) % S)));
        Stmt loop = For::make(op->name, op->min, op->extent, op->for_type, op->partition_policy, op->device_api,
                              Block::make(body));
        std::vector<Stmt> out{IfThenElse::make(op->extent > 0, Block::make(prologue)), loop};
        if (async) {
            out.push_back(call(mma::kCpAsyncWait, {0}));  // nothing in flight past the loop
            // ... and, the loop's trailing barrier dropped above, every thread's copies landed and every warp's reads
            // done before memory that Halide pools with the panels (panel_span) is written.
            out.push_back(barrier);
        }
        stage_elements.clear();
        return Block::make(out);
    }
};

}  // namespace

Halide::Internal::IRMutator *make_panel_prefetch_pass(const std::string &kernel, std::vector<PanelLoop> loops) {
    return new PanelPrefetch(kernel, std::move(loops));
}

Halide::Internal::IRMutator *make_panel_pipeline_pass(const std::string &kernel, std::vector<PanelLoop> loops,
                                                      bool async) {
    return new PanelPipeline(kernel, std::move(loops), async);
}

}  // namespace blockfuse
