#include "schedules/panel_prefetch.h"
#include <algorithm>
#include <map>

namespace blockfuse {
namespace {
using namespace Halide;
using namespace Halide::Internal;

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

class PanelPrefetch : public IRMutator {
public:
    PanelPrefetch(std::string kernel, std::vector<PanelLoop> loops)
        : kernel(std::move(kernel)), loops(std::move(loops)) {}

    // Every named loop must have been met once at least (each specialization is a copy).
    Stmt mutate(const Stmt &s) override {
        const bool top = depth++ == 0;
        Stmt out = IRMutator::mutate(s);
        --depth;
        if (top)
            for (const PanelLoop &l : loops)
                if (!rewritten.count(l.loop)) fail("no K loop named " + l.loop + " to prefetch in");
        return out;
    }
    using IRMutator::mutate;

private:
    std::string kernel;
    std::vector<PanelLoop> loops;
    std::map<std::string, int> rewritten;
    int depth = 0;
    // The register slots of the loop being rewritten: their name and element type.
    std::string slots;
    Type slot_type;

    [[noreturn]] void fail(const std::string &msg) const {
        throw CompileError("tensor-core kernel " + kernel + ": panel prefetch: " + msg);
    }

    // The loop itself, or as Halide's sliding-window pass renames it (".$n" per rewrite) where the panels are
    // stored outside it (the CPU schedule).
    static bool named(std::string name, const std::string &loop) {
        while (name.size() > loop.size() && name.compare(name.size() - 3, 3, ".$n") == 0) name.resize(name.size() - 3);
        return name == loop;
    }

    static bool produces(const Stmt &s, const std::vector<std::string> &panels) {
        const ProducerConsumer *pc = s.as<ProducerConsumer>();
        return pc && pc->is_producer && std::find(panels.begin(), panels.end(), pc->name) != panels.end();
    }

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
        auto it = std::find_if(loops.begin(), loops.end(), [&](const PanelLoop &l) { return named(op->name, l.loop); });
        if (it == loops.end()) return IRMutator::visit(op);
        rewritten[it->loop]++;
        // Lets that open the body (they may use the loop variable) go with each copy of what they enclose.
        std::vector<const LetStmt *> lets;
        Stmt body = op->body;
        while (const LetStmt *l = body.as<LetStmt>()) {
            lets.push_back(l);
            body = l->body;
        }
        auto with_lets = [&](Stmt s) {
            for (auto l = lets.rbegin(); l != lets.rend(); ++l) s = LetStmt::make((*l)->name, (*l)->value, s);
            return s;
        };
        if (body.as<Allocate>())
            fail("the K loop " + op->name + " allocates inside its body: the panels must be stored outside it");
        std::vector<Stmt> parts;
        flatten(body, it->panels, parts);
        // The leading panel loads: producers of the panels and the barriers between and after them.
        size_t loads_end = 0;
        bool barriers = false;
        for (size_t i = 0; i < parts.size(); ++i) {
            if (produces(parts[i], it->panels)) loads_end = i + 1;
            else if (is_barrier(parts[i]) && loads_end > 0) barriers = true;
            else break;
        }
        if (loads_end == 0) fail("the K loop " + op->name + " does not start with its panels' loads");
        while (loads_end < parts.size() && is_barrier(parts[loads_end])) ++loads_end;
        std::vector<Stmt> loads(parts.begin(), parts.begin() + loads_end), rest(parts.begin() + loads_end, parts.end());
        for (const Stmt &s : rest)
            if (produces(s, it->panels)) fail("the K loop " + op->name + " loads a panel after reading one");
        if (rest.empty()) fail("the K loop " + op->name + " reads nothing from its panels");
        // With barriers, the panels may be overwritten only once every thread has read them.
        if (barriers && !is_barrier(rest.back()))
            fail("the K loop " + op->name + " does not end with a barrier after reading its panels");

        slots = unique_name("panel_prefetch");  // not under the loop's Func: the mma pass stripes those
        slot_type = Handle();
        const Stmt load_block = with_lets(Block::make(loads));
        const int count = stored_elements(load_block);
        if (count == 0) fail("the panel loads of " + op->name + " store nothing");
        Expr last = simplify(op->min + op->extent - 1);
        Stmt next_block = substitute(op->name, min(Variable::make(Int(32), op->name) + 1, last), load_block);
        Stmt to_slots = redirect(next_block, 0, Mode::to_slots);
        Stmt from_slots = redirect(next_block, 0, Mode::from_slots);
        Stmt loop_body = Block::make({to_slots, with_lets(Block::make(rest)), from_slots});
        Stmt loop =
            For::make(op->name, op->min, op->extent, op->for_type, op->partition_policy, op->device_api, loop_body);
        Stmt first = IfThenElse::make(op->extent > 0, substitute(op->name, op->min, load_block));
        Stmt pipelined = Block::make({first, loop, Free::make(slots)});
        return Allocate::make(slots, slot_type, MemoryType::Stack, {count}, const_true(), pipelined);
    }
};

}  // namespace

Halide::Internal::IRMutator *make_panel_prefetch_pass(const std::string &kernel, std::vector<PanelLoop> loops) {
    return new PanelPrefetch(kernel, std::move(loops));
}

}  // namespace blockfuse
