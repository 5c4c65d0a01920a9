#include "chat/chat_service.h"

#include <ctime>

#include "chat/chat_constraint.h"
#include "chat/chat_prompt.h"
#include "chat/choice_logprobs.h"
#include "chat/openai_protocol.h"
#include "chat/reasoning_parsers/reasoning_parser.h"
#include "chat/tool_parsers/forced_tool_parser.h"
#include "chat/tool_parsers/tool_parser.h"
#include "engine/context_length.h"
#include "util/error.h"

namespace vllm::chat {

struct ChatService::Prepared {
    ChatRequest request;
    std::string prompt_text;
    std::vector<int32_t> prompt_ids;
    // Each choice's sampling (a seeded choice i adds i to the seed): the
    // request's fields, logprobs, options and output constraint
    // (response_format / forced tool calls; null grammar: none).
    SamplingConfig sampling;
};

// The engine requests of one chat call. Leaving the call by any path
// (finished, stopped by the sink, an error) cancels those still running and
// waits until the engine has let go of each, so no request outlives the call.
class ChatService::ChoiceStreams {
public:
    explicit ChoiceStreams(ChatCancel* cancel) : cancel_(cancel) {}
    ChoiceStreams(const ChoiceStreams&) = delete;
    ChoiceStreams& operator=(const ChoiceStreams&) = delete;
    ~ChoiceStreams() {
        for (const auto& stream : streams_) stream->cancel();
        for (const auto& stream : streams_) stream->wait_engine_done();
    }

    void add(std::shared_ptr<RequestStream> stream) {
        if (cancel_ != nullptr) cancel_->track(stream);
        streams_.push_back(std::move(stream));
    }
    const std::vector<std::shared_ptr<RequestStream>>& all() const { return streams_; }

private:
    ChatCancel* cancel_;  // null: the call cannot be cancelled from outside
    std::vector<std::shared_ptr<RequestStream>> streams_;
};

void ChatCancel::cancel() {
    std::vector<std::shared_ptr<RequestStream>> live;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        cancelled_ = true;
        for (const auto& weak : streams_)
            if (auto stream = weak.lock()) live.push_back(std::move(stream));
    }
    for (const auto& stream : live) stream->cancel();
}

bool ChatCancel::cancelled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cancelled_;
}

void ChatCancel::track(const std::shared_ptr<RequestStream>& stream) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!cancelled_) {
            streams_.push_back(stream);
            return;
        }
    }
    stream->cancel();
}

namespace {

std::string token_text(const Tokenizer& tokenizer, int32_t id) {
    const auto& tokens = tokenizer.data().tokens;
    return id >= 0 && static_cast<size_t>(id) < tokens.size() ? tokens[static_cast<size_t>(id)] : std::string();
}

// "" when the name turns the parser off.
std::string resolve_reasoning_parser(const std::string& configured, const std::string& template_source) {
    const std::string name = configured.empty() ? detect_reasoning_parser(template_source) : configured;
    if (name.empty() || name == "none") return "";
    // Unknown names are refused now, at the first chat call (the spec's
    // rule), rather than on every request.
    make_reasoning_parser(name, ChatRequest{}, "");
    return name;
}

std::string resolve_tool_parser(const std::string& configured, const std::string& template_source) {
    if (configured.empty()) return detect_tool_parser(template_source);
    make_tool_parser(configured);  // refuses unknown names
    return configured;
}

void throw_if_failed(const RequestStream::Result& result) {
    if (result.status != VLLM_OK) throw Error(result.status, result.error);
}

bool forced_tool_call(const ChatRequest& request) {
    return request.tool_choice == ToolChoice::Required || request.tool_choice == ToolChoice::Named;
}

std::string finish_reason_of(const RequestStream::Result& result) {
    return result.finish_reason != nullptr ? result.finish_reason : "stop";
}

}  // namespace

ChatService::ChatService(const Tokenizer& tokenizer, const std::string& template_source, std::string model_name,
                         const ChatParserNames& parsers, Submit submit, int max_model_len,
                         const structured::GrammarCompiler* compiler)
    : tokenizer_(tokenizer),
      model_name_(std::move(model_name)),
      tool_parser_(resolve_tool_parser(parsers.tool_parser, template_source)),
      reasoning_parser_(resolve_reasoning_parser(parsers.reasoning_parser, template_source)),
      submit_(std::move(submit)),
      max_model_len_(max_model_len),
      compiler_(compiler) {
    if (!template_source.empty())
        template_ = std::make_unique<ChatTemplate>(template_source, token_text(tokenizer, tokenizer.bos_id()),
                                                   token_text(tokenizer, tokenizer.eos_id()));
}

