#include "kv_transfer/resp_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace vllm::kv_transfer {

namespace {

constexpr size_t kMaxLine = 1 << 16;

// Waits until fd is ready for `events` or the timeout passes.
bool wait_ready(int fd, short events, int timeout_ms) {
    pollfd p{fd, events, 0};
    for (;;) {
        const int r = ::poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        return r > 0;
    }
}

}  // namespace

RespClient::RespClient(std::string host, int port, int timeout_ms)
    : host_(std::move(host)), port_(port), timeout_ms_(timeout_ms) {}

RespClient::~RespClient() { close(); }

void RespClient::close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    buffer_.clear();
    consumed_ = 0;
}

bool RespClient::connect(std::string& why) {
    if (fd_ >= 0) return true;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string port = std::to_string(port_);
    const int gai = ::getaddrinfo(host_.c_str(), port.c_str(), &hints, &found);
    if (gai != 0) {
        why = "cannot resolve Redis host '" + host_ + "': " + ::gai_strerror(gai);
        return false;
    }
    why = "cannot connect to Redis at " + host_ + ":" + port;
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
        if (r != 0 && errno == EINPROGRESS && wait_ready(fd, POLLOUT, timeout_ms_)) {
            int err = 0;
            socklen_t len = sizeof err;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
            r = err == 0 ? 0 : -1;
            errno = err != 0 ? err : ETIMEDOUT;
        } else if (r != 0 && errno == EINPROGRESS) {
            errno = ETIMEDOUT;
        }
        if (r != 0) {
            why = "cannot connect to Redis at " + host_ + ":" + port + ": " + std::strerror(errno);
            ::close(fd);
            continue;
        }
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;  // stays non-blocking: every read and write polls with the deadline
        break;
    }
    ::freeaddrinfo(found);
    return fd_ >= 0;
}

bool RespClient::send_all(const std::string& data, std::string& why) {
    size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t w = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (w > 0) {
            sent += static_cast<size_t>(w);
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_ready(fd_, POLLOUT, timeout_ms_)) continue;
        why = w < 0 && errno != EAGAIN ? std::string("Redis send failed: ") + std::strerror(errno)
                                       : "Redis send timed out after " + std::to_string(timeout_ms_) + " ms";
        return false;
    }
    return true;
}

bool RespClient::fill(std::string& why) {
    if (consumed_ > 0 && consumed_ == buffer_.size()) {
        buffer_.clear();
        consumed_ = 0;
    }
    char chunk[1 << 16];
    for (;;) {
        const ssize_t r = ::recv(fd_, chunk, sizeof chunk, 0);
        if (r > 0) {
            buffer_.append(chunk, static_cast<size_t>(r));
            return true;
        }
        if (r == 0) {
            why = "Redis closed the connection";
            return false;
        }
        if (errno == EINTR) continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && wait_ready(fd_, POLLIN, timeout_ms_)) continue;
        why = errno == EAGAIN || errno == EWOULDBLOCK
                  ? "Redis did not answer within " + std::to_string(timeout_ms_) + " ms"
                  : std::string("Redis receive failed: ") + std::strerror(errno);
        return false;
    }
}

bool RespClient::read_line(std::string& line, std::string& why) {
    for (;;) {
        const size_t end = buffer_.find("\r\n", consumed_);
        if (end != std::string::npos) {
            line.assign(buffer_, consumed_, end - consumed_);
            consumed_ = end + 2;
            return true;
        }
        if (buffer_.size() - consumed_ > kMaxLine) {
            why = "Redis sent a line longer than " + std::to_string(kMaxLine) + " bytes";
            return false;
        }
        if (!fill(why)) return false;
    }
}

bool RespClient::read_exact(size_t n, std::string& out, size_t keep, std::string& why) {
    out.clear();
    size_t remaining = n;
    while (remaining > 0) {
        if (consumed_ == buffer_.size() && !fill(why)) return false;
        const size_t take = std::min(remaining, buffer_.size() - consumed_);
        if (out.size() < keep) out.append(buffer_, consumed_, std::min(take, keep - out.size()));
        consumed_ += take;
        remaining -= take;
    }
    return true;
}

bool RespClient::command(const std::vector<std::string_view>& args, RespReply& reply, std::string& why,
                         size_t max_bulk) {
    reply = RespReply{};
    if (!connect(why)) return false;
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (std::string_view a : args) {
        out += "$" + std::to_string(a.size()) + "\r\n";
        out.append(a.data(), a.size());
        out += "\r\n";
    }
    std::string line;
    bool ok = send_all(out, why) && read_line(line, why);
    if (ok && line.empty()) {
        why = "Redis sent an empty reply line";
        ok = false;
    }
    if (ok) {
        const char type = line[0];
        const std::string body = line.substr(1);
        char* end = nullptr;
        switch (type) {
            case '+': reply.type = RespReply::Type::SimpleString; reply.text = body; break;
            case '-': reply.type = RespReply::Type::Error; reply.text = body; break;
            case ':':
                reply.type = RespReply::Type::Integer;
                reply.integer = std::strtoll(body.c_str(), &end, 10);
                if (body.empty() || *end != '\0') why = "Redis sent a malformed integer", ok = false;
                break;
            case '$': {
                const long long n = std::strtoll(body.c_str(), &end, 10);
                if (body.empty() || *end != '\0' || n < -1) {
                    why = "Redis sent a malformed bulk length";
                    ok = false;
                } else if (n == -1) {
                    reply.type = RespReply::Type::Null;
                } else {
                    reply.type = RespReply::Type::BulkString;
                    std::string crlf;
                    ok = read_exact(static_cast<size_t>(n), reply.text, max_bulk, why) && read_exact(2, crlf, 2, why);
                    if (ok && crlf != "\r\n") why = "Redis sent a bulk string without its CRLF", ok = false;
                }
                break;
            }
            default:
                why = std::string("Redis sent an unexpected reply type '") + type + "'";
                ok = false;
        }
    }
    if (!ok) close();
    return ok;
}

}  // namespace vllm::kv_transfer
