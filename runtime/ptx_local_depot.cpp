#include "runtime/ptx_local_depot.h"
#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace blockfuse::ptx {
namespace {

// Bytes one ld.local/st.local moves (`ld.local.v2.b64` 16, `st.local.f32` 4) starting at `at` (the "ld"/"st");
// 0 where the text is not such an access.
int access_bytes(std::string_view line, size_t at) {
    std::string_view rest = line.substr(at + 2);
    if (rest.substr(0, 7) != ".local.") return 0;
    rest.remove_prefix(7);
    int lanes = 1;
    if (rest.size() > 2 && rest[0] == 'v' && (rest[1] == '2' || rest[1] == '4' || rest[1] == '8') && rest[2] == '.') {
        lanes = rest[1] - '0';
        rest.remove_prefix(3);
    }
    if (rest.empty() || std::string_view("bsuf").find(rest[0]) == std::string_view::npos) return 0;
    const int bits = std::atoi(std::string(rest.substr(1, 3)).c_str());
    return bits >= 8 ? lanes * bits / 8 : 0;
}

}  // namespace

int align_local_depots(std::string &ptx) {
    // A depot is declared at the top of its function's body: its accesses are the lines up to the next function.
    struct Depot {
        size_t align_at = 0, align_len = 0;  // the alignment's digits in the text
        int align = 0, widest = 0;
    };
    std::vector<Depot> depots;
    bool open = false;
    for (size_t line_start = 0; line_start < ptx.size();) {
        size_t end = ptx.find('\n', line_start);
        if (end == std::string::npos) end = ptx.size();
        const std::string_view line(ptx.data() + line_start, end - line_start);
        if (line.find(".entry ") != std::string_view::npos || line.find(".func ") != std::string_view::npos) {
            open = false;
        } else if (const size_t d = line.find(".local .align ");
                   d != std::string_view::npos && line.find("__local_depot") != std::string_view::npos) {
            const size_t digits = d + 14, space = line.find(' ', digits);
            open = space != std::string_view::npos;  // `.align A .b8 ...`: else not a depot this reads
            if (open)
                depots.push_back({line_start + digits, space - digits,
                                  std::atoi(std::string(line.substr(digits, space - digits)).c_str()), 0});
        } else if (open) {
            for (size_t at = line.find(".local."); at != std::string_view::npos && at >= 2;
                 at = line.find(".local.", at + 1))
                if (line.substr(at - 2, 2) == "ld" || line.substr(at - 2, 2) == "st")
                    depots.back().widest = std::max(depots.back().widest, access_bytes(line, at - 2));
        }
        line_start = end + 1;
    }
    int raised = 0;
    for (auto d = depots.rbegin(); d != depots.rend(); ++d)  // from the end: earlier offsets stay valid
        if (d->widest > d->align) {
            ptx.replace(d->align_at, d->align_len, std::to_string(d->widest));
            ++raised;
        }
    return raised;
}

}  // namespace blockfuse::ptx
