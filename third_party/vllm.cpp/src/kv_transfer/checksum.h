// A fast 64-bit content hash for KV transfer: the checksum every stored
// block carries and the digest behind the model fingerprint. Four
// independent multiply-rotate lanes over 8-byte words keep it near memory
// speed (a 2,000-token prompt of SmolLM2 is ~46 MB of K/V). It detects
// accidents (bit rot, torn or truncated files, a block of another model);
// it is not a cryptographic MAC: whoever can write the store is trusted as
// much as whoever can write the model file.
#pragma once
#include <cstddef>
#include <cstdint>

namespace vllm::kv_transfer {

// The hash of [data, data + n), chained through `seed` (hash a sequence of
// pieces by passing each result as the next seed).
uint64_t checksum64(const void* data, size_t n, uint64_t seed = 0);

}  // namespace vllm::kv_transfer
