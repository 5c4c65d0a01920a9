#include "structured/grammar.h"

#include <algorithm>

#include "util/error.h"

namespace vllm::structured {

void GrammarBuilder::fail(const std::string& message) const {
    throw_invalid_argument(origin_ + ": " + message);
}

int32_t GrammarBuilder::rule(const std::string& name) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const int32_t id = static_cast<int32_t>(names_.size());
    ids_.emplace(name, id);
    names_.push_back(name);
    rules_.emplace_back();
    defined_.push_back(false);
    helper_.push_back(false);
    first_referrer_.push_back(-1);
    return id;
}

void GrammarBuilder::define(int32_t rule, std::vector<Sequence> alternatives) {
    if (defined_[rule]) fail("rule '" + names_[rule] + "' is defined twice");
    rules_[rule] = std::move(alternatives);
    defined_[rule] = true;
}

void GrammarBuilder::note_reference(int32_t rule, int32_t from_rule) {
    if (first_referrer_[rule] < 0) first_referrer_[rule] = from_rule;
}

int32_t GrammarBuilder::add_helper_rule(const std::string& base, std::vector<Sequence> alternatives) {
    std::string name;
    do {
        name = base + "-" + std::to_string(++helper_counter_);
    } while (ids_.count(name));
    const int32_t id = rule(name);
    helper_[id] = true;
    define(id, std::move(alternatives));
    return id;
}

Element GrammarBuilder::bytes(const ByteSet& set) {
    for (size_t i = 0; i < byte_sets_.size(); ++i)
        if (byte_sets_[i] == set) return {ElementKind::Bytes, static_cast<int32_t>(i)};
    byte_sets_.push_back(set);
    return {ElementKind::Bytes, static_cast<int32_t>(byte_sets_.size() - 1)};
}

Element GrammarBuilder::literal_byte(uint8_t b) {
    ByteSet set;
    set.add(b);
    return bytes(set);
}

Sequence GrammarBuilder::literal(const std::string& utf8_text) {
    Sequence seq;
    for (unsigned char c : utf8_text) seq.push_back(literal_byte(c));
    return seq;
}

Element GrammarBuilder::char_class(const std::vector<CodepointRange>& ranges, const std::string& base) {
    const std::vector<CodepointRange> normal = normalize_ranges(ranges);
    if (normal.empty() || normal.back().hi < 0x80) {
        ByteSet set;
        for (const CodepointRange& r : normal)
            set.add_range(static_cast<uint8_t>(r.lo), static_cast<uint8_t>(r.hi));
        return bytes(set);
    }
    std::vector<uint32_t> key;
    for (const CodepointRange& r : normal) {
        key.push_back(r.lo);
        key.push_back(r.hi);
    }
    auto cached = class_rules_.find(key);
    if (cached != class_rules_.end()) return ref(cached->second);

    // One alternative for all single-byte code points, one per multi-byte pattern.
    ByteSet ascii;
    std::vector<Sequence> alternatives;
    for (const ByteRangeSequence& seq : utf8_sequences(normal)) {
        if (seq.size() == 1) {
            ascii.add_range(seq[0].first, seq[0].second);
            continue;
        }
        Sequence alt;
        for (const auto& range : seq) {
            ByteSet set;
            set.add_range(range.first, range.second);
            alt.push_back(bytes(set));
        }
        alternatives.push_back(std::move(alt));
    }
    if (!ascii.empty()) alternatives.insert(alternatives.begin(), Sequence{bytes(ascii)});
    const int32_t id = add_helper_rule(base + "-char", std::move(alternatives));
    class_rules_.emplace(std::move(key), id);
    return ref(id);
}

Element GrammarBuilder::as_element(const Sequence& seq, const std::string& base) {
    if (seq.size() == 1) return seq[0];
    return ref(add_helper_rule(base, {seq}));
}

Sequence GrammarBuilder::repeat(const Sequence& item, int64_t min, int64_t max, const std::string& base) {
    if (max >= 0 && min > max)
        fail("repetition {" + std::to_string(min) + "," + std::to_string(max) + "} has min > max");
    if (min > kMaxRepetition || max > kMaxRepetition)
        fail("repetition bound " + std::to_string(std::max(min, max)) + " exceeds " +
             std::to_string(kMaxRepetition));
    const Element e = as_element(item, base);
    Sequence out(static_cast<size_t>(min), e);
    if (max < 0) {
        // star ::= e star | ""  (the tail call keeps the matcher's stacks flat)
        const int32_t star = rule(base + "-star-" + std::to_string(++helper_counter_));
        helper_[star] = true;
        define(star, {{e, ref(star)}, {}});
        out.push_back(ref(star));
    } else if (max > min) {
        // opt_k ::= e opt_(k-1) | ""  allows up to k more.
        int32_t previous = add_helper_rule(base + "-opt", {{e}, {}});
        for (int64_t k = 2; k <= max - min; ++k) previous = add_helper_rule(base + "-opt", {{e, ref(previous)}, {}});
        out.push_back(ref(previous));
    }
    return out;
}

