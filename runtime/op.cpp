#include "runtime/op.h"
#include "runtime/block.h"
#include "runtime/gemm.h"
#include "runtime/conv_nd.h"
#include "runtime/pool.h"
#include "runtime/stem.h"

namespace blockfuse {

std::vector<std::string> Op::tunable_knobs(const std::string &strategy, Device d) const {
    std::vector<std::string> out;
    for (const KnobDecl &k : schedule_knob_table(family(strategy), d).knobs) out.push_back(k.name);
    return out;
}

// One line per family; conv2d last: its parser names a key of no family ("family 'x' ...").
std::unique_ptr<Op> parse_op(const std::string &key) {
    if (is_block_key(key)) return block_op(key);
    if (is_stem_key(key)) return stem_op(key);
    if (is_gemm_key(key)) return gemm_op(key);
    if (is_pool_key(key)) return pool_op(key);
    if (is_conv1d_key(key)) return conv1d_op(key);
    if (is_conv3d_key(key)) return conv3d_op(key);
    return conv2d_op(key);
}

}  // namespace blockfuse
