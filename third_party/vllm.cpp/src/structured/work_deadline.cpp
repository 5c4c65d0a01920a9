// The calling thread's innermost WorkDeadline, and its check.
#include "structured/work_deadline.h"

namespace vllm::structured {

namespace {
thread_local WorkDeadline* t_current = nullptr;
}  // namespace

WorkDeadline::WorkDeadline(Clock::time_point at, std::string expired_message)
    : at_(at), expired_message_(std::move(expired_message)), enclosing_(t_current) {
    t_current = this;
}

WorkDeadline::~WorkDeadline() { t_current = enclosing_; }

void WorkDeadline::check() {
    const WorkDeadline* deadline = t_current;
    if (deadline != nullptr && Clock::now() >= deadline->at_) throw DeadlinePassed(deadline->expired_message_);
}

}  // namespace vllm::structured