std::vector<bool> GrammarBuilder::derivable_rules(bool through_bytes) const {
    // A work list over the alternatives, linear in the grammar's size: an
    // alternative derives once each of its rule references does, so each
    // keeps a count of the references still unproven.
    struct Alternative {
        int32_t rule;
        int64_t unproven;
    };
    std::vector<Alternative> alternatives;
    std::vector<std::vector<int32_t>> occurrences(rules_.size());  // rule -> alternatives it appears in
    std::vector<bool> derives(rules_.size(), false);
    std::vector<int32_t> proven;
    const auto prove = [&](int32_t r) {
        if (derives[r]) return;
        derives[r] = true;
        proven.push_back(r);
    };
    for (size_t r = 0; r < rules_.size(); ++r) {
        for (const Sequence& alt : rules_[r]) {
            bool blocked = false;
            int64_t references = 0;
            for (const Element& e : alt) {
                if (e.kind == ElementKind::Rule)
                    ++references;
                else
                    blocked = blocked || !through_bytes || byte_sets_[e.value].empty();
            }
            if (blocked) continue;
            const auto id = static_cast<int32_t>(alternatives.size());
            alternatives.push_back({static_cast<int32_t>(r), references});
            for (const Element& e : alt)
                if (e.kind == ElementKind::Rule) occurrences[e.value].push_back(id);
            if (references == 0) prove(static_cast<int32_t>(r));
        }
    }
    while (!proven.empty()) {
        const int32_t r = proven.back();
        proven.pop_back();
        for (int32_t id : occurrences[r])
            if (--alternatives[id].unproven == 0) prove(alternatives[id].rule);
    }
    return derives;
}

void GrammarBuilder::drop_unproductive(int32_t root) {
    const std::vector<bool> productive = derivable_rules(true);
    if (!productive[root])
        fail("the grammar admits no text at all (rule '" + names_[root] + "' cannot match any string)");
    for (auto& alternatives : rules_) {
        std::vector<Sequence> kept;
        for (Sequence& alt : alternatives) {
            bool ok = true;
            for (const Element& e : alt)
                ok = ok && (e.kind == ElementKind::Rule ? productive[e.value] : !byte_sets_[e.value].empty());
            if (ok) kept.push_back(std::move(alt));
        }
        alternatives = std::move(kept);
    }
}

void GrammarBuilder::check_left_recursion() const {
    const std::vector<bool> nullable = derivable_rules(false);
    // Edges r -> the rules r can start with, skipping over leading rules
    // that can match nothing.
    const auto n = static_cast<int32_t>(rules_.size());
    std::vector<std::vector<int32_t>> leading(n);
    for (int32_t r = 0; r < n; ++r)
        for (const Sequence& alt : rules_[r])
            for (const Element& e : alt) {
                if (e.kind != ElementKind::Rule) break;
                leading[r].push_back(e.value);
                if (!nullable[e.value]) break;
            }
    // A rule derives itself at its own start exactly when it lies on a cycle
    // of that graph: a strongly connected component with more than one rule,
    // or a rule that leads to itself. Tarjan's algorithm, iteratively (the
    // graph can be as deep as the grammar is long), linear in its size.
    // Helpers can only recurse through a user rule (or, for x*, harmlessly
    // through their own tail), so only user rules are reported: the first
    // one by id, whichever component it is in.
    std::vector<int32_t> index(n, -1), low(n, 0), component(n, -1), stack;
    std::vector<bool> on_stack(n, false);
    std::vector<std::pair<int32_t, size_t>> calls;  // (rule, next edge to visit)
    int32_t next_index = 0, components = 0;
    std::vector<int32_t> component_size;
    for (int32_t root = 0; root < n; ++root) {
        if (index[root] >= 0) continue;
        calls.push_back({root, 0});
        index[root] = low[root] = next_index++;
        stack.push_back(root);
        on_stack[root] = true;
        while (!calls.empty()) {
            auto& [r, edge] = calls.back();
            if (edge < leading[r].size()) {
                const int32_t next = leading[r][edge++];
                if (index[next] < 0) {
                    index[next] = low[next] = next_index++;
                    stack.push_back(next);
                    on_stack[next] = true;
                    calls.push_back({next, 0});
                } else if (on_stack[next]) {
                    low[r] = std::min(low[r], index[next]);
                }
                continue;
            }
            const int32_t done = r;
            calls.pop_back();
            if (!calls.empty()) low[calls.back().first] = std::min(low[calls.back().first], low[done]);
            if (low[done] != index[done]) continue;
            component_size.push_back(0);
            for (int32_t member = -1; member != done;) {
                member = stack.back();
                stack.pop_back();
                on_stack[member] = false;
                component[member] = components;
                ++component_size[components];
            }
            ++components;
        }
    }
    for (int32_t r = 0; r < n; ++r) {
        if (helper_[r]) continue;
        const bool self_loop = std::find(leading[r].begin(), leading[r].end(), r) != leading[r].end();
        if (self_loop || component_size[component[r]] > 1)
            fail("left recursion: rule '" + names_[r] + "' can derive itself at its own start");
    }
}

std::shared_ptr<const Grammar> GrammarBuilder::build(const std::string& root_name) {
    auto root = ids_.find(root_name);
    if (root == ids_.end() || !defined_[root->second]) fail("no rule named '" + root_name + "'");
    for (size_t r = 0; r < rules_.size(); ++r) {
        if (defined_[r]) continue;
        std::string where = first_referrer_[r] >= 0 ? " (referenced by rule '" + names_[first_referrer_[r]] + "')" : "";
        fail("undefined rule '" + names_[r] + "'" + where);
    }
    check_left_recursion();
    drop_unproductive(root->second);

    auto grammar = std::make_shared<Grammar>();
    grammar->rule_names_ = names_;
    grammar->byte_sets_ = byte_sets_;
    grammar->root_ = root->second;
    grammar->rule_alternatives_.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r) {
        for (const Sequence& alt : rules_[r]) {
            grammar->rule_alternatives_[r].push_back(static_cast<int32_t>(grammar->elements_.size()));
            grammar->elements_.insert(grammar->elements_.end(), alt.begin(), alt.end());
            grammar->elements_.push_back({ElementKind::End, 0});
        }
    }
    return grammar;
}

}  // namespace vllm::structured
