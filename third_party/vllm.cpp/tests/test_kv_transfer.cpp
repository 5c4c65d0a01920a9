// KV transfer without a model: the config's refusals, the block record
// (round trip; truncated, corrupt and foreign records refused), the
// directory store (atomic writes under concurrent writers and readers,
// leftovers of a killed writer ignored, unwritable directories and failed
// writes reported),
// the I/O worker (saves then loads, a refused block stops a load and is
// overwritten by the next save, failures counted as warnings), and the
// Redis client against servers that are not there or never answer.
// With a port argument (a redis-server the Python suite started on
// 127.0.0.1), the Redis store and the worker run against it too.
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kv_transfer/checksum.h"
#include "kv_transfer/directory_kv_store.h"
#include "kv_transfer/kv_block_record.h"
#include "kv_transfer/kv_transfer_config.h"
#include "kv_transfer/kv_transfer_worker.h"
#include "kv_transfer/redis_kv_store.h"
#include "kv_transfer/resp_client.h"
#include "util/error.h"
#include "check.h"

using namespace vllm;
using namespace vllm::kv_transfer;

namespace {

KvGeometry small_geometry() {
    KvGeometry g;
    g.n_layers = 3;
    g.n_kv_heads = 2;
    g.head_dim = 8;
    g.block_size = 4;
    g.dtype = KvDtype::F16;
    g.layer_windows = {0, 0, 0};
    return g;
}

ModelFingerprint fingerprint_a() { return ModelFingerprint{{0x1111, 0x2222}}; }
ModelFingerprint fingerprint_b() { return ModelFingerprint{{0x1111, 0x2223}}; }

struct TestBlock {
    BlockName name;
    std::vector<unsigned char> payload;
};

// Block i of a made-up token sequence, chained like the prefix cache (any
// chain hash serves: records and stores only carry it).
std::vector<TestBlock> make_chain(int n, const KvGeometry& g, int salt = 0) {
    std::vector<TestBlock> blocks;
    uint64_t parent = 0;
    for (int i = 0; i < n; ++i) {
        TestBlock b;
        b.name.parent_hash = parent;
        for (int t = 0; t < g.block_size; ++t) b.name.tokens.push_back(100 + salt + i * g.block_size + t);
        b.name.hash = checksum64(b.name.tokens.data(), sizeof(int32_t) * b.name.tokens.size(), parent);
        parent = b.name.hash;
        b.payload.resize(g.payload_bytes());
        for (size_t k = 0; k < b.payload.size(); ++k) b.payload[k] = static_cast<unsigned char>((k * 31 + i * 7 + salt) & 0xff);
        blocks.push_back(std::move(b));
    }
    return blocks;
}

std::string temp_dir(const char* name) {
    char templ[256];
    std::snprintf(templ, sizeof templ, "/tmp/vllm_kvx_%s_XXXXXX", name);
    const char* made = ::mkdtemp(templ);
    return made ? made : "";
}

bool refused(const std::string& json, const std::string& fragment) {
    try {
        KvTransferConfig::parse(json);
    } catch (const Error& e) {
        const bool ok = e.status() == VLLM_ERR_INVALID_ARGUMENT && std::string(e.what()).find(fragment) != std::string::npos;
        if (!ok) std::printf("  message was: %s\n", e.what());
        return ok;
    }
    return false;
}

void test_config() {
    KvTransferConfig c = KvTransferConfig::parse(
        R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_both","kv_connector_extra_config":{"shared_storage_path":"/tmp/x"}})");
    check(c.connector == ConnectorKind::SharedStorage && c.role == KvRole::Both && c.shared_storage_path == "/tmp/x",
          "config: SharedStorageConnector parsed");
    check(c.saves() && c.loads(), "config: kv_both saves and loads");
    c = KvTransferConfig::parse(
        R"({"kv_connector":"ExampleConnector","kv_role":"kv_consumer","kv_connector_extra_config":{"shared_storage_path":"d"}})");
    check(c.connector == ConnectorKind::SharedStorage && !c.saves() && c.loads(), "config: ExampleConnector alias, consumer");
    c = KvTransferConfig::parse(
        R"({"kv_connector":"RedisConnector","kv_role":"kv_producer","kv_connector_extra_config":{"url":"redis://:pw@cache.local:6380/3","timeout_ms":250}})");
    check(c.connector == ConnectorKind::Redis && c.saves() && !c.loads() && c.redis.host == "cache.local" &&
              c.redis.port == 6380 && c.redis.db == 3 && c.redis.password == "pw" && c.timeout_ms == 250,
          "config: RedisConnector url parsed");
    c = KvTransferConfig::parse(R"({"kv_connector":"RedisConnector","kv_role":"kv_both","kv_connector_extra_config":{"url":"redis://localhost"}})");
    check(c.redis.host == "localhost" && c.redis.port == 6379 && c.redis.db == 0, "config: Redis defaults");

    check(refused("not json", "invalid JSON"), "config: malformed JSON refused");
    check(refused("[]", "must be a JSON object"), "config: non-object refused");
    check(refused(R"({"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{}})",
                  "unknown kv_connector 'NixlConnector'"), "config: unknown connector refused");
    check(refused(R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_reader","kv_connector_extra_config":{"shared_storage_path":"d"}})",
                  "unknown kv_role 'kv_reader'"), "config: unknown role refused");
    check(refused(R"({"kv_connector":"SharedStorageConnector","kv_connector_extra_config":{"shared_storage_path":"d"}})",
                  "'kv_role' is required"), "config: missing role refused");
    check(refused(R"({"kv_role":"kv_both"})", "'kv_connector' is required"), "config: missing connector refused");
    check(refused(R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_both"})",
                  "'kv_connector_extra_config' is required"), "config: missing extra config refused");
    check(refused(R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_both","kv_connector_extra_config":{}})",
                  "'shared_storage_path' is required"), "config: missing path refused");
    check(refused(R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_both","kv_connector_extra_config":{"shared_storage_path":""}})",
                  "non-empty string"), "config: empty path refused");
    check(refused(R"({"kv_connector":"RedisConnector","kv_role":"kv_both","kv_connector_extra_config":{}})",
                  "'url' is required"), "config: missing url refused");
    check(refused(R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_both","kv_rank":0,"kv_connector_extra_config":{"shared_storage_path":"d"}})",
                  "'kv_rank' is not supported"), "config: unknown field refused");
    check(refused(R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_both","kv_connector_extra_config":{"shared_storage_path":"d","url":"redis://x"}})",
                  "'url' is not supported by SharedStorageConnector"), "config: another connector's field refused");
    check(refused(R"({"kv_connector":"RedisConnector","kv_role":"kv_both","kv_connector_extra_config":{"url":"rediss://x"}})",
                  "TLS"), "config: rediss refused");
    check(refused(R"({"kv_connector":"RedisConnector","kv_role":"kv_both","kv_connector_extra_config":{"url":"http://x"}})",
                  "must start with redis://"), "config: non-redis url refused");
    check(refused(R"({"kv_connector":"RedisConnector","kv_role":"kv_both","kv_connector_extra_config":{"url":"redis://x:99999"}})",
                  "port"), "config: bad port refused");
    check(refused(R"({"kv_connector":"RedisConnector","kv_role":"kv_both","kv_connector_extra_config":{"url":"redis://x","timeout_ms":0}})",
                  "timeout_ms"), "config: bad timeout refused");
}

void test_checksum() {
    std::string data(1000, 'x');
    const uint64_t h = checksum64(data.data(), data.size());
    check(h == checksum64(data.data(), data.size()), "checksum: deterministic");
    bool all_differ = true;
    for (size_t i = 0; i < data.size(); i += 37) {
        std::string flipped = data;
        flipped[i] ^= 1;
        all_differ = all_differ && checksum64(flipped.data(), flipped.size()) != h;
    }
    check(all_differ, "checksum: every one-bit flip changes it");
    check(checksum64(data.data(), 999) != checksum64(data.data(), 1000), "checksum: length matters");
    check(checksum64(data.data(), 10, 1) != checksum64(data.data(), 10, 2), "checksum: seed matters");
}

void test_record() {
    const KvGeometry g = small_geometry();
    const std::vector<TestBlock> chain = make_chain(2, g);
    const TestBlock& b = chain[1];
    const std::string record = encode_block_record(fingerprint_a(), g, b.name, b.payload.data());
    const unsigned char* payload = nullptr;
    check(check_block_record(record, fingerprint_a(), g, b.name, &payload) == RecordCheck::Ok &&
              std::memcmp(payload, b.payload.data(), b.payload.size()) == 0,
          "record: round trip");
    bool all_truncated = true;
    for (size_t n : {size_t(0), size_t(7), size_t(79), size_t(100), record.size() / 2, record.size() - 1})
        all_truncated = all_truncated &&
                        check_block_record(record.substr(0, n), fingerprint_a(), g, b.name, &payload) ==
                            RecordCheck::Truncated && payload == nullptr;
    check(all_truncated, "record: every cut is truncated");
    bool all_corrupt = true;
    for (size_t at : {size_t(0), size_t(9), size_t(20), size_t(90), record.size() / 2, record.size() - 1}) {
        std::string bad = record;
        bad[at] ^= 0x10;
        const RecordCheck c = check_block_record(bad, fingerprint_a(), g, b.name, &payload);
        all_corrupt = all_corrupt && c != RecordCheck::Ok && payload == nullptr;
    }
    check(all_corrupt, "record: a flipped bit anywhere is refused");
    check(check_block_record(record + "x", fingerprint_a(), g, b.name, &payload) == RecordCheck::Corrupt,
          "record: trailing bytes are corrupt");
    check(check_block_record(record, fingerprint_b(), g, b.name, &payload) == RecordCheck::Foreign,
          "record: another model's fingerprint is foreign");
    KvGeometry f32 = g;
    f32.dtype = KvDtype::F32;
    check(check_block_record(record, fingerprint_a(), f32, b.name, &payload) == RecordCheck::Foreign,
          "record: another KV dtype is foreign");
    KvGeometry heads = g;
    heads.n_kv_heads = 4;
    check(check_block_record(record, fingerprint_a(), heads, b.name, &payload) == RecordCheck::Foreign,
          "record: another geometry is foreign");
    // Layers of their own shapes (kv_layer_shape.h): the payload holds
    // what each keeps, so a record of the uniform shape is foreign to it.
    KvGeometry shaped = g;
    shaped.layer_shapes = {{2, 8, 8}, {1, 12, 0}, {0, 0, 0}};
    check(shaped.payload_bytes() == size_t(g.block_size) * (2 * 2 * 8 + 12 + 0) * 2 &&
              check_block_record(record, fingerprint_a(), shaped, b.name, &payload) == RecordCheck::Foreign,
          "record: per-layer shapes size the payload; another shape is foreign");
    BlockName other = b.name;
    other.tokens[2] += 1;
    check(check_block_record(record, fingerprint_a(), g, other, &payload) == RecordCheck::Foreign,
          "record: other tokens under the same hash are foreign (collision)");
    other = b.name;
    other.parent_hash ^= 1;
    check(check_block_record(record, fingerprint_a(), g, other, &payload) == RecordCheck::Foreign,
          "record: another parent is foreign");
}

void test_directory_store() {
    const KvGeometry g = small_geometry();
    const std::string root = temp_dir("dir");
    DirectoryKvStore store(root + "/nested/store");  // created on first write
    const std::vector<TestBlock> chain = make_chain(3, g);
    const StoreKey key{fingerprint_a().hex(), chain[0].name.hash};
    std::string why, got;
    check(store.get(key, 1 << 20, got, why) == StoreResult::Miss, "dir: missing directory is a miss");
    check(store.exists(key, why) == StoreResult::Miss, "dir: exists on a missing directory");
    const std::string record = encode_block_record(fingerprint_a(), g, chain[0].name, chain[0].payload.data());
    check(store.put(key, record, why), "dir: put creates the directories (" + why + ")");
    check(store.exists(key, why) == StoreResult::Hit, "dir: exists after put");
    check(store.get(key, 1 << 20, got, why) == StoreResult::Hit && got == record, "dir: get returns the record");
    check(store.get(key, 100, got, why) == StoreResult::Hit && got.size() == 100, "dir: get stops at max_bytes");

    // A killed writer's leftover temporary file is never read.
    const std::string leftover = root + "/nested/store/" + key.model + "/." + StoreKey{key.model, chain[1].name.hash}.block_hex() + ".tmp.1.2.3";
    std::ofstream(leftover) << record.substr(0, 50);
    check(store.get(StoreKey{key.model, chain[1].name.hash}, 1 << 20, got, why) == StoreResult::Miss,
          "dir: a leftover temporary file is not a block");

    // Concurrent writers of the same and of different keys, with readers:
    // a reader sees a whole record or nothing.
    std::vector<std::string> records;
    for (const TestBlock& b : chain) records.push_back(encode_block_record(fingerprint_a(), g, b.name, b.payload.data()));
    std::atomic<int> bad_reads{0}, failed_writes{0};
    std::atomic<bool> writing{true};
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w)
        threads.emplace_back([&, w] {
            DirectoryKvStore mine(root + "/nested/store");
            std::string why_w;
            for (int round = 0; round < 50; ++round) {
                const int i = (w + round) % 3;
                if (!mine.put(StoreKey{key.model, chain[i].name.hash}, records[i], why_w)) ++failed_writes;
            }
        });
    std::thread reader([&] {
        DirectoryKvStore mine(root + "/nested/store");
        std::string r, why_r;
        while (writing) {
            for (int i = 0; i < 3; ++i) {
                const StoreResult s = mine.get(StoreKey{key.model, chain[i].name.hash}, 1 << 20, r, why_r);
                if (s == StoreResult::Unavailable || (s == StoreResult::Hit && r != records[i])) ++bad_reads;
            }
        }
    });
    for (std::thread& t : threads) t.join();
    writing = false;
    reader.join();
    check(failed_writes == 0 && bad_reads == 0, "dir: concurrent writers and a reader never see half a record");

