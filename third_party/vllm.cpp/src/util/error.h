// The engine's one exception type: every internal failure is thrown as an
// Error carrying the C ABI status it maps to, and api/c_api.cpp turns it
// into that status plus vllm_last_error().
#pragma once
#include <stdexcept>
#include <string>

#include "vllm.h"

namespace vllm {

class Error : public std::runtime_error {
public:
    Error(vllm_status status, const std::string& message)
        : std::runtime_error(message), status_(status) {}
    vllm_status status() const { return status_; }

private:
    vllm_status status_;
};

[[noreturn]] inline void throw_invalid_argument(const std::string& message) {
    throw Error(VLLM_ERR_INVALID_ARGUMENT, message);
}
[[noreturn]] inline void throw_model_load(const std::string& message) {
    throw Error(VLLM_ERR_MODEL_LOAD, message);
}
[[noreturn]] inline void throw_runtime(const std::string& message) {
    throw Error(VLLM_ERR_RUNTIME, message);
}

}  // namespace vllm
