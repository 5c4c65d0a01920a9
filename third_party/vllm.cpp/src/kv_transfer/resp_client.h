// A minimal Redis client speaking RESP (the Redis serialization protocol,
// version 2 as every server since 1.2 speaks it) over one TCP connection:
// commands go out as arrays of bulk strings, one reply comes back per
// command. Enough for GET, SET, EXISTS, AUTH, SELECT and PING: replies are
// simple strings, errors, integers and bulk strings (arrays are refused).
// Every socket operation has a deadline (connect, send, receive), so a hung
// server costs at most the timeout. Any failure closes the connection; the
// next command reconnects.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vllm::kv_transfer {

struct RespReply {
    enum class Type { SimpleString, Error, Integer, BulkString, Null };
    Type type = Type::Null;
    std::string text;     // SimpleString, Error, BulkString
    int64_t integer = 0;  // Integer
};

class RespClient {
public:
    RespClient(std::string host, int port, int timeout_ms);
    ~RespClient();
    RespClient(const RespClient&) = delete;
    RespClient& operator=(const RespClient&) = delete;

    bool connected() const { return fd_ >= 0; }
    // Connects (when not connected); false with why on failure.
    bool connect(std::string& why);
    // Sends one command and reads its reply. A bulk reply longer than
    // max_bulk is read and cut there. False with why (the connection is
    // then closed) on a socket, timeout or protocol failure; a Redis error
    // reply is a reply (Type::Error), not a failure.
    bool command(const std::vector<std::string_view>& args, RespReply& reply, std::string& why,
                 size_t max_bulk = size_t(512) << 20);
    void close();

private:
    bool send_all(const std::string& data, std::string& why);
    // Reads until the buffer holds a line ending in CRLF; returns it without the CRLF.
    bool read_line(std::string& line, std::string& why);
    bool read_exact(size_t n, std::string& out, size_t keep, std::string& why);
    bool fill(std::string& why);

    std::string host_;
    int port_;
    int timeout_ms_;
    int fd_ = -1;
    std::string buffer_;  // received, not yet consumed
    size_t consumed_ = 0;
};

}  // namespace vllm::kv_transfer
