#include "formats/hf_json.h"

#include <sys/stat.h>

#include "formats/mapped_file.h"
#include "util/error.h"

namespace vllm {

void fail_file(const std::string& path, const std::string& why) {
    throw_model_load("cannot load '" + path + "': " + why);
}

std::string read_text_file(const std::string& path) {
    MappedFile file(path, [&](const std::string& why) { fail_file(path, why); });
    return std::string(reinterpret_cast<const char*>(file.data()), file.size());
}

json::Value read_json_file(const std::string& path) {
    const std::string text = read_text_file(path);
    try {
        return json::parse(text);
    } catch (const Error& e) {
        fail_file(path, std::string("not valid JSON: ") + e.what());
    }
}

bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

}  // namespace vllm
