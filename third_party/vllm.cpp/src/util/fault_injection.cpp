#include "util/fault_injection.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

namespace vllm::fault {
namespace {

constexpr int kPoints = 3;
constexpr const char* kNames[kPoints] = {"kv_cache_allocate", "tokenize", "grammar_compile"};

struct Plan {
    long every[kPoints] = {};  // 0: not armed
    bool any = false;
    std::string error;         // a malformed VLLM_CPP_INJECT_FAULTS
};

Plan parse(const char* spec) {
    Plan plan;
    if (spec == nullptr || *spec == '\0') return plan;
    const std::string text = spec;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find(',', start), text.size());
        const std::string item = text.substr(start, end - start);
        const size_t colon = item.find(':');
        const std::string name = item.substr(0, colon);
        int index = -1;
        for (int i = 0; i < kPoints; ++i)
            if (name == kNames[i]) index = i;
        char* tail = nullptr;
        const long every = colon == std::string::npos ? 0 : std::strtol(item.c_str() + colon + 1, &tail, 10);
        if (index < 0 || every < 1 || tail == nullptr || *tail != '\0') {
            plan.error = "VLLM_CPP_INJECT_FAULTS: '" + item +
                         "' is not POINT:N (N >= 1; points: kv_cache_allocate, tokenize, grammar_compile)";
            return plan;
        }
        plan.every[index] = every;
        plan.any = true;
        start = end + 1;
    }
    return plan;
}

const Plan& plan() {
    static const Plan p = parse(std::getenv("VLLM_CPP_INJECT_FAULTS"));
    return p;
}

std::atomic<long> g_passes[kPoints];

}  // namespace

void maybe_fail(Point point) {
    const Plan& p = plan();
    if (!p.any && p.error.empty()) return;
    if (!p.error.empty()) throw std::invalid_argument(p.error);
    const int i = static_cast<int>(point);
    if (p.every[i] == 0) return;
    if ((g_passes[i].fetch_add(1, std::memory_order_relaxed) + 1) % p.every[i] == 0) throw std::bad_alloc();
}

}  // namespace vllm::fault
