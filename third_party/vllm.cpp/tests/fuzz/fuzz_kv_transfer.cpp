// KV transfer's untrusted input: the kv_transfer_config text
// (kv_transfer/kv_transfer_config.h) and stored block records, which any
// writer of a shared store can plant (kv_transfer/kv_block_record.h).
// The first byte picks: even, the rest is a config; odd, the rest damages a
// valid record (bytes 1-2: the length to cut it to, little-endian, 0xffff
// for none; then bytes XOR-ed over it from the start), so every check of
// check_block_record is reachable without forging a checksum.
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "kv_transfer/kv_block_record.h"
#include "kv_transfer/kv_transfer_config.h"

namespace {

using namespace vllm;
using namespace vllm::kv_transfer;

struct Expected {
    KvGeometry geometry;
    ModelFingerprint fingerprint{{1, 2}};
    BlockName name;
    std::string record;

    Expected() {
        geometry.n_layers = 2;
        geometry.n_kv_heads = 1;
        geometry.head_dim = 4;
        geometry.block_size = 4;
        geometry.layer_windows = {0, 0};
        name.hash = 0x1234;
        name.parent_hash = 7;
        name.tokens = {1, 2, 3, 4};
        std::vector<unsigned char> payload(geometry.payload_bytes(), 0x5a);
        record = encode_block_record(fingerprint, geometry, name, payload.data());
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    if (data[0] % 2 == 0) {
        fuzz::refusals_allowed([&] { KvTransferConfig::parse(std::string(fuzz::text(data + 1, size - 1))); });
        return 0;
    }
    static const Expected expected;
    std::string record = expected.record;
    size_t at = 1;
    if (size >= 3) {
        const size_t cut = size_t(data[1]) | (size_t(data[2]) << 8);
        if (cut != 0xffff && cut < record.size()) record.resize(cut);
        at = 3;
    }
    for (size_t i = 0; at + i < size && i < record.size(); ++i) record[i] ^= static_cast<char>(data[at + i]);
    const unsigned char* payload = nullptr;
    const RecordCheck check = check_block_record(record, expected.fingerprint, expected.geometry, expected.name, &payload);
    if (check == RecordCheck::Ok) {
        // ASan checks the payload lies inside the record.
        volatile unsigned char sink = payload[0] ^ payload[expected.geometry.payload_bytes() - 1];
        (void)sink;
    }
    return 0;
}
