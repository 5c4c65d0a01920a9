// The vision towers' table and the load-time refusal of an unknown one.
#include "vision/vision_registry.h"

#include "util/error.h"
#include "vision/towers/towers.h"

namespace vllm {

const std::vector<VisionArchitecture>& vision_architectures() {
    static const std::vector<VisionArchitecture> table = {
    };
    return table;
}

std::unique_ptr<VisionTower> load_vision_tower(const ModelSource& mmproj, int language_dim) {
    const std::string type = mmproj.get_string("clip.projector_type", "");
    std::string supported;
    for (const VisionArchitecture& entry : vision_architectures()) {
        if (type == entry.projector_type) return entry.create(mmproj, language_dim);
        supported += (supported.empty() ? "" : ", ") + std::string(entry.projector_type);
    }
    mmproj.fail("unsupported vision projector type '" + (type.empty() ? std::string("(none)") : type) +
                "' (supported: " + (supported.empty() ? std::string("none") : supported) + ")");
}

}  // namespace vllm
