#include "spec_decode/draft_model_proposer.h"

#include <algorithm>

#include "core/block_hash_chain.h"
#include "kernels/cpu/ops.h"
#include "util/error.h"

namespace vllm {

namespace {

// One group over every draft layer: the draft's cache is only as long-lived
// as a proposal needs, so sliding layers keep their full history too.
std::vector<KVCacheGroupSpec> single_group(int n_layers) {
    return group_layers_by_window(std::vector<int>(n_layers, 0));
}

}  // namespace

void check_draft_vocabulary(const Tokenizer& target, const Tokenizer& draft, const std::string& model_path) {
    const std::string prefix = "speculative_config: 'model' ('" + model_path + "') ";
    if (draft.vocab_size() != target.vocab_size())
        throw_invalid_argument(prefix + "has a vocabulary of " + std::to_string(draft.vocab_size()) +
                               " tokens but the target model has " + std::to_string(target.vocab_size()) +
                               "; a draft model must share the target's vocabulary");
    const std::vector<std::string>& a = target.data().tokens;
    const std::vector<std::string>& b = draft.data().tokens;
    const auto [differs, _] = std::mismatch(a.begin(), a.end(), b.begin());
    if (differs != a.end())
        throw_invalid_argument(prefix + "has a different vocabulary: token " +
                               std::to_string(differs - a.begin()) + " differs from the target model's");
}

DraftModelProposer::DraftModelProposer(DraftModel draft, int num_blocks, int block_size, KvDtype kv_dtype,
                                       double confidence_threshold, ThreadPool& pool)
    : draft_(std::move(draft)),
      cache_(single_group(draft_.model->config().n_layers), {num_blocks}, draft_.model->config().kv_shapes(),
             block_size, kv_dtype),
      blocks_(num_blocks, block_size),
      block_size_(block_size),
      confidence_threshold_(confidence_threshold),
      pool_(pool) {}

bool DraftModelProposer::reserve(Sequence& s, int positions) {
    const size_t needed = (positions + block_size_ - 1) / block_size_;
    if (s.blocks.size() >= needed) return true;
    if (static_cast<size_t>(blocks_.num_free()) < needed - s.blocks.size()) return false;
    while (s.blocks.size() < needed) s.blocks.push_back(blocks_.allocate());
    return true;
}

void DraftModelProposer::adopt_cached_prefix(Sequence& s, const std::vector<int32_t>& tokens) {
    extend_block_hashes(s.hashes, tokens, block_size_);
    const BlockHashChain chain(tokens, s.hashes, block_size_);
    const int usable = std::min(chain.num_blocks(), (static_cast<int>(tokens.size()) - 1) / block_size_);
    for (int i = 0; i < usable; ++i) {
        const int32_t block = blocks_.find_cached(chain.key(i));
        if (block < 0) break;
        blocks_.touch(block);
        s.blocks.push_back(block);
    }
    s.num_cached_blocks = static_cast<int>(s.blocks.size());
    s.fed.assign(tokens.begin(), tokens.begin() + s.blocks.size() * block_size_);
}

void DraftModelProposer::cache_verified_blocks(Sequence& s, const std::vector<int32_t>& tokens, size_t verified) {
    const int full = static_cast<int>(verified / block_size_);
    if (full <= s.num_cached_blocks) return;
    extend_block_hashes(s.hashes, tokens, block_size_);
    const BlockHashChain chain(tokens, s.hashes, block_size_);
    for (; s.num_cached_blocks < full; ++s.num_cached_blocks)
        blocks_.cache(s.blocks[s.num_cached_blocks], chain.key(s.num_cached_blocks));
}

int32_t DraftModelProposer::choose(const DraftRequest& r, float* logits, Sequence& s, bool& confident) {
    const SamplingConfig& sampling = *r.sampling;
    // The draft's logits cover its drafting vocabulary, ids [0, drafted):
    // q is zero above it, the target's whole vocabulary.
    const auto drafted = static_cast<int32_t>(draft_.model->logit_count());
    if (sampling.greedy()) {
        const float* top = std::max_element(logits, logits + drafted);
        // The argmax's probability is 1 / sum(exp(logit - top)).
        confident = confidence_threshold_ <= 0.0 ||
                    kernels::sum_exp(logits, drafted, *top) * confidence_threshold_ <= 1.0;
        return static_cast<int32_t>(top - logits);
    }
    // q: the request's temperature and cuts on the draft's row. Penalties
    // are left out (they need the request's history; any q keeps the
    // output exact, a closer one only raises acceptance).
    SamplingConfig shape = sampling;
    shape.repetition_penalty = 1.0f;
    shape.presence_penalty = shape.frequency_penalty = 0.0f;
    const std::vector<float>& q = sampler_.distribution(shape, logits, drafted, {}, {});
    s.probs.insert(s.probs.end(), q.begin(), q.begin() + drafted);
    s.probs.resize(s.probs.size() + (draft_.model->config().vocab_size - drafted), 0.0f);
    const int32_t token = draw_index(q.data(), drafted, *r.rng);
    confident = q[token] >= confidence_threshold_;
    return token;
}

void DraftModelProposer::propose_batch(const std::vector<DraftRequest>& batch) {
    const size_t row = static_cast<size_t>(draft_.model->logit_count());
    struct Active {
        const DraftRequest* request;
        Sequence* sequence;
    };
    std::vector<Active> active;
    std::vector<SequenceSlice> slices;
    for (const DraftRequest& r : batch) {
        r.draft->clear();
        if (r.max_tokens <= 0) continue;
        Sequence& s = sequences_[r.id];
        const std::vector<int32_t>& tokens = *r.tokens;
        const int n = static_cast<int>(tokens.size());
        if (s.blocks.empty()) adopt_cached_prefix(s, tokens);
        // Rollback: K/V past the first token that differs (a rejected draft)
        // is stale. The last token is always run, for its logits.
        const size_t kept = std::min<size_t>(
            std::mismatch(s.fed.begin(), s.fed.end(), tokens.begin(), tokens.end()).first - s.fed.begin(), n - 1);
        s.fed.resize(kept);
        cache_verified_blocks(s, tokens, kept);
        s.probs.clear();
        // The catch-up and the drafts fed back (all but the last).
        if (!reserve(s, n + r.max_tokens - 1)) continue;
        s.fed.insert(s.fed.end(), tokens.begin() + kept, tokens.end());
        SequenceSlice slice;
        slice.tokens = s.fed.data() + kept;
        slice.n_tokens = n - static_cast<int>(kept);
        slice.start_pos = static_cast<int>(kept);
        slice.block_tables[0] = s.blocks.data();
        slice.num_logits = 1;
        slices.push_back(slice);
        active.push_back(Active{&r, &s});
    }
    while (!slices.empty()) {
        draft_.model->forward(slices, cache_, pool_, logits_);
        std::vector<Active> next;
        slices.clear();
        for (size_t i = 0; i < active.size(); ++i) {
            const DraftRequest& r = *active[i].request;
            Sequence& s = *active[i].sequence;
            bool confident = true;
            const int32_t token = choose(r, logits_.data() + i * row, s, confident);
            r.draft->push_back(token);
            if (!confident || static_cast<int>(r.draft->size()) == r.max_tokens) continue;
            s.fed.push_back(token);
            next.push_back(active[i]);
        }
        // Every fed vector is complete before the slices point into them.
        for (const Active& a : next) {
            SequenceSlice slice;
            slice.tokens = &a.sequence->fed.back();
            slice.n_tokens = 1;
            slice.start_pos = static_cast<int>(a.sequence->fed.size()) - 1;
            slice.block_tables[0] = a.sequence->blocks.data();
            slice.num_logits = 1;
            slices.push_back(slice);
        }
        active.swap(next);
    }
}

void DraftModelProposer::propose(uint64_t id, const std::vector<int32_t>& tokens, int num_prompt_tokens,
                                 int max_tokens, std::vector<int32_t>& draft) {
    SamplingConfig greedy;
    greedy.temperature = 0.0f;
    propose_batch({DraftRequest{id, &tokens, num_prompt_tokens, max_tokens, &greedy, nullptr, &draft}});
}

const std::vector<float>* DraftModelProposer::draft_probabilities(uint64_t id) const {
    auto it = sequences_.find(id);
    return it == sequences_.end() || it->second.probs.empty() ? nullptr : &it->second.probs;
}

void DraftModelProposer::release_cache(uint64_t id) {
    auto it = sequences_.find(id);
    if (it == sequences_.end()) return;
    std::vector<int32_t> tail_first(it->second.blocks.rbegin(), it->second.blocks.rend());
    blocks_.release(tail_first);
    sequences_.erase(it);
}

}  // namespace vllm
