// Unit test of the paged attention kernel: against a direct float
// computation, and split-key partials merged (flash-decoding) against the
// whole tile, for every ISA build the machine runs (VLLM_CPP_ISA selects).
// Prints "N passed, M failed".
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/cpu/ops.h"

using namespace vllm::kernels;

namespace {

int passed = 0, failed = 0;

void check(bool ok, const char* what, double value) {
    if (ok) {
        ++passed;
    } else {
        ++failed;
        std::printf("FAIL %s (%g)\n", what, value);
    }
}

struct Fixture {
    int n_heads = 9, n_kv_heads = 3, head_dim = 64, block_size, num_blocks;
    std::vector<float> q, keys, values;
    std::vector<int32_t> table, positions;

    // Blocks of a multiple of 16 slots are read whole; smaller ones gathered.
    Fixture(int n_tokens, int first_pos, int block_size_ = 16)
        : block_size(block_size_), num_blocks(640 / block_size_) {
        std::mt19937 rng(7);
        std::normal_distribution<float> normal;
        q.resize(size_t(n_tokens) * n_heads * head_dim);
        keys.resize(size_t(num_blocks) * block_size * n_kv_heads * head_dim);
        values.resize(keys.size());
        for (float& x : q) x = normal(rng);
        for (float& x : keys) x = normal(rng);
        for (float& x : values) x = normal(rng);
        for (int b = 0; b < num_blocks; ++b) table.push_back((b * 7) % num_blocks);  // scattered blocks
        for (int t = 0; t < n_tokens; ++t) positions.push_back(first_pos + t);
    }

    PagedAttention args(float* out) const {
        PagedAttention a;
        a.q = q.data();
        a.out = out;
        a.positions = positions.data();
        a.k_cache = keys.data();
        a.v_cache = values.data();
        a.block_size = block_size;
        a.n_heads = n_heads;
        a.n_kv_heads = n_kv_heads;
        a.head_dim = head_dim;
        a.scale = 1.0f / std::sqrt(float(head_dim));
        return a;
    }

    // The layouts of kv_cache.h: K slot-minor, V one row per slot.
    float key(int pos, int kv_head, int d) const {
        return keys[((size_t(table[pos / block_size]) * n_kv_heads + kv_head) * head_dim + d) * block_size +
                    pos % block_size];
    }
    float value(int pos, int kv_head, int d) const {
        return values[(size_t(table[pos / block_size]) * block_size + pos % block_size) * n_kv_heads * head_dim +
                      size_t(kv_head) * head_dim + d];
    }

    // Softmax attention in double, straight from the definition.
    std::vector<float> reference() const {
        std::vector<float> out(q.size());
        const int group = n_heads / n_kv_heads;
        for (size_t t = 0; t < positions.size(); ++t)
            for (int h = 0; h < n_heads; ++h) {
                const float* qv = &q[(t * n_heads + h) * head_dim];
                std::vector<double> w(positions[t] + 1);
                double max_w = -1e300, total = 0;
                for (int j = 0; j <= positions[t]; ++j) {
                    double s = 0;
                    for (int d = 0; d < head_dim; ++d) s += double(qv[d]) * key(j, h / group, d);
                    w[j] = s / std::sqrt(double(head_dim));
                    max_w = std::max(max_w, w[j]);
                }
                for (double& x : w) total += (x = std::exp(x - max_w));
                for (int d = 0; d < head_dim; ++d) {
                    double acc = 0;
                    for (int j = 0; j <= positions[t]; ++j) acc += w[j] * value(j, h / group, d);
                    out[(t * n_heads + h) * head_dim + d] = float(acc / total);
                }
            }
        return out;
    }
};

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
    return m;
}

AttentionTile whole(const Fixture& f, int n_tokens, int kv_head) {
    AttentionTile tile;
    tile.block_table = f.table.data();
    tile.t_begin = 0;
    tile.t_end = n_tokens;
    tile.kv_head = kv_head;
    return tile;
}

void test_against_reference(int n_tokens, int first_pos, int block_size = 16) {
    Fixture f(n_tokens, first_pos, block_size);
    std::vector<float> out(f.q.size());
    PagedAttention a = f.args(out.data());
    for (int h = 0; h < f.n_kv_heads; ++h) attention_tile(a, whole(f, n_tokens, h));
    check(max_diff(out, f.reference()) < 1e-4, "tile equals the float definition", max_diff(out, f.reference()));
}

void test_split_merge(int n_tokens, int first_pos, int n_splits) {
    Fixture f(n_tokens, first_pos);
    std::vector<float> full(f.q.size()), merged(f.q.size());
    PagedAttention a = f.args(full.data());
    PagedAttention b = f.args(merged.data());
    const int span = first_pos + n_tokens;
    const int per_split = (span + n_splits * 16 - 1) / (n_splits * 16) * 16;
    for (int h = 0; h < f.n_kv_heads; ++h) {
        const AttentionTile tile = whole(f, n_tokens, h);
        attention_tile(a, tile);
        std::vector<std::vector<float>> parts(n_splits, std::vector<float>(attention_partial_floats(b, tile)));
        std::vector<const float*> pointers;
        for (int k = 0; k < n_splits; ++k) {
            AttentionTile part = tile;
            part.key_begin = k * per_split;
            part.key_end = std::min(span, (k + 1) * per_split);
            part.partial = parts[k].data();
            attention_tile(b, part);
            pointers.push_back(parts[k].data());
        }
        merge_attention_partials(b, tile, pointers.data(), n_splits);
    }
    check(max_diff(full, merged) < 1e-5, "split-key partials merge to the whole tile", max_diff(full, merged));
}

}  // namespace

int main() {
    test_against_reference(1, 0);     // first token: attends to itself only
    test_against_reference(1, 300);   // decode with a long context
    test_against_reference(5, 17);    // a prefill chunk across a block boundary
    test_against_reference(21, 100);  // a full tile of queries
    test_against_reference(3, 150, 8);   // small blocks: keys gathered
    test_against_reference(3, 150, 32);  // larger blocks: two chunks a block
    test_split_merge(1, 300, 2);
    test_split_merge(1, 500, 4);
    test_split_merge(3, 200, 3);      // queries whose causal limits differ; a split can hold no key for some
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
