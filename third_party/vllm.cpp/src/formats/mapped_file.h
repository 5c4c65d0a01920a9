// A read-only memory map of one regular file, the storage under every
// model loader (GGUF files, safetensors shards): tensor data is read in
// place, so resident memory stays about the size of what is touched.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "formats/file_identity.h"

namespace vllm {

class MappedFile {
public:
    // Maps `path`. Anything but a regular file (a directory, a FIFO, a
    // device) is refused before it is read, so a FIFO cannot block the
    // load. Failures go to `fail` with the reason (errno text, "is a
    // directory", ...), which must throw.
    MappedFile(const std::string& path, const std::function<void(const std::string&)>& fail);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return static_cast<const uint8_t*>(map_); }
    size_t size() const { return size_; }

    // Tells the OS that bytes [data, data + n) of the mapping (copied
    // elsewhere) will not be read again: the pages wholly inside are dropped
    // from memory (read back from the file should they be touched).
    void release(const uint8_t* data, size_t n) const;

    // The mapped file's device, inode, size and times when it was mapped.
    const FileIdentity& identity() const { return identity_; }

private:
    FileIdentity identity_;
    void* map_ = nullptr;
    size_t size_ = 0;
};

}  // namespace vllm
