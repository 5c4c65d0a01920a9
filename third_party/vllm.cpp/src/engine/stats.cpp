#include "engine/stats.h"

#include "util/json.h"

namespace vllm {

namespace {

// Seconds as milliseconds, a JSON number (locale-independent).
std::string milliseconds(double seconds) { return json::format_float(seconds * 1e3); }

}  // namespace

std::string EngineStats::to_json() const {
    std::string out = "{";
    auto field = [&out](const char* name, const std::string& value) {
        if (out.size() > 1) out += ",";
        out += "\"";
        out += name;
        out += "\":" + value;
    };
    auto num = [&field](const char* name, int64_t v) { field(name, std::to_string(v)); };
    num("running_requests", running_requests);
    num("waiting_requests", waiting_requests);
    num("kv_blocks_total", kv_blocks_total);
    num("kv_blocks_used", kv_blocks_used);
    num("kv_blocks_free", kv_blocks_free);
    num("kv_blocks_cached", kv_blocks_cached);
    num("block_size", block_size);
    num("kv_cache_bytes", kv_cache_bytes);
    field("prefix_caching", prefix_caching ? "true" : "false");
    field("isa", "\"" + std::string(isa) + "\"");
    num("prefix_cache_queries", prefix_cache_queries);
    num("prefix_cache_hits", prefix_cache_hits);
    num("prompt_tokens", prompt_tokens);
    num("generation_tokens", generation_tokens);
    num("preemptions", preemptions);
    num("model_steps", model_steps);
    num("jump_forward_tokens", jump_forward_tokens);
    num("requests_finished", requests_finished);
    num("requests_aborted", requests_aborted);
    num("pooling_requests", pooling_requests);
    std::string tasks = "[";
    for (const char* task : supported_tasks) tasks += (tasks.size() > 1 ? ",\"" : "\"") + std::string(task) + "\"";
    field("supported_tasks", tasks + "]");
    std::string groups = "[";
    for (const KvCacheGroupStats& g : kv_cache_groups) {
        if (groups.size() > 1) groups += ",";
        groups += "{\"kind\":\"" + std::string(g.kind) + "\"";
        auto group_num = [&groups](const char* name, int64_t v) { groups += ",\"" + std::string(name) + "\":" + std::to_string(v); };
        group_num("sliding_window", g.sliding_window);
        group_num("num_layers", g.num_layers);
        group_num("blocks_total", g.blocks_total);
        group_num("blocks_used", g.blocks_used);
        group_num("blocks_free", g.blocks_free);
        group_num("blocks_cached", g.blocks_cached);
        group_num("bytes", g.bytes);
        groups += "}";
    }
    field("kv_cache_groups", groups + "]");
    field("kv_transfer", kv_transfer ? kv_transfer->to_json() : "null");
    if (!spec_decode) {
        field("spec_decode", "null");
    } else {
        const SpecDecodeStats& sd = *spec_decode;
        // {"sequences": {"positions": ms}}; forward_seconds comes by sequences.
        std::string forward_ms = "{";
        for (size_t i = 0; i < sd.forward_seconds.size(); ++i) {
            const SpeculationCosts::Measured& f = sd.forward_seconds[i];
            const bool first_of_sequences = i == 0 || sd.forward_seconds[i - 1].sequences != f.sequences;
            if (first_of_sequences) forward_ms += (i > 0 ? "},\"" : "\"") + std::to_string(f.sequences) + "\":{";
            else forward_ms += ",";
            forward_ms += "\"" + std::to_string(f.positions) + "\":" + milliseconds(f.seconds);
        }
        forward_ms += sd.forward_seconds.empty() ? "}" : "}}";
        std::string per_pos = "[";
        for (int64_t n : sd.num_accepted_tokens_per_pos) per_pos += (per_pos.size() > 1 ? "," : "") + std::to_string(n);
        field("spec_decode", "{\"method\":\"" + std::string(sd.method) + "\",\"num_drafts\":" +
                                 std::to_string(sd.num_drafts) + ",\"num_draft_tokens\":" +
                                 std::to_string(sd.num_draft_tokens) + ",\"num_accepted_tokens\":" +
                                 std::to_string(sd.num_accepted_tokens) + ",\"num_accepted_tokens_per_pos\":" +
                                 per_pos + "],\"draft_kv_blocks_total\":" + std::to_string(sd.draft_kv_blocks_total) +
                                 ",\"draft_kv_blocks_free\":" + std::to_string(sd.draft_kv_blocks_free) +
                                 ",\"draft_token_ms\":" + (sd.draft_token_seconds ? milliseconds(*sd.draft_token_seconds) : "null") +
                                 ",\"forward_ms\":" + forward_ms + "}");
    }
    if (lora) {
        json::Value o = json::Value::object();
        o.set("registered", lora->registered);
        o.set("resident", lora->resident);
        o.set("loads", lora->loads);
        o.set("evictions", lora->evictions);
        o.set("max_loras", lora->max_loras);
        o.set("max_lora_rank", lora->max_lora_rank);
        json::Value running = json::Value::array(), waiting = json::Value::array();
        for (const std::string& name : lora->running_adapters) running.push_back(name);
        for (const std::string& name : lora->waiting_adapters) waiting.push_back(name);
        o.set("running_adapters", std::move(running));
        o.set("waiting_adapters", std::move(waiting));
        field("lora", json::dump(o));
    }
    if (vision) {
        json::Value o = json::Value::object();
        o.set("images_encoded", vision->images_encoded);
        o.set("encoder_cache_hits", vision->encoder_cache_hits);
        o.set("encode_ms", vision->encode_seconds * 1000.0);
        field("vision", json::dump(o));
    }
    if (prepared_experts) {
        json::Value o = json::Value::object();
        o.set("experts", prepared_experts->experts);
        o.set("experts_total", prepared_experts->experts_total);
        o.set("bytes", prepared_experts->bytes);
        o.set("max_bytes", prepared_experts->max_bytes);
        field("prepared_experts", json::dump(o));
    }
    return out + "}";
}

}  // namespace vllm
