#include "engine/output_processor.h"

#include <algorithm>

namespace vllm {

OutputProcessor::OutputProcessor(const Tokenizer& tokenizer, const SamplingConfig& config)
    : tokenizer_(tokenizer), config_(config), detokenizer_(tokenizer, config.skip_special_tokens) {
    for (const std::string& s : config.stop) max_stop_len_ = std::max(max_stop_len_, s.size());
}

std::string OutputProcessor::release_all() {
    std::string out = std::move(held_) + detokenizer_.flush();
    held_.clear();
    return out;
}

OutputProcessor::Update OutputProcessor::finish(const char* finish_reason) {
    return Update{release_all(), finish_reason};
}

OutputProcessor::Update OutputProcessor::push(int32_t token, int32_t n, bool at_length_limit) {
    Update u;
    // EOS is masked before min_tokens by the engine; with ignore_eos it is
    // just another (textless) token.
    if (tokenizer_.is_eog(token) && !config_.ignore_eos) {
        u.delta = release_all();
        u.finish_reason = finish_reason::kStop;
        return u;
    }
    held_ += detokenizer_.push(token);
    // A stop token (vLLM's stop_token_ids) ends the output with its own text
    // (none for a special token, which the detokenizer skips).
    if (config_.is_stop_token(token)) {
        u.delta = release_all();
        u.finish_reason = finish_reason::kStop;
        return u;
    }

    // Every stop match not seen yet ends in this token's text, so it lies
    // inside held_ (which keeps the last max_stop_len - 1 released bytes' worth).
    if (n > config_.min_tokens && max_stop_len_ > 0) {
        size_t first = std::string::npos, end = 0;  // the earliest match; its end
        for (const std::string& s : config_.stop) {
            const size_t at = held_.find(s);
            if (at < first) first = at, end = at + s.size();
        }
        if (first != std::string::npos) {
            u.delta = held_.substr(0, config_.include_stop_str_in_output ? end : first);
            held_.clear();
            u.finish_reason = finish_reason::kStop;
            return u;
        }
    }
    if (at_length_limit) {
        u.delta = release_all();
        u.finish_reason = finish_reason::kLength;
        return u;
    }
    // Release all but a tail that could still begin a stop string, cut at a
    // code point boundary.
    size_t keep = max_stop_len_ > 0 ? max_stop_len_ - 1 : 0;
    if (held_.size() > keep) {
        size_t cut = held_.size() - keep;
        while (cut > 0 && (static_cast<unsigned char>(held_[cut]) & 0xC0) == 0x80) --cut;
        u.delta = held_.substr(0, cut);
        held_.erase(0, cut);
    }
    return u;
}

}  // namespace vllm
