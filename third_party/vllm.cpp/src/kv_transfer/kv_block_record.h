// One stored KV block: what a connector writes and reads back, the same
// bytes on disk and in Redis. Little-endian throughout (every supported CPU
// is); a reader trusts nothing before it has checked it.
//
//   offset  size  field
//        0     8  magic "VLLMKVB\0"
//        8     4  format version (1)
//       12     4  header bytes (the offset of the payload)
//       16    16  model fingerprint (model_fingerprint.h)
//       32     4  KV element type: 1 = f16, 2 = f32
//       36     4  block size (tokens)
//       40     4  layers
//       44     4  KV heads
//       48     4  head size
//       52     4  0 (reserved)
//       56     8  the parent block's chain hash (block_hash_chain.h; 0 for block 0)
//       64     8  this block's chain hash
//       72     8  payload bytes
//       80  4*bs  the block's token ids
//      ...        payload: for each layer, its K block then its V block, in
//                 the KV cache's layouts (kv_cache.h)
//      end     8  checksum64 of every byte before it
//
// A block whose fingerprint, geometry, parent hash or tokens differ from
// what the reader asked for is foreign: never used, even when its checksum
// holds (the tokens make a 64-bit hash collision harmless too).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kv_transfer/model_fingerprint.h"

namespace vllm::kv_transfer {

// Which block a record holds, as the prefix cache names it
// (core/block_hash_chain.h): its chain hash, its predecessor's, its tokens.
// Owned, so it can travel to the I/O threads.
struct BlockName {
    uint64_t hash = 0;
    uint64_t parent_hash = 0;
    std::vector<int32_t> tokens;  // block_size ids
};

enum class RecordCheck {
    Ok,
    Truncated,  // shorter than its header says
    Corrupt,    // bad magic, unknown version, inconsistent sizes or a checksum mismatch
    Foreign,    // another model, KV layout or block
};

const char* record_check_name(RecordCheck check);

// Writes the record of the block `name` whose K/V `payload`
// (geometry.payload_bytes() of them) holds.
std::string encode_block_record(const ModelFingerprint& fingerprint, const KvGeometry& geometry, const BlockName& name,
                                const unsigned char* payload);

// Checks `record` against what the reader expects; on Ok, `payload` points
// at its K/V bytes (inside `record`).
RecordCheck check_block_record(const std::string& record, const ModelFingerprint& fingerprint,
                               const KvGeometry& geometry, const BlockName& name, const unsigned char** payload);

}  // namespace vllm::kv_transfer
