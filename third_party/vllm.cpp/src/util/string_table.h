// Many short strings in one buffer, found by index: a vocabulary's token
// texts or bytes. A std::vector<std::string> of Gemma 3's 262,144 tokens
// takes 8.4 MB of string objects before its 2.3 MB of text; this takes the
// text and 4 bytes a string.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace vllm {

class StringTable {
public:
    void reserve(size_t strings, size_t bytes) {
        ends_.reserve(strings);
        bytes_.reserve(bytes);
    }
    // Appends a string: it is (*this)[size() - 1].
    void push_back(std::string_view s) {
        if (s.size() > UINT32_MAX - bytes_.size()) throw_model_load("a vocabulary's text exceeds 4 GB");
        bytes_.append(s);
        ends_.push_back(static_cast<uint32_t>(bytes_.size()));
    }
    size_t size() const { return ends_.size(); }
    std::string_view operator[](size_t i) const {
        const uint32_t begin = i == 0 ? 0 : ends_[i - 1];
        return std::string_view(bytes_.data() + begin, ends_[i] - begin);
    }

private:
    std::string bytes_;
    std::vector<uint32_t> ends_;  // end of string i in bytes_ (4 GB of text at most)
};

}  // namespace vllm
