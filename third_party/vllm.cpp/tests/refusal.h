// The INVALID_ARGUMENT text an engine call throws, for the native test
// programs that check refusals by their words (the parsers' tests).
#pragma once
#include <functional>
#include <string>

#include "util/error.h"

namespace vllm_test {

// The INVALID_ARGUMENT message `build` throws ("" when it throws none; an
// error of another status is named as unexpected).
inline std::string refusal(const std::function<void()>& build) {
    try {
        build();
    } catch (const vllm::Error& e) {
        if (e.status() == VLLM_ERR_INVALID_ARGUMENT) return e.what();
        return std::string("unexpected status: ") + e.what();
    }
    return "";
}

}  // namespace vllm_test
