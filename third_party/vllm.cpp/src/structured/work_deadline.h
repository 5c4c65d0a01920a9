// A deadline for grammar work on the calling thread: the structured-output
// budget's time limit. A WorkDeadline in scope makes WorkDeadline::check()
// (called where the automaton computes a new transition, the work that
// grows without bound) throw DeadlinePassed once its time is up, so a
// compile or a mask that would take too long stops instead of holding a
// thread. Checks are made before any state changes, so the matcher whose
// work was stopped stays usable and keeps what it computed.
#pragma once
#include <chrono>
#include <string>

#include "util/error.h"

namespace vllm::structured {

// INVALID_ARGUMENT, its message naming the budget that was exceeded.
class DeadlinePassed : public Error {
public:
    explicit DeadlinePassed(const std::string& message) : Error(VLLM_ERR_INVALID_ARGUMENT, message) {}
};

class WorkDeadline {
public:
    using Clock = std::chrono::steady_clock;
    // `expired_message`: what DeadlinePassed says (the budget and how to raise it).
    WorkDeadline(Clock::time_point at, std::string expired_message);
    ~WorkDeadline();  // the enclosing deadline (if any) applies again
    WorkDeadline(const WorkDeadline&) = delete;
    WorkDeadline& operator=(const WorkDeadline&) = delete;

    // Throws DeadlinePassed when the innermost deadline of this thread has
    // passed; nothing without one.
    static void check();

private:
    Clock::time_point at_;
    std::string expired_message_;
    WorkDeadline* enclosing_;
};

}  // namespace vllm::structured
