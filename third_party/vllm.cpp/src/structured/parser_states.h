// The pushdown automaton that matches a Grammar over bytes, with every
// parser state interned so that the per-token work is table lookups.
//
// A stack is a chain of nodes (parent, position): the top's position is the
// byte set to match next, the others are where to continue after the rule
// below them completes. Nodes are hash-consed, so equal stacks are one id,
// and a parser state - the set of stacks an ambiguous grammar can be in -
// is a sorted list of top-node ids, itself interned to one state id.
// next(state, byte) is computed once and then read from a 256-entry row, so
// walking the vocabulary trie costs one load per trie node.
//
// Node 0 is the empty stack: the grammar has matched completely. State 0 is
// the dead state (no stack survives).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "structured/byte_set.h"
#include "structured/grammar.h"

namespace vllm::structured {

class ParserStates {
public:
    static constexpr int32_t kDead = 0;
    // The most parse stacks one state may track. An ambiguous grammar (rules
    // that match the same text in many ways) can need exponentially many;
    // past this bound the state is refused with INVALID_ARGUMENT rather than
    // spend minutes and gigabytes of a shared engine. A choice list of
    // 100,000 strings needs 100,000.
    static constexpr size_t kMaxStacksPerState = size_t(1) << 17;

    explicit ParserStates(std::shared_ptr<const Grammar> grammar);

    // The state before any byte (the root rule's alternatives expanded).
    int32_t initial() const { return initial_; }

    int32_t next(int32_t state, uint8_t byte) {
        const size_t slot = static_cast<size_t>(state) * 256 + byte;
        if (transitions_[slot] != kUnknown) return transitions_[slot];
        // Indexed again after the call: interning a new state grows (and
        // may move) transitions_, so no reference into it may live across it.
        const int32_t target = compute_next(state, byte);
        transitions_[slot] = target;
        return target;
    }
    // kDead when some byte is rejected.
    int32_t advance(int32_t state, std::string_view bytes);

    // The grammar can end here (some stack is empty).
    bool can_end(int32_t state) const { return can_end_[state]; }
    // The bytes some stack can match next.
    ByteSet allowed_bytes(int32_t state) const;

    size_t state_count() const { return states_.size(); }

    // Forgets every state but `keep` (bounding the memory of a long
    // generation); returns keep's id afterwards. Ids handed out before are
    // invalid after this.
    int32_t compact(int32_t keep);

    const Grammar& grammar() const { return *grammar_; }

private:
    static constexpr int32_t kUnknown = -1;
    struct Node {
        int32_t parent;
        int32_t position;
    };

    int32_t intern_node(int32_t parent, int32_t position);
    int32_t intern_state(std::vector<int32_t> tops);
    int32_t compute_next(int32_t state, uint8_t byte);
    // Adds to `tops` the stacks reached from (parent, position) by expanding
    // rule references and completing finished alternatives.
    void expand(int32_t parent, int32_t position, std::vector<int32_t>& tops);
    void reset();

    struct VectorHash {
        size_t operator()(const std::vector<int32_t>& v) const;
    };

    std::shared_ptr<const Grammar> grammar_;
    std::vector<Node> nodes_;
    std::unordered_map<uint64_t, int32_t> node_ids_;
    std::vector<std::vector<int32_t>> states_;
    std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> state_ids_;
    std::vector<bool> can_end_;
    std::vector<int32_t> transitions_;  // 256 per state
    std::unordered_set<uint64_t> visited_;  // (parent, position) pairs of one expansion
    std::vector<std::pair<int32_t, int32_t>> expand_todo_;  // expand()'s work list, kept for its capacity
    uint64_t expansions_ = 0;  // expand() steps, for its periodic deadline check
    int32_t initial_ = kDead;
};

}  // namespace vllm::structured