ChatService::~ChatService() = default;

ChatTemplate ChatService::request_template(const std::string& source) const {
    try {
        return ChatTemplate(source, token_text(tokenizer_, tokenizer_.bos_id()), token_text(tokenizer_, tokenizer_.eos_id()));
    } catch (const Error& e) {
        throw_invalid_argument(std::string("'chat_template': ") + e.what());
    }
}

std::shared_ptr<const ChatService::Prepared> ChatService::prepare_request(std::string_view request_json) const {
    auto prepared = std::make_shared<Prepared>();
    Prepared& p = *prepared;
    p.request = parse_chat_request(request_json);
    if (p.request.tool_choice == ToolChoice::Auto && tool_parser_.empty())
        throw_invalid_argument(
            "tool_choice 'auto' (the default with 'tools') needs a tool parser: load the model with tool_parser "
            "set (its chat template shows no known tool-call format)");
    if (p.request.chat_template.empty()) {
        p.prompt_text = render_chat_prompt(p.request, template_.get());
    } else {
        const ChatTemplate own = request_template(p.request.chat_template);
        p.prompt_text = render_chat_prompt(p.request, &own);
    }
    p.prompt_ids = tokenizer_.encode(p.prompt_text, /*add_special=*/false, /*parse_special=*/true);
    p.sampling = p.request.sampling;
    p.sampling.logprobs = p.request.logprobs ? p.request.top_logprobs : -1;
    p.sampling.truncate_prompt(p.prompt_ids);  // what usage and return_token_ids report too
    if (max_model_len_ > 0) check_prompt_fits(p.prompt_ids.size(), max_model_len_);
    p.sampling.check_vocabulary(tokenizer_.vocab_size());
    p.sampling.grammar = chat_output_constraint(p.request, compiler_);
    // The grammar constrains the output from its first token, so a model
    // that starts by thinking cannot: refused rather than the answer read as
    // reasoning. (Starting the grammar after the reasoning is a known gap.)
    if (p.sampling.grammar && !reasoning_parser_.empty() &&
        make_reasoning_parser(reasoning_parser_, p.request, p.prompt_text)->parse_all("{}").content != "{}")
        throw_invalid_argument("'response_format', structured_outputs / guided_* and tool_choice 'required' or a "
                               "named function are not supported with reasoning yet: turn thinking off "
                               "(chat_template_kwargs.enable_thinking false) or load the model with "
                               "reasoning_parser 'none'");
    return prepared;
}

bool ChatService::wants_stream(const Prepared& prepared) { return prepared.request.stream; }

const std::vector<int32_t>& ChatService::prompt_ids(const Prepared& prepared) { return prepared.prompt_ids; }

const std::string& ChatService::response_model(const Prepared& prepared) const {
    return prepared.request.model.empty() ? model_name_ : prepared.request.model;
}

void ChatService::submit_choices(const Prepared& prepared, ChoiceStreams& streams) const {
    for (int32_t i = 0; i < prepared.request.n; ++i) {
        SamplingConfig choice = prepared.sampling;
        if (choice.has_seed) choice.seed += static_cast<uint64_t>(i);
        streams.add(submit_(prepared.prompt_ids, std::move(choice), prepared.request.priority));
    }
}

ChatOutputParser ChatService::output_parser(const Prepared& prepared) const {
    std::unique_ptr<ReasoningParser> reasoning;
    if (!reasoning_parser_.empty())
        reasoning = make_reasoning_parser(reasoning_parser_, prepared.request, prepared.prompt_text);
    std::unique_ptr<ToolParser> tools;
    switch (prepared.request.tool_choice) {
        case ToolChoice::Auto:
            tools = make_tool_parser(tool_parser_);
            break;
        case ToolChoice::Required:
        case ToolChoice::Named:
            tools = std::make_unique<ForcedToolParser>(prepared.request.tool_choice_name, make_tool_call_id);
            break;
        case ToolChoice::None:
            break;
    }
    return ChatOutputParser(std::move(reasoning), std::move(tools));
}

