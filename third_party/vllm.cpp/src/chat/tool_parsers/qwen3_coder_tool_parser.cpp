#include "chat/tool_parsers/qwen3_coder_tool_parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/tool_parsers/block_tool_parser.h"
#include "chat/tool_parsers/typed_arguments.h"

namespace vllm::chat {

namespace {

constexpr std::string_view kToolCall = "<tool_call>";
constexpr std::string_view kToolCallEnd = "</tool_call>";
constexpr std::string_view kFunction = "<function=";
constexpr std::string_view kFunctionEnd = "</function>";
constexpr std::string_view kParameter = "<parameter=";
constexpr std::string_view kParameterEnd = "</parameter>";

constexpr size_t kBareFunction = 1;  // the tag index of a block opened by "<function=" itself

// One block read as it grows: where it stands (looking for a function, in
// a function's or a parameter's name, between parameters, in a value), and
// the function being read.
class Qwen3CoderStreamer : public BlockStreamer {
public:
    explicit Qwen3CoderStreamer(std::shared_ptr<const json::Value> tools) : tools_(std::move(tools)) {}

    bool read(size_t tag, std::string_view body, bool ended, bool closed, Writer& out) override {
        if (!started_) {
            started_ = true;
            phase_ = tag == kBareFunction ? Phase::Name : Phase::Seek;
        }
        while (step(body, ended, closed, out)) {
        }
        return began_;
    }

private:
    enum class Phase { Seek, Name, Function, ParameterName, Value, Done };

    struct Found {
        size_t at = std::string_view::npos;
        std::string_view marker;
        bool found() const { return at != std::string_view::npos; }
    };

    // The earliest of `markers` from where the last search stopped; none
    // yet: the next search resumes where one cut at the end may start.
    Found find(std::string_view body, std::initializer_list<std::string_view> markers) {
        Found first;
        size_t longest = 0;
        for (std::string_view m : markers) {
            const size_t at = body.find(m, search_from_);
            if (at < first.at) first = {at, m};
            longest = std::max(longest, m.size());
        }
        if (!first.found() && body.size() >= longest) search_from_ = std::max(search_from_, body.size() - longest + 1);
        return first;
    }

    void move_to(Phase phase, size_t at) {
        phase_ = phase;
        at_ = search_from_ = at;
    }

    // A function or parameter name: the text up to '>', on one line; empty when malformed.
    static std::string_view tag_name(std::string_view body, size_t from, size_t close) {
        const std::string_view name = trim_space(body.substr(from, close - from));
        return name.find_first_of("<\n") == std::string_view::npos ? name : std::string_view();
    }

    void add_member(std::string_view value, Writer& out) {
        if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
        if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
        const json::Value typed = qwen3_coder_argument(value, tool_parameter_schema(*tools_, name_, parameter_));
        const std::string member = arguments_json(json::Value(parameter_)) + ": " + arguments_json(typed);
        if (call_ < 0) {
            call_ = out.begin(name_);
            began_ = true;
            out.extend(call_, "{" + member);
        } else {
            out.extend(call_, ", " + member);
        }
    }

    // The function ends (whole: it closed; else the output cut it short).
    void end_function(bool whole, Writer& out) {
        if (call_ < 0 && whole) {
            call_ = out.begin(name_);
            began_ = true;
            out.extend(call_, "{}");
        } else if (call_ >= 0) {
            out.extend(call_, "}");
        }
        call_ = -1;
    }

    // One step; false when it needs more of the body.
    bool step(std::string_view body, bool ended, bool closed, Writer& out) {
        switch (phase_) {
            case Phase::Seek: {
                const Found f = find(body, {kFunction});
                if (!f.found()) return false;
                move_to(Phase::Name, f.at + kFunction.size());
                return true;
            }
            case Phase::Name:
            case Phase::ParameterName: {
                const Found f = find(body, {">"});
                if (!f.found()) {
                    if (ended) return broken(out);
                    return false;
                }
                const std::string_view name = tag_name(body, at_, f.at);
                if (name.empty()) return broken(out);
                const bool function = phase_ == Phase::Name;
                (function ? name_ : parameter_) = std::string(name);
                move_to(function ? Phase::Function : Phase::Value, f.at + 1);
                return true;
            }
            case Phase::Function: {
                const Found f = find(body, {kParameter, kFunctionEnd});
                if (f.found() && f.marker == kParameter) {
                    move_to(Phase::ParameterName, f.at + kParameter.size());
                } else if (f.found()) {
                    end_function(/*whole=*/true, out);
                    move_to(Phase::Seek, f.at + kFunctionEnd.size());
                } else {
                    if (!ended) return false;
                    end_function(/*whole=*/closed, out);  // the block's end is the function's
                    phase_ = Phase::Done;
                }
                return true;
            }
            case Phase::Value: {
                const Found f = find(body, {kParameterEnd, kParameter, kFunctionEnd});
                if (!f.found()) {
                    if (!ended) return false;
                    if (closed) add_member(body.substr(at_), out);
                    end_function(/*whole=*/closed, out);
                    phase_ = Phase::Done;
                    return true;
                }
                add_member(body.substr(at_, f.at - at_), out);
                // After </parameter> the next parameter or the end; "<parameter=" and "</function>" are read there.
                move_to(Phase::Function, f.marker == kParameterEnd ? f.at + kParameterEnd.size() : f.at);
                return true;
            }
            case Phase::Done:
                return false;
        }
        return false;
    }

    // Malformed markup: the block is content unless a call has begun; then
    // the function being read ends with what it has, and the rest is dropped.
    bool broken(Writer& out) {
        if (call_ >= 0) end_function(/*whole=*/false, out);
        phase_ = Phase::Done;
        return false;
    }

    std::shared_ptr<const json::Value> tools_;
    bool started_ = false;
    Phase phase_ = Phase::Seek;
    size_t at_ = 0;           // where the current piece (a name, a value) starts
    size_t search_from_ = 0;  // where the next marker search starts
    std::string name_;        // the function's
    std::string parameter_;   // the parameter's
    int call_ = -1;           // the function's call index; -1: not begun
    bool began_ = false;      // a call of this block has begun
};

}  // namespace

std::unique_ptr<ToolParser> make_qwen3_coder_tool_parser(ToolParser::IdGenerator ids, const json::Value& tools) {
    auto shared_tools = std::make_shared<const json::Value>(tools);
    return std::make_unique<BlockToolParser>(
        std::move(ids),
        std::vector<BlockTags>{{std::string(kToolCall), std::string(kToolCallEnd)},
                               {std::string(kFunction), std::string(kFunctionEnd)}},
        BlockToolParser::StreamerFactory(
            [shared_tools] { return std::make_unique<Qwen3CoderStreamer>(shared_tools); }));
}

}  // namespace vllm::chat
