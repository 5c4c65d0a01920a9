// A probe into the model forward for the reference tests
// (tests/engine/test_correctness.py): runs token ids through the real weights,
// KV cache and kernels, bypassing tokenizer and sampler so results compare
// id for id with the float reference.
//
// MODEL is a GGUF file or a Hugging Face model directory.
//
//   model_probe MODEL greedy N CHUNK   stdin: one prompt per line (ids);
//                                      stdout: N greedy ids per line
//   model_probe MODEL logits OUT CHUNK stdin: one line of ids; writes the
//                                      logits row after every position as
//                                      raw float32 [n_ids, vocab] to OUT
//   model_probe MODEL prefill_logits OUT CHUNK
//                                      stdin: one line of ids, prefilled in
//                                      chunks of CHUNK with every position's
//                                      logits written as in `logits`
// CHUNK is the prefill chunk size, so chunked prefill is exercised too. An
// optional last argument MAX_MODEL_LEN is the engine's max_model_len the
// model is built for (default: its context length), which picks LongRoPE's
// factor set.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf_reader.h"
#include "formats/hf_model.h"
#include "kv_cache/kv_cache.h"
#include "model/decoder_model.h"
#include "model/model_registry.h"
#include "util/error.h"

namespace {

std::vector<int32_t> parse_ids(const std::string& line) {
    std::vector<int32_t> ids;
    std::istringstream in(line);
    int32_t id;
    while (in >> id) ids.push_back(id);
    return ids;
}

struct Probe {
    vllm::DecoderModel& model;
    vllm::KVCache& cache;
    vllm::ThreadPool& pool;
    std::vector<int32_t> table;

    // Runs `tokens` at positions [start, start + n) in chunks, returning the
    // logits of the last token.
    std::vector<float> run(const std::vector<int32_t>& tokens, int start, int chunk, bool every_row = false) {
        std::vector<float> logits, rows;
        for (size_t done = 0; done < tokens.size();) {
            const int n = static_cast<int>(std::min<size_t>(chunk, tokens.size() - done));
            vllm::SequenceSlice s;
            s.tokens = tokens.data() + done;
            s.n_tokens = n;
            s.start_pos = start + static_cast<int>(done);
            s.block_tables[0] = table.data();
            s.num_logits = every_row ? n : done + n == tokens.size() ? 1 : 0;
            model.forward({s}, cache, pool, logits);
            if (every_row) rows.insert(rows.end(), logits.begin(), logits.end());
            done += n;
        }
        return every_row ? rows : logits;
    }
};

int32_t argmax(const std::vector<float>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        std::fprintf(stderr,
                     "usage: model_probe MODEL greedy N CHUNK [MAX_MODEL_LEN] | "
                     "model_probe MODEL logits OUT CHUNK [MAX_MODEL_LEN]\n");
        return 2;
    }
    try {
        struct stat st {};
        std::unique_ptr<vllm::ModelSource> file;
        if (::stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode))
            file = std::make_unique<vllm::HfModel>(argv[1]);
        else
            file = std::make_unique<vllm::GgufFile>(argv[1]);
        vllm::ModelConfig config = vllm::ModelConfig::from_source(*file);
        vllm::ModelWeights weights = vllm::ModelWeights::from_source(*file, config);
        std::unique_ptr<vllm::DecoderModel> model =
            vllm::build_decoder(config, std::move(weights), argc == 6 ? std::stoi(argv[5]) : 0);
        const int block_size = 16, num_blocks = 64;
        // One group of every layer: the probe keeps every block (a sliding
        // layer then reads only its window of them).
        vllm::KVCacheGroupSpec all_layers;
        for (int l = 0; l < config.n_layers; ++l) all_layers.layers.push_back(l);
        vllm::KVCache cache({all_layers}, {num_blocks}, config.kv_shapes(), block_size,
                            vllm::kv_dtype_from_env());
        vllm::ThreadPool pool;
        Probe probe{*model, cache, pool, {}};
        for (int b = 0; b < num_blocks; ++b) probe.table.push_back(num_blocks - 1 - b);  // non-trivial block order
        const std::string mode = argv[2];
        const int chunk = std::stoi(argv[4]);
        std::string line;
        if (mode == "greedy") {
            const int n = std::stoi(argv[3]);
            while (std::getline(std::cin, line)) {
                std::vector<int32_t> ids = parse_ids(line);
                if (ids.empty()) continue;
                std::vector<float> logits = probe.run(ids, 0, chunk);
                int pos = static_cast<int>(ids.size());
                for (int i = 0; i < n; ++i) {
                    const int32_t next = argmax(logits);
                    std::printf("%s%d", i ? " " : "", next);
                    if (i + 1 < n) logits = probe.run({next}, pos++, 1);
                }
                std::printf("\n");
                std::fflush(stdout);
            }
        } else if (mode == "logits") {
            std::getline(std::cin, line);
            std::vector<int32_t> ids = parse_ids(line);
            std::FILE* out = std::fopen(argv[3], "wb");
            if (out == nullptr) throw std::runtime_error("cannot write " + std::string(argv[3]));
            // The first `chunk` ids go in as one prefill; every later id is a decode step.
            const size_t first = std::min<size_t>(chunk, ids.size());
            std::vector<float> logits;
            for (size_t i = 0; i < ids.size(); ++i) {
                if (i + 1 < first) continue;
                if (i + 1 == first)
                    logits = probe.run(std::vector<int32_t>(ids.begin(), ids.begin() + first), 0, chunk);
                else
                    logits = probe.run({ids[i]}, static_cast<int>(i), 1);
                std::fwrite(logits.data(), sizeof(float), logits.size(), out);
            }
            std::fclose(out);
        } else if (mode == "prefill_logits") {
            std::getline(std::cin, line);
            const std::vector<float> rows = probe.run(parse_ids(line), 0, chunk, /*every_row=*/true);
            std::FILE* out = std::fopen(argv[3], "wb");
            if (out == nullptr) throw std::runtime_error("cannot write " + std::string(argv[3]));
            std::fwrite(rows.data(), sizeof(float), rows.size(), out);
            std::fclose(out);
        } else {
            std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "model_probe: %s\n", e.what());
        return 1;
    }
    return 0;
}