    // Unwritable: a path under a regular file (root ignores permission bits).
    const std::string file = root + "/a_file";
    std::ofstream(file) << "x";
    DirectoryKvStore blocked(file + "/store");
    why.clear();
    check(!blocked.put(key, record, why) && !why.empty(), "dir: unwritable directory reported: " + why);
    check(blocked.get(key, 1 << 20, got, why) == StoreResult::Miss, "dir: unreadable store is a miss");
    // A full disk: a file size limit makes the write fail (EFBIG) as
    // ENOSPC would; the temporary file is removed, nothing is published.
    struct rlimit saved {};
    ::getrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = 100;  // below one record
    ::setrlimit(RLIMIT_FSIZE, &small);
    DirectoryKvStore full(root + "/full");
    why.clear();
    const bool stored = full.put(key, record, why);
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::string left = root + "/full/" + key.model;
    check(!stored && why.find("cannot write") != std::string::npos, "dir: a failed write is reported: " + why);
    check(full.exists(key, why) == StoreResult::Miss && std::system(("test -z \"$(ls -A '" + left + "')\"").c_str()) == 0,
          "dir: a failed write leaves no file");
    std::system(("rm -rf '" + root + "'").c_str());
}

// A worker over `config` saves a chain, then (in a fresh worker, as another
// process would) loads it back; a corrupted record stops the load there
// and the next save overwrites it. `corrupt` flips a byte of a stored
// record: setting one to a fixed value would leave the record intact when
// the chain's random salt already put that value there.
void worker_round_trip(const KvTransferConfig& config, const std::string& what,
                       const std::function<void(const StoreKey&)>& corrupt) {
    const KvGeometry g = small_geometry();
    const std::vector<TestBlock> chain = make_chain(5, g, static_cast<int>(std::chrono::steady_clock::now().time_since_epoch().count() % 1000));
    {
        KvTransferWorker saver(config, fingerprint_a(), g, [] {});
        for (const TestBlock& b : chain) saver.submit_save(BlockToSave{1, b.name, b.payload});
        saver.submit_save(BlockToSave{1, chain[0].name, chain[0].payload});  // again: skipped
        saver.wait_for_saves();
        check(!saver.saves_pending(1), what + ": no saves pending for the request once written");
        const KvTransferStats s = saver.stats();
        check(s.blocks_saved == 5 && s.blocks_already_stored == 1 && s.warnings == 0 && s.saves_pending == 0 &&
                  s.tokens_saved == 5 * g.block_size && s.bytes_saved == 5 * int64_t(g.payload_bytes()),
              what + ": saves counted (" + s.to_json() + ")");
    }
    std::vector<BlockToLoad> wanted;
    for (int i = 0; i < 5; ++i) wanted.push_back(BlockToLoad{i, chain[i].name});
    wanted.push_back(BlockToLoad{5, make_chain(6, g, 999)[5].name});  // never stored
    std::atomic<int> wakes{0};
    auto load_all = [&](KvTransferWorker& w) {
        w.submit_load(7, wanted);
        for (int spin = 0; spin < 2000; ++spin) {
            std::vector<LoadedBlocks> done = w.take_loaded();
            if (!done.empty()) return done[0];
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return LoadedBlocks{};
    };
    {
        KvTransferWorker loader(config, fingerprint_a(), g, [&] { ++wakes; });
        LoadedBlocks got = load_all(loader);
        bool same = got.ticket == 7 && got.blocks.size() == 5;
        for (size_t i = 0; same && i < got.blocks.size(); ++i)
            same = std::memcmp(got.records[i].data() + got.payload_offset, chain[i].payload.data(), g.payload_bytes()) == 0;
        const KvTransferStats s = loader.stats();
        check(same && wakes == 1 && s.blocks_loaded == 5 && s.load_misses == 1 && s.blocks_rejected == 0,
              what + ": five blocks loaded, then a miss (" + s.to_json() + ")");
    }
    corrupt(StoreKey{fingerprint_a().hex(), chain[2].name.hash});
    {
        KvTransferWorker both(config, fingerprint_a(), g, [] {});
        LoadedBlocks got = load_all(both);
        KvTransferStats s = both.stats();
        check(got.blocks.size() == 2 && s.blocks_rejected == 1 && s.last_warning.find("refused") != std::string::npos,
              what + ": a corrupted block stops the load (" + s.to_json() + ")");
        if (config.saves()) {
            both.submit_save(BlockToSave{1, chain[2].name, chain[2].payload});
            both.wait_for_saves();
            got = load_all(both);
            s = both.stats();
            check(got.blocks.size() == 5 && s.blocks_saved == 1, what + ": the refused block was overwritten (" + s.to_json() + ")");
        }
    }
}

KvTransferConfig dir_config(const std::string& path) {
    return KvTransferConfig::parse(R"({"kv_connector":"SharedStorageConnector","kv_role":"kv_both","kv_connector_extra_config":{"shared_storage_path":")" +
                                   path + R"("}})");
}

