// GrammarCompiler: compiles and masks on its workers, within the budget.
#include "structured/grammar_compiler.h"

#include "structured/work_deadline.h"
#include "util/error.h"

namespace vllm::structured {

GrammarCompiler::GrammarCompiler(std::shared_ptr<const Vocabulary> vocabulary, CompileBudget budget, int n_threads)
    : vocabulary_(std::move(vocabulary)), budget_(budget), workers_(n_threads) {
    if (!vocabulary_) throw_invalid_argument("GrammarCompiler: no vocabulary");
}

std::string GrammarCompiler::timeout_message(const char* work) const {
    return std::string("structured output: ") + work + " took longer than the compile budget of " +
           std::to_string(budget_.timeout_ms) + " ms (engine option structured_compile_timeout_ms)";
}

std::shared_ptr<const Grammar> GrammarCompiler::compile_within_budget(const Compile& compile,
                                                                       Clock::time_point deadline) const {
    const WorkDeadline within(deadline, timeout_message("compiling the constraint"));
    WorkDeadline::check();  // it may have waited its whole budget in the queue
    std::shared_ptr<const Grammar> grammar = compile();
    WorkDeadline::check();
    const size_t size = grammar->elements().size();
    if (static_cast<int64_t>(size) > budget_.max_grammar_size)
        throw_invalid_argument("structured output: the compiled grammar has " + std::to_string(size) +
                               " positions, more than the compile budget of " +
                               std::to_string(budget_.max_grammar_size) +
                               " (engine option structured_max_grammar_size)");
    // The first mask: a grammar that is too ambiguous from its start (a
    // list of too many alternatives) is refused now, not at the first step.
    GrammarMatcher(grammar, vocabulary_).prepare_mask();
    return grammar;
}

std::shared_ptr<const Grammar> GrammarCompiler::compile(const std::string& key, Compile compile) const {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(budget_.timeout_ms);
    std::shared_future<std::shared_ptr<const Grammar>> result;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto found = compiles_.find(key);
        if (found != compiles_.end()) {
            result = found->second;
        } else {
            auto promise = std::make_shared<std::promise<std::shared_ptr<const Grammar>>>();
            result = promise->get_future().share();
            compiles_.emplace(key, result);
            workers_.post([this, key, promise, compile = std::move(compile), deadline] {
                size_t size = 0;
                bool ok = false;
                try {
                    std::shared_ptr<const Grammar> grammar = compile_within_budget(compile, deadline);
                    size = grammar->elements().size();
                    promise->set_value(std::move(grammar));
                    ok = true;
                } catch (...) {
                    promise->set_exception(std::current_exception());
                }
                finished(key, ok, size);
            });
        }
    }
    // The worker stops at its own checks; a compile stage that has none
    // (the front ends are near-linear) is not waited for past the budget.
    if (result.wait_until(deadline) != std::future_status::ready)
        throw DeadlinePassed(timeout_message("compiling the constraint"));
    return result.get();
}

void GrammarCompiler::finished(const std::string& key, bool ok, size_t size) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ok) {  // a refusal is not kept: the budget may let it through on a quieter engine
        compiles_.erase(key);
        return;
    }
    recent_.emplace_back(key, size);
    recent_positions_ += size;
    while (recent_.size() > kRecentCompiles || (recent_positions_ > kRecentPositions && recent_.size() > 1)) {
        compiles_.erase(recent_.front().first);
        recent_positions_ -= recent_.front().second;
        recent_.pop_front();
    }
}

void GrammarCompiler::prepare_mask(std::shared_ptr<GrammarMatcher> matcher, Prepared done) const {
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(budget_.timeout_ms);
    workers_.post([this, matcher = std::move(matcher), done = std::move(done), deadline] {
        std::exception_ptr error;
        try {
            const WorkDeadline within(deadline, timeout_message("computing the allowed tokens"));
            matcher->prepare_mask();
        } catch (...) {
            error = std::current_exception();
        }
        done(error);
    });
}

bool GrammarCompiler::prepare_mask_within(const GrammarMatcher& matcher, std::chrono::microseconds slice) {
    try {
        const WorkDeadline within(Clock::now() + slice, "");
        matcher.prepare_mask();
        return true;
    } catch (const DeadlinePassed&) {
        return false;
    }
}

}  // namespace vllm::structured

namespace vllm::structured {

namespace {
std::shared_ptr<const Grammar> compile_keyed(const GrammarCompiler* compiler, const std::string& key,
                                             GrammarCompiler::Compile compile) {
    return compiler != nullptr ? compiler->compile(key, std::move(compile)) : compile();
}
}  // namespace

std::shared_ptr<const Grammar> compile_text(const GrammarCompiler* compiler, ConstraintKind kind,
                                            std::string_view text) {
    // The worker may outlive a caller whose budget ran out: it owns its text.
    std::string owned(text);
    switch (kind) {
        case ConstraintKind::JsonSchema:
            return compile_keyed(compiler, "json_schema\n" + owned, [owned] { return compile_json_schema(owned); });
        case ConstraintKind::Regex:
            return compile_keyed(compiler, "regex\n" + owned, [owned] { return compile_regex(owned); });
        case ConstraintKind::Gbnf:
            break;
    }
    return compile_keyed(compiler, "grammar\n" + owned, [owned] { return compile_gbnf(owned); });
}

std::shared_ptr<const Grammar> compile_choices(const GrammarCompiler* compiler,
                                               const std::vector<std::string>& choices) {
    std::string key = "choice";
    for (const std::string& choice : choices) key += "\n" + std::to_string(choice.size()) + ":" + choice;
    return compile_keyed(compiler, key, [choices] { return compile_choice(choices); });
}

}  // namespace vllm::structured
