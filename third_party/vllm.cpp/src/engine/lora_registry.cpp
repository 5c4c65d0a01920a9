// The engine's registered LoRA adapters and their resident set (lora_registry.h).
#include "engine/lora_registry.h"

#include "util/error.h"

namespace vllm {

namespace {

// The registration's key: splitmix64's finalizer of its serial number (a
// bijection, so keys stay unique, and never 0 for a serial >= 1). The
// prefix cache's hash chain starts from it: a small number would not do,
// block_hash xors its parent into the FNV offset and then mixes the parent's
// low byte back out, so parents 0 and 1 would hash a first block alike.
uint64_t registration_key(uint64_t serial) {
    uint64_t z = serial + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z != 0 ? z : 1;
}

}  // namespace

LoraRegistry::LoraRegistry(const DecoderModel& model, int max_loras, int max_lora_rank)
    : model_(model), max_loras_(max_loras), max_lora_rank_(max_lora_rank) {
    if (model.weights() == nullptr) throw_invalid_argument("enable_lora: this model cannot run LoRA adapters");
}

std::shared_ptr<const LoraAdapter> LoraRegistry::load(const LoraSpec& spec) const {
    return load_lora_adapter(spec.name, spec.id, spec.path, model_.config(), *model_.weights(), max_lora_rank_);
}

void LoraRegistry::add(int32_t id, const std::string& name, const std::string& path) {
    if (id < 1) throw_invalid_argument("LoRA adapter id must be >= 1 (got " + std::to_string(id) + ")");
    if (name.empty()) throw_invalid_argument("LoRA adapter name must not be empty");
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [other_id, spec] : specs_)
            if (other_id == id || spec->name == name)
                throw_invalid_argument("LoRA adapter '" + name + "' (id " + std::to_string(id) + "): " +
                                       (other_id == id ? "id" : "name") + " already registered (as '" + spec->name +
                                       "', id " + std::to_string(other_id) + ")");
    }
    auto spec = std::make_shared<LoraSpec>();
    spec->id = id;
    spec->name = name;
    spec->path = path;
    std::shared_ptr<const LoraAdapter> weights = load(*spec);  // outside the lock: it reads files
    std::lock_guard<std::mutex> lock(mutex_);
    if (specs_.count(id)) throw_invalid_argument("LoRA adapter id " + std::to_string(id) + " already registered");
    spec->key = registration_key(next_serial_++);
    specs_[id] = spec;
    ++loads_;
    resident_.emplace_front(spec->key, std::move(weights));
    evict_past_limit({spec->key});
}

void LoraRegistry::remove(int32_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = specs_.find(id);
    if (it == specs_.end()) throw_invalid_argument("no LoRA adapter has id " + std::to_string(id));
    const uint64_t key = it->second->key;
    specs_.erase(it);
    resident_.remove_if([key](const auto& entry) { return entry.first == key; });
}

std::shared_ptr<const LoraSpec> LoraRegistry::find(int32_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = specs_.find(id);
    if (it == specs_.end())
        throw_invalid_argument("LoRA adapter id " + std::to_string(id) + " is not registered on this engine");
    return it->second;
}

std::vector<LoraSpec> LoraRegistry::list() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<LoraSpec> out;
    for (const auto& [id, spec] : specs_) out.push_back(*spec);
    return out;
}

std::shared_ptr<const LoraAdapter> LoraRegistry::acquire(const std::shared_ptr<const LoraSpec>& spec,
                                                         const std::set<uint64_t>& in_use) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto it = resident_.begin(); it != resident_.end(); ++it)
            if (it->first == spec->key) {
                resident_.splice(resident_.begin(), resident_, it);  // most recently used
                return it->second;
            }
    }
    std::shared_ptr<const LoraAdapter> weights = load(*spec);
    std::lock_guard<std::mutex> lock(mutex_);
    ++loads_;
    resident_.emplace_front(spec->key, weights);
    evict_past_limit(in_use);
    return weights;
}

void LoraRegistry::evict_past_limit(const std::set<uint64_t>& in_use) {
    for (auto it = resident_.end(); static_cast<int>(resident_.size()) > max_loras_ && it != resident_.begin();) {
        --it;
        if (in_use.count(it->first)) continue;
        it = resident_.erase(it);
        ++evictions_;
    }
}

void LoraRegistry::fill_stats(EngineStats::Lora& s) const {
    std::lock_guard<std::mutex> lock(mutex_);
    s.registered = static_cast<int64_t>(specs_.size());
    s.resident = static_cast<int64_t>(resident_.size());
    s.loads = loads_;
    s.evictions = evictions_;
    s.max_loras = max_loras_;
    s.max_lora_rank = max_lora_rank_;
}

}  // namespace vllm
