// Which file, in which version: what a cache derived from a file (the
// prepared weights, model/prepared_cache.h) is keyed by, read with fstat
// from the very descriptor that was mapped, so the key and the bytes read
// are of one file even when the path is replaced meanwhile.
#pragma once
#include <cstdint>

namespace vllm {

struct FileIdentity {
    uint64_t device = 0;
    uint64_t inode = 0;
    uint64_t size = 0;
    // Nanoseconds since the epoch. The change time moves on every write and
    // cannot be set back by a program (touch -d sets only the others).
    int64_t modified_ns = 0;
    int64_t changed_ns = 0;

    bool operator==(const FileIdentity& o) const {
        return device == o.device && inode == o.inode && size == o.size && modified_ns == o.modified_ns &&
               changed_ns == o.changed_ns;
    }
    bool operator!=(const FileIdentity& o) const { return !(*this == o); }
};

// The identity of the file open as `fd` (false when fstat fails).
bool identity_of_descriptor(int fd, FileIdentity& out);

}  // namespace vllm
