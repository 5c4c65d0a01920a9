// A directory of block records (SharedStorageConnector, as vLLM's keeps
// one on a local or shared file system): <root>/<model fingerprint>/<block
// hash>.kvblock. A record is written to a hidden temporary file beside it
// and renamed into place, so readers and concurrent writers never see half
// a block and a writer killed mid-write leaves only its temporary file
// (never read; left for the operator to delete). A missing, unreadable or
// unwritable directory, or a full disk, is reported, never thrown.
#pragma once
#include <string>

#include "kv_transfer/kv_store.h"

namespace vllm::kv_transfer {

class DirectoryKvStore : public KvStore {
public:
    explicit DirectoryKvStore(std::string root) : root_(std::move(root)) {}

    StoreResult get(const StoreKey& key, size_t max_bytes, std::string& record, std::string& why) override;
    StoreResult exists(const StoreKey& key, std::string& why) override;
    bool put(const StoreKey& key, const std::string& record, std::string& why) override;

    std::string path_of(const StoreKey& key) const;

private:
    std::string root_;
    uint64_t temp_counter_ = 0;
};

}  // namespace vllm::kv_transfer