void test_worker_directory() {
    const std::string root = temp_dir("worker");
    DirectoryKvStore store(root);
    worker_round_trip(dir_config(root), "worker/dir", [&](const StoreKey& key) {
        std::fstream f(store.path_of(key), std::ios::in | std::ios::out | std::ios::binary);
        f.seekg(200);
        const char byte = static_cast<char>(f.get());
        f.seekp(200);
        f.put(static_cast<char>(~byte));
    });
    // An unwritable store: saves fail with warnings, loads miss; nothing throws.
    const std::string file = root + "/a_file";
    std::ofstream(file) << "x";
    const KvGeometry g = small_geometry();
    const std::vector<TestBlock> chain = make_chain(2, g);
    KvTransferWorker w(dir_config(file + "/store"), fingerprint_a(), g, [] {});
    for (const TestBlock& b : chain) w.submit_save(BlockToSave{1, b.name, b.payload});
    w.wait_for_saves();
    const KvTransferStats s = w.stats();
    check(s.blocks_saved == 0 && s.warnings == 2 && s.last_warning.find("cannot create") != std::string::npos,
          "worker/dir: an unwritable directory counts warnings (" + s.to_json() + ")");
    std::system(("rm -rf '" + root + "'").c_str());
}

// A listening socket nobody accepts from: connects succeed (the backlog),
// replies never come.
int silent_server(int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd, 8);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    return fd;
}

