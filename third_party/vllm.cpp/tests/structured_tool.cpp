// Runs structured-output constraints over SmolLM2's vocabulary for the
// Python tests and benchmark (tests/unit/test_structured_native.py,
// bench/bench_structured.py).
//
//   structured_tool MODEL.gguf simulate CASES   decoding simulations
//   structured_tool MODEL.gguf bench CASES      mask time per step
//
// CASES: one constraint a line, "KIND<TAB>HEX<TAB>SEEDS" where KIND is
// json_schema | regex | gbnf | choice | json_object, HEX the payload's
// bytes in hex (choice: the choices joined by "\n", each hex encoded), SEEDS
// how many simulations to run. Output, one line per simulation:
// "INDEX<TAB>OK|INCOMPLETE<TAB>HEX(text)<TAB>mask_calls<TAB>mask_ms_total
// <TAB>jumped<TAB>token ids (comma-separated)", after one line
// "INDEX<TAB>COMPILED<TAB>compile_ms" per case, or once per case
// "INDEX<TAB>ERROR<TAB>message" when the constraint is refused. bench uses
// longer random stretches and no jump-forward, for timing masks along
// trajectories another engine can replay.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "structured_sim.h"
#include "util/error.h"

using namespace vllm;
using namespace vllm::structured;

namespace {

std::string from_hex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    return out;
}

std::string to_hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

std::shared_ptr<const Grammar> compile(const std::string& kind, const std::string& payload) {
    if (kind == "json_schema") return compile_json_schema(payload);
    if (kind == "regex") return compile_regex(payload);
    if (kind == "gbnf") return compile_gbnf(payload);
    if (kind == "json_object") return json_object_grammar();
    if (kind == "choice") {
        std::vector<std::string> choices;
        std::istringstream in(payload);
        for (std::string line; std::getline(in, line);) choices.push_back(from_hex(line));
        return compile_choice(choices);
    }
    throw_invalid_argument("unknown constraint kind '" + kind + "'");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4 || (std::string(argv[2]) != "simulate" && std::string(argv[2]) != "bench")) {
        std::fprintf(stderr, "usage: %s MODEL.gguf simulate|bench CASES\n", argv[0]);
        return 2;
    }
    const bool bench = std::string(argv[2]) == "bench";
    auto loaded = structured_sim::load_vocabulary(argv[1]);
    std::ifstream in(argv[3]);
    int index = 0;
    for (std::string line; std::getline(in, line); ++index) {
        std::istringstream fields(line);
        std::string kind, hex, seeds;
        std::getline(fields, kind, '\t');
        std::getline(fields, hex, '\t');
        std::getline(fields, seeds, '\t');
        std::shared_ptr<const Grammar> grammar;
        const auto start = std::chrono::steady_clock::now();
        try {
            grammar = compile(kind, from_hex(hex));
        } catch (const Error& e) {
            std::printf("%d\tERROR\t%s\n", index, e.what());
            continue;
        }
        std::printf("%d\tCOMPILED\t%.4f\n", index,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * 1e3);
        const int runs = seeds.empty() ? 1 : std::stoi(seeds);
        for (int seed = 1; seed <= runs; ++seed) {
            // Alternate short and longer random stretches, with and without jump-forward.
            const auto sim = structured_sim::simulate(grammar, loaded.vocabulary, static_cast<uint64_t>(seed) * 7919 + index,
                                                      bench ? 40 : 3 + seed * 5, !bench && seed % 2 == 0);
            std::string ids;
            for (int32_t id : sim.tokens) ids += (ids.empty() ? "" : ",") + std::to_string(id);
            std::printf("%d\t%s\t%s\t%d\t%.4f\t%d\t%s\n", index, sim.complete ? "OK" : "INCOMPLETE",
                        to_hex(sim.text).c_str(), sim.mask_calls, sim.mask_seconds * 1e3, sim.jumped_tokens, ids.c_str());
        }
    }
    return 0;
}
