// A probe into the tokenizer for the Python tokenizer tests
// (tests/test_tokenizer_*.py): loads a vocabulary the way the engine does
// and tokenizes lines of stdin, so results compare id for id with
// llama.cpp's and Hugging Face's goldens.
//
//   tokenizer_probe [FLAGS] gguf MODEL.gguf [pre=NAME] [add_space_prefix=0|1]
//                                                    overriding tokenizer.ggml.pre / add_space_prefix
//   tokenizer_probe [FLAGS] json TOKENIZER.json [bos=TEXT] [eos=TEXT] [add_bos=0|1] [add_eos=0|1]
//                                                    the options tokenizer_config.json would give
//
// FLAGS: --add-special (BOS/EOS as the model says), --no-parse-special.
// stdin: one hex-encoded text a line. stdout, a line each: the ids
// (space-separated) TAB hex(token_bytes of each id, special tokens
// rendered). A load error prints "tokenizer_probe: MESSAGE" to stderr and
// exits 1.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf_reader.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

std::string to_hex(const std::string& bytes) {
    static const char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 15]);
    }
    return out;
}

// Splits "key=value".
std::pair<std::string, std::string> option(const std::string& arg) {
    const size_t eq = arg.find('=');
    return {arg.substr(0, eq), eq == std::string::npos ? "" : arg.substr(eq + 1)};
}

std::unique_ptr<vllm::Tokenizer> load(const std::vector<std::string>& args) {
    if (args.size() >= 2 && args[0] == "gguf") {
        vllm::TokenizerData data = vllm::TokenizerData::from_gguf(vllm::GgufFile(args[1]));
        for (size_t i = 2; i < args.size(); ++i) {
            const auto [key, value] = option(args[i]);
            if (key == "pre") {
                data.pre = value;
            } else if (key == "add_space_prefix") {
                data.add_space_prefix = value == "1";
            } else {
                return nullptr;
            }
        }
        return vllm::Tokenizer::create(data);
    }
    if (args.size() >= 2 && args[0] == "json") {
        vllm::HfTokenizerOptions options;
        for (size_t i = 2; i < args.size(); ++i) {
            const auto [key, value] = option(args[i]);
            if (key == "bos") {
                options.bos_token = value;
            } else if (key == "eos") {
                options.eos_token = value;
            } else if (key == "add_bos") {
                options.add_bos_token = value == "1";
            } else if (key == "add_eos") {
                options.add_eos_token = value == "1";
            } else {
                return nullptr;
            }
        }
        return vllm::load_hf_tokenizer_json(args[1], options);
    }
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    bool add_special = false;
    bool parse_special = true;
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--add-special") {
            add_special = true;
        } else if (a == "--no-parse-special") {
            parse_special = false;
        } else {
            args.push_back(a);
        }
    }
    try {
        const std::unique_ptr<vllm::Tokenizer> tok = load(args);
        if (!tok) {
            std::fprintf(stderr,
                         "usage: tokenizer_probe [--add-special] [--no-parse-special] gguf MODEL.gguf [pre=NAME] "
                         "[add_space_prefix=0|1]\n"
                         "       tokenizer_probe [FLAGS] json TOKENIZER.json [bos=T] [eos=T] [add_bos=0|1] [add_eos=0|1]\n");
            return 2;
        }
        std::string line;
        while (std::getline(std::cin, line)) {
            const std::vector<int32_t> ids = tok->encode(from_hex(line), add_special, parse_special);
            std::string bytes;
            for (size_t i = 0; i < ids.size(); ++i) {
                std::printf("%s%d", i ? " " : "", ids[i]);
                bytes += tok->token_bytes(ids[i], false);
            }
            std::printf("\t%s\n", to_hex(bytes).c_str());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tokenizer_probe: %s\n", e.what());
        return 1;
    }
    return 0;
}
