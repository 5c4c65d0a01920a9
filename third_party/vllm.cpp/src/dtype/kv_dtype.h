// The KV cache's element types (what the kv_cache_dtype option selects),
// shared by the KV cache that writes them (kv_cache/kv_cache.*) and the
// attention kernels that read them (kernels/cpu/ops*).
//
// I8 is symmetric int8 with one scale per (token, KV head): a row of
// head_dim values q_i in [-127, 127] with an IEEE-half scale s, value
// q_i * s, s = max|x| / 127 (rounded to half first, the q_i then rounded to
// nearest against that half). One scale per row rather than per block of
// tokens because a row is written once and never revisited: a block's
// scale would grow as tokens arrive and force the earlier rows to be
// re-rounded, so stored values would depend on what came later (a rejected
// draft token, a prefix cache hit) and a sequence would no longer get the
// same cache whatever batch, chunking or speculation computed it. The
// scales sit after the int8 data of each block (kv_cache.h has the layout);
// per token and head they cost 2 bytes next to head_dim (e.g. 64), so a
// block takes 52% of the f16 cache's bytes.
#pragma once
#include <cstddef>

namespace vllm {

enum class KvDtype { F32, F16, I8 };

// Bytes of one element of the K or V rows (the I8 scales come on top).
constexpr size_t kv_element_bytes(KvDtype dtype) { return dtype == KvDtype::F32 ? 4 : dtype == KvDtype::F16 ? 2 : 1; }

// Bytes of one token's K (V's is as large) in one layer: its n_kv_heads
// rows of head_dim elements, and for I8 each row's half scale.
constexpr size_t kv_token_bytes(int n_kv_heads, int head_dim, KvDtype dtype) {
    return size_t(n_kv_heads) * head_dim * kv_element_bytes(dtype) + (dtype == KvDtype::I8 ? 2 * size_t(n_kv_heads) : 0);
}

}  // namespace vllm
