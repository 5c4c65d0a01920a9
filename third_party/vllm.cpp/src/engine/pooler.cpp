#include "engine/pooler.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace vllm {

PoolingType parse_pooling_type(const std::string& name, const char* field) {
    if (name == "CLS") return PoolingType::CLS;
    if (name == "MEAN") return PoolingType::MEAN;
    if (name == "LAST") return PoolingType::LAST;
    if (name == "ALL" || name == "STEP")
        throw_invalid_argument(std::string("'") + field + "' " + name +
                               " is not supported: it returns one vector per token (vLLM's token_embed task), set "
                               "by pooler_config's tok_pooling_type; use CLS, MEAN or LAST here");
    throw_invalid_argument(std::string("'") + field + "' must be CLS, MEAN or LAST (got '" + name + "')");
}

const char* pooling_type_name(PoolingType type) {
    switch (type) {
        case PoolingType::CLS: return "CLS";
        case PoolingType::MEAN: return "MEAN";
        case PoolingType::LAST: return "LAST";
    }
    return "LAST";
}

std::optional<PoolingType> pooling_type_from_gguf(int64_t value) {
    switch (value) {
        case 1: return PoolingType::MEAN;
        case 2: return PoolingType::CLS;
        case 3: return PoolingType::LAST;
        default: return std::nullopt;  // NONE, RANK (a reranker's score head)
    }
}

void PooledRows::add(PoolingType type, const float* rows, int start_pos, int n_rows, int prompt_len, int dim) {
    if (start_pos == 0) {
        sum_.clear();
        picked_.clear();
    }
    switch (type) {
        case PoolingType::CLS:
            if (start_pos == 0 && n_rows > 0) picked_.assign(rows, rows + dim);
            break;
        case PoolingType::LAST:
            if (start_pos + n_rows >= prompt_len && n_rows > 0)
                picked_.assign(rows + size_t(n_rows - 1) * dim, rows + size_t(n_rows) * dim);
            break;
        case PoolingType::MEAN:
            sum_.resize(dim, 0.0);
            for (int t = 0; t < n_rows; ++t)
                for (int d = 0; d < dim; ++d) sum_[d] += rows[size_t(t) * dim + d];
            break;
    }
}

std::vector<float> PooledRows::finish(PoolingType type, int prompt_len, bool normalize, int dimensions) const {
    std::vector<float> v;
    if (type == PoolingType::MEAN) {
        v.resize(sum_.size());
        for (size_t d = 0; d < sum_.size(); ++d) v[d] = static_cast<float>(sum_[d] / prompt_len);
    } else {
        v = picked_;
    }
    if (v.empty()) throw_runtime("internal error: a pooling request finished without its rows");
    if (dimensions > 0 && static_cast<size_t>(dimensions) < v.size()) v.resize(dimensions);
    if (normalize) {
        double norm = 0;
        for (float x : v) norm += double(x) * x;
        // torch.nn.functional.normalize's eps: a zero vector stays zero.
        const float scale = static_cast<float>(1.0 / std::max(std::sqrt(norm), 1e-12));
        for (float& x : v) x *= scale;
    }
    return v;
}

float score_from_logits(const float* logits, const std::vector<int32_t>& score_tokens) {
    const double margin = double(logits[score_tokens[1]]) - double(logits[score_tokens[0]]);
    return static_cast<float>(1.0 / (1.0 + std::exp(-margin)));
}

ClassifierActivation parse_score_activation(const std::string& module, const char* field) {
    const std::string name = module.substr(module.find_last_of('.') + 1);
    if (module.rfind("torch.nn.modules.", 0) == 0) {
        if (name == "Identity") return ClassifierActivation::IDENTITY;
        if (name == "Sigmoid" || name == "Softmax") return ClassifierActivation::CLASSIFY;
    }
    throw_invalid_argument(std::string("'") + field + "' " + module +
                           " is not supported (torch.nn.modules' Identity, Sigmoid or Softmax)");
}

std::vector<float> classifier_probabilities(const float* logits, int num_labels, ClassifierActivation activation) {
    std::vector<float> p(logits, logits + num_labels);
    if (activation == ClassifierActivation::IDENTITY) return p;
    if (num_labels == 1 || activation == ClassifierActivation::SIGMOID) {
        for (float& x : p) x = static_cast<float>(1.0 / (1.0 + std::exp(-double(x))));
        return p;
    }
    const float top = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (float& x : p) sum += x = std::exp(x - top);
    for (float& x : p) x = static_cast<float>(x / sum);
    return p;
}

bool parse_step_pooling(const std::string& name, const char* field) {
    if (name == "ALL" || name == "STEP") return name == "STEP";
    throw_invalid_argument(std::string("'") + field + "' must be ALL or STEP (got '" + name + "')");
}

int token_row_width(const TokenPooling& config, int dim, int dimensions) {
    const int width = config.step && !config.returned_token_ids.empty()
                          ? static_cast<int>(config.returned_token_ids.size())
                          : dim;
    return dimensions > 0 && dimensions < width ? dimensions : width;
}

std::vector<float> pool_token_rows(const std::vector<float>& rows, int dim, const std::vector<int32_t>& prompt,
                                   const TokenPooling& config, bool normalize, int dimensions) {
    const int width = token_row_width(config, dim, dimensions);
    std::vector<float> out;
    std::vector<float> row(width);
    for (size_t t = 0; t < prompt.size() && (t + 1) * dim <= rows.size(); ++t) {
        if (config.step && config.step_tag_id >= 0 && prompt[t] != config.step_tag_id) continue;
        const float* x = rows.data() + t * dim;
        for (int i = 0; i < width; ++i)
            row[i] = config.step && !config.returned_token_ids.empty() ? x[config.returned_token_ids[i]] : x[i];
        if (normalize) {
            double norm = 0;
            for (float v : row) norm += double(v) * v;
            const float scale = static_cast<float>(1.0 / std::max(std::sqrt(norm), 1e-12));
            for (float& v : row) v *= scale;
        }
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

void check_pooling_dimensions(const PoolerConfig& config, int hidden_size, int32_t dimensions,
                              const std::string& model_name) {
    if (dimensions == 0) return;
    if (!config.matryoshka)
        throw_invalid_argument("'dimensions': model \"" + model_name +
                               "\" does not support matryoshka representation, changing output dimensions will "
                               "lead to poor results");
    if (dimensions < 1 || dimensions > hidden_size)
        throw_invalid_argument("'dimensions' must be between 1 and the model's hidden size " +
                               std::to_string(hidden_size) + " (got " + std::to_string(dimensions) + ")");
    const std::vector<int32_t>& sizes = config.matryoshka_dimensions;
    if (!sizes.empty() && std::find(sizes.begin(), sizes.end(), dimensions) == sizes.end()) {
        std::string listed;
        for (int32_t s : sizes) listed += (listed.empty() ? "" : ", ") + std::to_string(s);
        throw_invalid_argument("'dimensions' " + std::to_string(dimensions) + " is not one of model \"" + model_name +
                               "\"'s matryoshka dimensions (" + listed + ")");
    }
}

}  // namespace vllm