void test_redis_unreachable() {
    int port = 0;
    const int listener = silent_server(port);
    RedisAddress silent{"127.0.0.1", port, 0, ""};
    RedisKvStore hung(silent, 200);
    std::string why, got;
    const auto start = std::chrono::steady_clock::now();
    const StoreResult r = hung.get(StoreKey{"m", 1}, 100, got, why);
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check(r == StoreResult::Unavailable && why.find("did not answer") != std::string::npos && waited < 5,
          "redis: a server that never answers times out (" + why + ")");
    // In the back-off, calls fail at once without touching the network.
    check(hung.exists(StoreKey{"m", 1}, why) == StoreResult::Unavailable && why.find("retrying") != std::string::npos,
          "redis: back-off after a failure (" + why + ")");
    ::close(listener);  // now nothing listens on the port
    RedisKvStore closed(silent, 200);
    why.clear();
    check(!closed.put(StoreKey{"m", 1}, "x", why) && why.find("cannot connect") != std::string::npos,
          "redis: a closed port is unavailable (" + why + ")");
    RedisKvStore unresolvable(RedisAddress{"no-such-host.invalid", 6379, 0, ""}, 200);
    check(unresolvable.get(StoreKey{"m", 1}, 10, got, why) == StoreResult::Unavailable, "redis: unknown host (" + why + ")");
}

