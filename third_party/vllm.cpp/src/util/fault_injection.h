// Test-only failure points at the engine's allocation boundaries, so the
// suite can show that an allocation failure there fails only the request
// it touches (issue 15, "fault injection").
//
// Armed by the environment variable VLLM_CPP_INJECT_FAULTS, read once at
// the first check: a comma-separated list of POINT:N, where every N-th
// pass through POINT (1: every pass) throws std::bad_alloc, as a failed
// allocation there would. Points: kv_cache_allocate (KV blocks for a
// scheduled request), tokenize (encoding a prompt), grammar_compile
// (compiling a structured-output constraint). An unknown point or a bad N
// makes the first check throw std::invalid_argument naming it, so a typo
// cannot pass silently. Unset, a check costs a load and a branch.
#pragma once

namespace vllm::fault {

enum class Point { KvCacheAllocate, Tokenize, GrammarCompile };

// Throws std::bad_alloc when `point` is armed and this pass is its N-th.
void maybe_fail(Point point);

}  // namespace vllm::fault
