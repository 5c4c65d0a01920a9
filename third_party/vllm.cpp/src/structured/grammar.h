// The compiled form of every constraint: rules of alternatives over byte
// sets and rule references, laid out flat so that a parser position is one
// integer (an index into elements()).
//
// All front ends (GBNF text, regular expressions, JSON Schema, choice lists)
// end here through GrammarBuilder, which lowers code point classes to UTF-8
// byte patterns and repetitions to helper rules, and whose build() refuses
// undefined rules and left recursion.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "structured/byte_set.h"
#include "structured/utf8_ranges.h"

namespace vllm::structured {

// The deepest nesting of parenthesized groups the GBNF and regex parsers
// accept. They descend recursively, and untrusted text must not run the
// thread out of stack (100,000 nested groups did).
constexpr int kMaxGroupNesting = 256;

enum class ElementKind : uint8_t {
    Bytes,  // value: index of a byte set; matches one byte in it
    Rule,   // value: rule id
    End,    // ends an alternative
};

struct Element {
    ElementKind kind;
    int32_t value;
};

using Sequence = std::vector<Element>;  // one alternative, without its End

class Grammar {
public:
    // Every alternative of every rule, each followed by an End element.
    const std::vector<Element>& elements() const { return elements_; }
    // Start positions (into elements()) of a rule's alternatives.
    const std::vector<int32_t>& alternatives(int32_t rule) const { return rule_alternatives_[rule]; }
    const ByteSet& byte_set(int32_t id) const { return byte_sets_[id]; }
    const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }
    int32_t rule_count() const { return static_cast<int32_t>(rule_names_.size()); }
    int32_t root() const { return root_; }

private:
    friend class GrammarBuilder;
    std::vector<Element> elements_;
    std::vector<std::vector<int32_t>> rule_alternatives_;
    std::vector<ByteSet> byte_sets_;
    std::vector<std::string> rule_names_;
    int32_t root_ = 0;
};

class GrammarBuilder {
public:
    // `origin` prefixes error messages ("GBNF", "regex", "JSON schema").
    explicit GrammarBuilder(std::string origin) : origin_(std::move(origin)) {}

    // The id of a named rule, created undefined on first mention.
    int32_t rule(const std::string& name);
    bool is_defined(int32_t rule) const { return defined_[rule]; }
    // INVALID_ARGUMENT when the rule already has a definition.
    void define(int32_t rule, std::vector<Sequence> alternatives);
    // Remembers who referenced an undefined rule, for build()'s message.
    void note_reference(int32_t rule, int32_t from_rule);

    // A fresh helper rule named after `base` ("base-3").
    int32_t add_helper_rule(const std::string& base, std::vector<Sequence> alternatives);

    Element bytes(const ByteSet& set);
    Element literal_byte(uint8_t b);
    Element ref(int32_t rule) const { return {ElementKind::Rule, rule}; }
    // The text's bytes, one element each.
    Sequence literal(const std::string& utf8_text);
    // Any code point in `ranges`: one byte set when they are all ASCII,
    // otherwise a helper rule over their UTF-8 byte patterns (shared by
    // equal classes).
    Element char_class(const std::vector<CodepointRange>& ranges, const std::string& base);
    // `item` (one element) repeated min..max times (max < 0: unbounded).
    // INVALID_ARGUMENT when min > max or the bound exceeds kMaxRepetition.
    Sequence repeat(const Sequence& item, int64_t min, int64_t max, const std::string& base);
    // A sequence as a single element (a helper rule unless it already is one).
    Element as_element(const Sequence& seq, const std::string& base);

    static constexpr int64_t kMaxRepetition = 20000;

    // Checks that every referenced rule is defined, that no rule can derive
    // itself at its own start (left recursion, also through rules that can
    // match nothing) and that the grammar matches some text;
    // INVALID_ARGUMENT naming the rule otherwise.
    std::shared_ptr<const Grammar> build(const std::string& root_name);

private:
    [[noreturn]] void fail(const std::string& message) const;
    // The rules that can match some string, in one linear pass: with
    // through_bytes false, only the empty string (nullable rules); with it
    // true, any string whose bytes come from non-empty byte sets
    // (productive rules).
    std::vector<bool> derivable_rules(bool through_bytes) const;
    void check_left_recursion() const;
    // Removes the alternatives that can never complete (an empty byte set,
    // a rule that matches nothing), so no parse ever reaches a dead end a
    // mask cannot avoid; INVALID_ARGUMENT when the root itself is one.
    void drop_unproductive(int32_t root);

    std::string origin_;
    std::vector<std::string> names_;
    std::vector<std::vector<Sequence>> rules_;
    std::vector<bool> defined_;
    std::vector<bool> helper_;      // generated by the builder, not named by the user
    std::vector<int32_t> first_referrer_;
    std::map<std::string, int32_t> ids_;
    std::vector<ByteSet> byte_sets_;
    std::map<std::vector<uint32_t>, int32_t> class_rules_;
    int helper_counter_ = 0;
};

}  // namespace vllm::structured