void test_redis_live(int port) {
    RespClient client("127.0.0.1", port, 2000);
    RespReply reply;
    std::string why;
    check(client.command({"PING"}, reply, why) && reply.type == RespReply::Type::SimpleString && reply.text == "PONG",
          "redis live: PING");
    check(client.command({"SET", "vllm-cpp:test", std::string("a\r\nb\0c", 6)}, reply, why) && reply.text == "OK",
          "redis live: SET binary");
    check(client.command({"GET", "vllm-cpp:test"}, reply, why) && reply.type == RespReply::Type::BulkString &&
              reply.text == std::string("a\r\nb\0c", 6),
          "redis live: GET binary");
    check(client.command({"GET", "vllm-cpp:absent"}, reply, why) && reply.type == RespReply::Type::Null, "redis live: GET missing");
    check(client.command({"NOSUCHCOMMAND"}, reply, why) && reply.type == RespReply::Type::Error, "redis live: error reply");
    check(client.command({"EXISTS", "vllm-cpp:test"}, reply, why) && reply.integer == 1, "redis live: EXISTS");
    const KvTransferConfig config = KvTransferConfig::parse(
        R"({"kv_connector":"RedisConnector","kv_role":"kv_both","kv_connector_extra_config":{"url":"redis://127.0.0.1:)" +
        std::to_string(port) + R"("}})");
    worker_round_trip(config, "worker/redis", [&](const StoreKey& key) {
        std::string w;
        RespReply r;
        client.command({"GETRANGE", RedisKvStore::redis_key(key), "200", "200"}, r, w);
        client.command({"SETRANGE", RedisKvStore::redis_key(key), "200", std::string(1, static_cast<char>(~r.text.at(0)))}, r, w);
    });
}

}  // namespace

int main(int argc, char** argv) {
    test_config();
    test_checksum();
    test_record();
    test_directory_store();
    test_worker_directory();
    test_redis_unreachable();
    if (argc > 1) test_redis_live(std::atoi(argv[1]));
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
