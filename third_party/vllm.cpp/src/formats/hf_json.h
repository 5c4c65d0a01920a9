// Reads the small text files of a Hugging Face model directory
// (config.json, tokenizer_config.json, chat_template.jinja, ...) through
// MappedFile, so a FIFO or device in their place is refused, not read.
#pragma once
#include <string>

#include "util/json.h"

namespace vllm {

// MODEL_LOAD error "cannot load '<path>': <why>" when the file cannot be
// read (or, for JSON, does not parse).
std::string read_text_file(const std::string& path);
json::Value read_json_file(const std::string& path);

// Throws that MODEL_LOAD error for a problem found in the file's contents.
[[noreturn]] void fail_file(const std::string& path, const std::string& why);

// Whether `path` names an existing file (of any kind; reading it decides
// whether it is usable).
bool file_exists(const std::string& path);

}  // namespace vllm