std::string ChatService::complete(std::string_view request_json) const {
    return complete(*prepare_request(request_json), nullptr);
}

void ChatService::stream(std::string_view request_json, const ChunkSink& sink) const {
    stream(*prepare_request(request_json), sink, nullptr);
}

std::string ChatService::complete(const Prepared& prepared, ChatCancel* cancel) const {
    ChoiceStreams streams(cancel);
    submit_choices(prepared, streams);

    ChatResponseParts parts;
    parts.id = make_chat_completion_id();
    parts.legacy_function_call = prepared.request.legacy_functions;
    parts.created = static_cast<int64_t>(std::time(nullptr));
    parts.model = response_model(prepared);
    parts.usage.prompt_tokens = static_cast<int64_t>(prepared.prompt_ids.size());
    if (prepared.request.return_token_ids) parts.prompt_token_ids = prepared.prompt_ids;
    for (size_t i = 0; i < streams.all().size(); ++i) {
        RequestStream& stream = *streams.all()[i];
        stream.wait_engine_done();
        const RequestStream::Result result = stream.result();
        throw_if_failed(result);
        ChoiceParts choice;
        choice.index = static_cast<int>(i);
        choice.finish_reason = finish_reason_of(result);
        choice.forced_tool_call = forced_tool_call(prepared.request);
        output_parser(prepared).parse_all(result.text, choice);
        if (prepared.request.logprobs)
            choice.logprobs = chat_logprobs(result.logprobs, tokenizer_, prepared.request.return_tokens_as_token_ids);
        if (prepared.request.return_token_ids) choice.token_ids = result.output_tokens;
        parts.usage.completion_tokens += result.completion_tokens;
        parts.choices.push_back(std::move(choice));
    }
    return build_chat_completion(parts);
}

void ChatService::stream(const Prepared& prepared, const ChunkSink& sink, ChatCancel* cancel) const {
    ChoiceStreams streams(cancel);
    submit_choices(prepared, streams);

    ChatChunkWriter writer(make_chat_completion_id(), static_cast<int64_t>(std::time(nullptr)), response_model(prepared),
                           prepared.request.legacy_functions);
    Usage usage;
    usage.prompt_tokens = static_cast<int64_t>(prepared.prompt_ids.size());
    // Sends a chunk unless it is empty; false when the sink stopped.
    auto send = [&](const std::string& chunk) { return chunk.empty() || sink(chunk, false); };

    for (size_t i = 0; i < streams.all().size(); ++i) {
        const int index = static_cast<int>(i);
        RequestStream& stream = *streams.all()[i];
        ChatOutputParser parser = output_parser(prepared);
        const bool ids = prepared.request.return_token_ids;
        if (!send(writer.role_chunk(index, ids && index == 0 ? &prepared.prompt_ids : nullptr))) return;
        size_t ids_sent = 0;  // of the choice's tokens, with return_token_ids
        RequestStream::Event event;
        while (stream.next(event) && !event.finished) {
            ChoiceDelta delta = parser.feed(event.delta);
            if (prepared.request.logprobs && !event.logprobs.empty())
                delta.logprobs = chat_logprobs(event.logprobs, tokenizer_, prepared.request.return_tokens_as_token_ids);
            if (ids) {
                delta.token_ids = stream.output_tokens(ids_sent, static_cast<size_t>(event.n_tokens));
                ids_sent += delta.token_ids.size();
            }
            if (!send(writer.delta_chunk(index, delta))) return;
        }
        const RequestStream::Result result = stream.result();
        if (result.status != VLLM_OK) {
            sink("", true);  // the request ended by itself, with an error
            throw_if_failed(result);
        }
        ChoiceDelta last = parser.finish();
        // Tokens whose text never came out (a stop string's) end the choice's ids.
        if (ids) last.token_ids.assign(result.output_tokens.begin() + static_cast<std::ptrdiff_t>(ids_sent),
                                       result.output_tokens.end());
        if (!send(writer.delta_chunk(index, last))) return;
        if (!send(writer.finish_chunk(index, finish_reason_of(result), forced_tool_call(prepared.request)))) return;
        usage.completion_tokens += result.completion_tokens;
    }
    if (prepared.request.include_usage && !send(writer.usage_chunk(usage))) return;
    sink("", true);
}

}  // namespace vllm::chat
