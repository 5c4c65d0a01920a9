#include "kv_transfer/kv_transfer_config.h"

#include <cctype>

#include "util/error.h"
#include "util/json_fields.h"
#include "util/json.h"

namespace vllm::kv_transfer {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw_invalid_argument("kv_transfer_config: " + why); }

const std::string& string_field(const json::Value& object, const char* name, const char* where) {
    const json::Value* v = object.find(name);
    if (v == nullptr) refuse(std::string(where) + "'" + name + "' is required");
    if (!v->is_string() || v->as_string().empty())
        refuse(std::string(where) + "'" + name + "' must be a non-empty string");
    return v->as_string();
}

int parse_port(const std::string& text, const std::string& url) {
    if (text.empty() || text.size() > 5) refuse("the Redis url '" + url + "' has an invalid port");
    for (char c : text)
        if (!std::isdigit(static_cast<unsigned char>(c))) refuse("the Redis url '" + url + "' has an invalid port");
    const int port = std::stoi(text);
    if (port < 1 || port > 65535) refuse("the Redis url '" + url + "' has a port outside 1..65535");
    return port;
}

}  // namespace

const char* role_name(KvRole role) {
    switch (role) {
        case KvRole::Producer: return "kv_producer";
        case KvRole::Consumer: return "kv_consumer";
        case KvRole::Both: return "kv_both";
    }
    return "";
}

RedisAddress parse_redis_url(const std::string& url) {
    const std::string scheme = "redis://";
    if (url.rfind("rediss://", 0) == 0) refuse("Redis over TLS (rediss://) is not supported; use redis://");
    if (url.rfind("unix://", 0) == 0) refuse("Redis over a unix socket (unix://) is not supported; use redis://");
    if (url.rfind(scheme, 0) != 0) refuse("the Redis url '" + url + "' must start with redis://");
    std::string rest = url.substr(scheme.size());
    RedisAddress address;
    const size_t at = rest.rfind('@');
    if (at != std::string::npos) {
        std::string userinfo = rest.substr(0, at);
        rest = rest.substr(at + 1);
        const size_t colon = userinfo.find(':');
        if (colon == std::string::npos || colon != 0)
            refuse("the Redis url's credentials must be ':PASSWORD@' (ACL user names are not supported)");
        address.password = userinfo.substr(colon + 1);
    }
    const size_t slash = rest.find('/');
    if (slash != std::string::npos) {
        const std::string db = rest.substr(slash + 1);
        rest = rest.substr(0, slash);
        if (!db.empty()) {
            if (db.size() > 4 || db.find_first_not_of("0123456789") != std::string::npos)
                refuse("the Redis url '" + url + "' has an invalid database number");
            address.db = std::stoi(db);
        }
    }
    const size_t colon = rest.rfind(':');
    if (colon != std::string::npos && rest.find(']') == std::string::npos) {
        address.port = parse_port(rest.substr(colon + 1), url);
        rest = rest.substr(0, colon);
    }
    if (rest.empty()) refuse("the Redis url '" + url + "' names no host");
    if (rest.find_first_of("[]?#") != std::string::npos)
        refuse("the Redis url '" + url + "' is not supported (IPv6 literals and query strings are not)");
    address.host = rest;
    return address;
}

KvTransferConfig KvTransferConfig::parse(const std::string& json_text) {
    const json::Value root = json::parse_object(json_text, "kv_transfer_config");
    for (const auto& [name, value] : root.members())
        if (name != "kv_connector" && name != "kv_role" && name != "kv_connector_extra_config")
            refuse("the field '" + name + "' is not supported (supported: kv_connector, kv_role, "
                   "kv_connector_extra_config)");

    KvTransferConfig c;
    c.connector_name = string_field(root, "kv_connector", "");
    if (c.connector_name == "SharedStorageConnector" || c.connector_name == "ExampleConnector") {
        c.connector = ConnectorKind::SharedStorage;
    } else if (c.connector_name == "RedisConnector") {
        c.connector = ConnectorKind::Redis;
    } else {
        refuse("unknown kv_connector '" + c.connector_name +
               "' (expected 'SharedStorageConnector', 'ExampleConnector' or 'RedisConnector')");
    }
    const std::string& role = string_field(root, "kv_role", "");
    if (role == "kv_producer") c.role = KvRole::Producer;
    else if (role == "kv_consumer") c.role = KvRole::Consumer;
    else if (role == "kv_both") c.role = KvRole::Both;
    else refuse("unknown kv_role '" + role + "' (expected 'kv_producer', 'kv_consumer' or 'kv_both')");

    const json::Value* extra = root.find("kv_connector_extra_config");
    if (extra == nullptr) refuse("'kv_connector_extra_config' is required by " + c.connector_name);
    if (!extra->is_object()) refuse("'kv_connector_extra_config' must be a JSON object");
    const char* where = "kv_connector_extra_config: ";
    for (const auto& [name, value] : extra->members()) {
        const bool known = c.connector == ConnectorKind::SharedStorage ? name == "shared_storage_path"
                                                                       : name == "url" || name == "timeout_ms";
        if (!known) refuse(std::string(where) + "the field '" + name + "' is not supported by " + c.connector_name);
    }
    if (c.connector == ConnectorKind::SharedStorage) {
        c.shared_storage_path = string_field(*extra, "shared_storage_path", where);
    } else {
        c.redis = parse_redis_url(string_field(*extra, "url", where));
        if (const json::Value* t = extra->find("timeout_ms")) {
            if (!t->is_int() || t->as_int() < 1 || t->as_int() > 600000)
                refuse(std::string(where) + "'timeout_ms' must be an integer from 1 to 600000");
            c.timeout_ms = static_cast<int>(t->as_int());
        }
    }
    return c;
}

}  // namespace vllm::kv_transfer
