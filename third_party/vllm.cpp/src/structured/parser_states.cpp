#include "structured/parser_states.h"

#include <algorithm>

#include "structured/work_deadline.h"
#include "util/error.h"

namespace vllm::structured {

namespace {
uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}
}  // namespace

size_t ParserStates::VectorHash::operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
}

ParserStates::ParserStates(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
    reset();
    std::vector<int32_t> tops;
    visited_.clear();
    for (int32_t start : grammar_->alternatives(grammar_->root())) expand(0, start, tops);
    initial_ = intern_state(std::move(tops));
}

void ParserStates::reset() {
    nodes_.assign(1, Node{-1, -1});  // node 0: the empty stack
    node_ids_.clear();
    states_.clear();
    state_ids_.clear();
    can_end_.clear();
    transitions_.clear();
    intern_state({});  // state 0: dead
}

int32_t ParserStates::intern_node(int32_t parent, int32_t position) {
    auto [it, inserted] = node_ids_.emplace(pair_key(parent, position), static_cast<int32_t>(nodes_.size()));
    if (inserted) nodes_.push_back({parent, position});
    return it->second;
}

int32_t ParserStates::intern_state(std::vector<int32_t> tops) {
    std::sort(tops.begin(), tops.end());
    tops.erase(std::unique(tops.begin(), tops.end()), tops.end());

    auto found = state_ids_.find(tops);
    if (found != state_ids_.end()) return found->second;
    const int32_t id = static_cast<int32_t>(states_.size());
    can_end_.push_back(!tops.empty() && tops[0] == 0);
    state_ids_.emplace(tops, id);
    states_.push_back(std::move(tops));
    transitions_.resize(transitions_.size() + 256, id == kDead ? kDead : kUnknown);
    return id;
}

void ParserStates::expand(int32_t parent, int32_t position, std::vector<int32_t>& tops) {
    // A work list, not recursion: a grammar's chain of leading rule
    // references can be as long as the grammar itself, and must not exhaust
    // the thread's stack. `tops` is a set (intern_state sorts it), so the
    // order in which pairs are expanded does not matter.
    std::vector<std::pair<int32_t, int32_t>>& todo = expand_todo_;
    todo.assign(1, {parent, position});
    while (!todo.empty()) {
        const auto [p, pos] = todo.back();
        todo.pop_back();
        // One expansion can be most of a state's work (a list of 100,000
        // alternatives); stopping midway leaves only unused interned nodes.
        if ((++expansions_ & 4095) == 0) WorkDeadline::check();
        // Rules that can match nothing may lead back to a pair already
        // expanded (x* over a nullable x): its stacks are already in `tops`.
        if (!visited_.insert(pair_key(p, pos)).second) continue;
        const Element& e = grammar_->elements()[pos];
        switch (e.kind) {
            case ElementKind::Bytes:
                // Checked as the state grows, before the work is spent.
                if (tops.size() == kMaxStacksPerState)
                    throw_invalid_argument("structured output: the grammar is too ambiguous: a parser state would "
                                           "track more than " + std::to_string(kMaxStacksPerState) +
                                           " parse stacks (its rules match the same text in too many ways)");
                tops.push_back(intern_node(p, pos));
                break;
            case ElementKind::End:
                if (p == 0)
                    tops.push_back(0);
                else
                    todo.push_back({nodes_[p].parent, nodes_[p].position});
                break;
            case ElementKind::Rule: {
                // A reference in tail position returns straight to our caller,
                // so right recursion (x*) keeps the stack flat.
                const int32_t after = pos + 1;
                const int32_t return_to =
                    grammar_->elements()[after].kind == ElementKind::End ? p : intern_node(p, after);
                for (int32_t start : grammar_->alternatives(e.value)) todo.push_back({return_to, start});
                break;
            }
        }
    }
}

int32_t ParserStates::compute_next(int32_t state, uint8_t byte) {
    WorkDeadline::check();  // before anything changes: stopped work leaves the states consistent
    std::vector<int32_t> tops;
    visited_.clear();
    for (int32_t top : states_[state]) {
        if (top == 0) continue;
        const Node node = nodes_[top];
        const Element& e = grammar_->elements()[node.position];
        if (grammar_->byte_set(e.value).contains(byte)) expand(node.parent, node.position + 1, tops);
    }
    return intern_state(std::move(tops));
}

int32_t ParserStates::advance(int32_t state, std::string_view bytes) {
    for (char c : bytes) {
        state = next(state, static_cast<uint8_t>(c));
        if (state == kDead) return kDead;
    }
    return state;
}

ByteSet ParserStates::allowed_bytes(int32_t state) const {
    ByteSet set;
    for (int32_t top : states_[state])
        if (top != 0) set.merge(grammar_->byte_set(grammar_->elements()[nodes_[top].position].value));
    return set;
}

int32_t ParserStates::compact(int32_t keep) {
    // Each kept stack as its positions from the bottom up, re-interned after the reset.
    std::vector<std::vector<int32_t>> stacks;
    for (int32_t top : states_[keep]) {
        std::vector<int32_t> positions;
        for (int32_t n = top; n != 0; n = nodes_[n].parent) positions.push_back(nodes_[n].position);
        std::reverse(positions.begin(), positions.end());
        stacks.push_back(std::move(positions));
    }
    reset();
    std::vector<int32_t> tops;
    for (const std::vector<int32_t>& positions : stacks) {
        int32_t node = 0;
        for (int32_t p : positions) node = intern_node(node, p);
        tops.push_back(node);
    }
    const int32_t kept = intern_state(std::move(tops));
    // The initial state is needed again only by a new matcher; keep it valid anyway.
    std::vector<int32_t> initial_tops;
    visited_.clear();
    for (int32_t start : grammar_->alternatives(grammar_->root())) expand(0, start, initial_tops);
    initial_ = intern_state(std::move(initial_tops));
    return kept;
}

}  // namespace vllm::structured
