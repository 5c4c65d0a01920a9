#include "kv_transfer/kv_block_record.h"

#include <cstring>

#include "kv_transfer/checksum.h"

namespace vllm::kv_transfer {

namespace {

constexpr char kMagic[8] = {'V', 'L', 'L', 'M', 'K', 'V', 'B', '\0'};
constexpr uint32_t kVersion = 1;
constexpr size_t kFixedHeader = 80;
constexpr size_t kChecksumBytes = 8;

uint32_t dtype_code(KvDtype dtype) {
    switch (dtype) {
        case KvDtype::F16: return 1;
        case KvDtype::F32: return 2;
        case KvDtype::I8: return 3;
    }
    return 0;
}

size_t header_bytes(int block_size) { return kFixedHeader + sizeof(int32_t) * size_t(block_size); }

template <typename T>
void put(std::string& out, size_t offset, T v) {
    std::memcpy(&out[offset], &v, sizeof v);
}

template <typename T>
T get(const std::string& in, size_t offset) {
    T v;
    std::memcpy(&v, in.data() + offset, sizeof v);
    return v;
}

}  // namespace

const char* record_check_name(RecordCheck check) {
    switch (check) {
        case RecordCheck::Ok: return "ok";
        case RecordCheck::Truncated: return "truncated";
        case RecordCheck::Corrupt: return "corrupt";
        case RecordCheck::Foreign: return "foreign";
    }
    return "";
}

std::string encode_block_record(const ModelFingerprint& fingerprint, const KvGeometry& geometry, const BlockName& name,
                                const unsigned char* payload) {
    const size_t header = header_bytes(geometry.block_size);
    const size_t payload_bytes = geometry.payload_bytes();
    std::string out(header + payload_bytes + kChecksumBytes, '\0');
    std::memcpy(&out[0], kMagic, sizeof kMagic);
    put<uint32_t>(out, 8, kVersion);
    put<uint32_t>(out, 12, static_cast<uint32_t>(header));
    put<uint64_t>(out, 16, fingerprint.words[0]);
    put<uint64_t>(out, 24, fingerprint.words[1]);
    put<uint32_t>(out, 32, dtype_code(geometry.dtype));
    put<uint32_t>(out, 36, static_cast<uint32_t>(geometry.block_size));
    put<uint32_t>(out, 40, static_cast<uint32_t>(geometry.n_layers));
    put<uint32_t>(out, 44, static_cast<uint32_t>(geometry.n_kv_heads));
    put<uint32_t>(out, 48, static_cast<uint32_t>(geometry.head_dim));
    put<uint64_t>(out, 56, name.parent_hash);
    put<uint64_t>(out, 64, name.hash);
    put<uint64_t>(out, 72, payload_bytes);
    std::memcpy(&out[kFixedHeader], name.tokens.data(), sizeof(int32_t) * name.tokens.size());
    std::memcpy(&out[header], payload, payload_bytes);
    put<uint64_t>(out, header + payload_bytes, checksum64(out.data(), header + payload_bytes));
    return out;
}

RecordCheck check_block_record(const std::string& record, const ModelFingerprint& fingerprint,
                               const KvGeometry& geometry, const BlockName& name, const unsigned char** payload) {
    *payload = nullptr;
    if (record.size() < kFixedHeader) return RecordCheck::Truncated;
    if (std::memcmp(record.data(), kMagic, sizeof kMagic) != 0) return RecordCheck::Corrupt;
    if (get<uint32_t>(record, 8) != kVersion) return RecordCheck::Corrupt;
    // The sizes the record claims, checked for consistency before use.
    const uint64_t header = get<uint32_t>(record, 12);
    const uint64_t block_size = get<uint32_t>(record, 36);
    const uint64_t payload_bytes = get<uint64_t>(record, 72);
    if (block_size == 0 || block_size > (1u << 20) || header != header_bytes(static_cast<int>(block_size)) ||
        payload_bytes > (uint64_t(1) << 40))
        return RecordCheck::Corrupt;
    const uint64_t total = header + payload_bytes + kChecksumBytes;
    if (record.size() < total) return RecordCheck::Truncated;
    if (record.size() > total) return RecordCheck::Corrupt;
    if (get<uint64_t>(record, header + payload_bytes) != checksum64(record.data(), header + payload_bytes))
        return RecordCheck::Corrupt;
    // Intact: now is it the block asked for, of this model and layout?
    const bool same_model = get<uint64_t>(record, 16) == fingerprint.words[0] &&
                            get<uint64_t>(record, 24) == fingerprint.words[1] &&
                            get<uint32_t>(record, 32) == dtype_code(geometry.dtype) &&
                            block_size == uint64_t(geometry.block_size) &&
                            get<uint32_t>(record, 40) == uint32_t(geometry.n_layers) &&
                            get<uint32_t>(record, 44) == uint32_t(geometry.n_kv_heads) &&
                            get<uint32_t>(record, 48) == uint32_t(geometry.head_dim) &&
                            payload_bytes == geometry.payload_bytes();
    if (!same_model) return RecordCheck::Foreign;
    if (get<uint64_t>(record, 56) != name.parent_hash || get<uint64_t>(record, 64) != name.hash ||
        name.tokens.size() != block_size ||
        std::memcmp(record.data() + kFixedHeader, name.tokens.data(), sizeof(int32_t) * block_size) != 0)
        return RecordCheck::Foreign;
    *payload = reinterpret_cast<const unsigned char*>(record.data()) + header;
    return RecordCheck::Ok;
}

}  // namespace vllm::kv_transfer
