// The one guard every recursive walk of untrusted input goes through (JSON,
// GBNF, regex, JSON Schema and its $ref resolution, the Jinja parser and
// evaluator, tool-call parsers): each step of the recursion holds a
// RecursionGuard, which refuses to go deeper with INVALID_ARGUMENT
// "<walk> is nested too deeply (limit N levels ...)" when the walk passes
// its fixed depth cap or when the stack of the thread it runs on is about
// to run short, whichever comes first. The stack check is what makes a walk
// safe on any thread (a host's small-stack threads, Python worker threads):
// the fixed caps alone assumed a main thread's 8 MiB.
#pragma once
#include <cstddef>
#include <string>

#include "util/error.h"

namespace vllm {

// Stack bytes a guard keeps free below itself on the calling thread: what
// the deepest step between two guards, the error's formatting and the
// exception's unwinding may use. Exposed for tests.
size_t recursion_stack_reserve();
// Stack bytes left below the caller's frame on this thread; SIZE_MAX when
// the thread's stack bounds are unknown (e.g. the caller runs on a stack
// the thread did not start with, a coroutine's), where only the caps hold.
size_t remaining_stack();
// remaining_stack() < recursion_stack_reserve(), in one call.
bool stack_runs_short();

// One kind of recursive walk: its name in errors and its fixed depth cap.
struct RecursionLimit {
    const char* walk;  // "JSON", "a group", ... (the subject of "is nested too deeply")
    int max_depth;
};

class RecursionGuard {
public:
    // Enters one level of `limit`'s walk; `depth` is the walk's own counter
    // (a member of the walking object, which lives on one thread). Refused:
    // INVALID_ARGUMENT with the message below.
    RecursionGuard(const RecursionLimit& limit, int& depth)
        : RecursionGuard(limit, depth, [](const std::string& why) { throw_invalid_argument(why); }) {}
    // The same, refused through `refuse(message)`, which must throw (a
    // parser's own error type, with its position).
    template <class Refuse>
    RecursionGuard(const RecursionLimit& limit, int& depth, Refuse&& refuse) : depth_(depth) {
        if (!allows(limit, depth + 1)) {
            refuse(refusal(limit, depth + 1));
            throw_invalid_argument(refusal(limit, depth + 1));  // refuse() did not throw
        }
        ++depth;
    }
    ~RecursionGuard() { --depth_; }
    RecursionGuard(const RecursionGuard&) = delete;
    RecursionGuard& operator=(const RecursionGuard&) = delete;

    // Whether a walk may enter level `depth`: within its cap and with the
    // stack reserve left below the caller's frame.
    static bool allows(const RecursionLimit& limit, int depth) {
        return depth <= limit.max_depth && !stack_runs_short();
    }
    // "<walk> is nested too deeply (limit N levels[, fewer on this thread: ...])".
    static std::string refusal(const RecursionLimit& limit, int depth);

private:
    int& depth_;
};

}  // namespace vllm
