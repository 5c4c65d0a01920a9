#include "chat/chat_service.h"

#include "chat/chat_call.h"
#include "chat/chat_constraint.h"
#include "chat/chat_prompt.h"
#include "chat/openai_protocol.h"
#include "chat/reasoning_parsers/reasoning_parser.h"
#include "chat/tool_parsers/forced_tool_parser.h"
#include "chat/tool_parsers/tool_parser.h"
#include "engine/context_length.h"
#include "util/error.h"

namespace vllm::chat {

namespace {

std::string token_text(const Tokenizer& tokenizer, int32_t id) {
    const auto& tokens = tokenizer.data().tokens;
    return id >= 0 && static_cast<size_t>(id) < tokens.size() ? tokens[static_cast<size_t>(id)] : std::string();
}

// Unset or "auto": the dialect the chat template's markers show.
bool detects(const std::string& configured) { return configured.empty() || configured == "auto"; }

// "" when the name turns the parser off.
std::string resolve_reasoning_parser(const std::string& configured, const std::string& template_source) {
    const std::string name = detects(configured) ? detect_reasoning_parser(template_source) : configured;
    if (name.empty() || name == "none") return "";
    // Unknown names are refused now, at the first chat call (the spec's
    // rule), rather than on every request.
    make_reasoning_parser(name, ChatRequest{}, "");
    return name;
}

std::string resolve_tool_parser(const std::string& configured, const std::string& template_source) {
    if (detects(configured)) return detect_tool_parser(template_source);
    make_tool_parser(configured);  // refuses unknown names
    return configured;
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
    // These dialects' markers are special tokens: the text must keep them
    // for the parsers to see them (vLLM's adjust_request does the same).
    if ((p.request.tool_choice == ToolChoice::Auto && tool_parser_reads_special_tokens(tool_parser_)) ||
        reasoning_parser_reads_special_tokens(reasoning_parser_))
        p.sampling.skip_special_tokens = false;
    p.sampling.logprobs = p.request.logprobs ? p.request.top_logprobs : -1;
    p.sampling.truncate_prompt(p.prompt_ids);  // what usage and return_token_ids report too
    if (max_model_len_ > 0) check_prompt_fits(p.prompt_ids.size(), max_model_len_);
    p.sampling.check_vocabulary(tokenizer_.vocab_size());
    p.sampling.grammar = chat_output_constraint(p.request, compiler_);
    bound_reasoning(p);
    return prepared;
}

void ChatService::bound_reasoning(Prepared& p) const {
    const int32_t budget = p.request.thinking_token_budget;
    if (reasoning_parser_.empty()) {
        if (budget >= 0)
            throw_invalid_argument("'thinking_token_budget' (Messages: 'thinking.budget_tokens') needs a reasoning "
                                   "parser: load the model with reasoning_parser set (its chat template shows no "
                                   "known thinking format)");
        return;
    }
    if (!p.sampling.grammar && budget < 0) return;
    if (!output_starts_reasoning(reasoning_parser_, p.request, p.prompt_text)) {
        // Thinking off, or a section the model may open itself: a grammar
        // applies from the first token (it leaves no room to open one); a
        // budget alone counts from the marker that opens it (glm45, mistral, granite).
        if (p.sampling.grammar || budget < 0) return;
        p.sampling.reasoning.start_markers = reasoning_openers_of(reasoning_parser_);
        if (p.sampling.reasoning.start_markers.empty()) return;
    }
    const ReasoningEnd end = reasoning_end_of(reasoning_parser_);
    p.sampling.reasoning.end_marker = end.marker;
    p.sampling.reasoning.forced_end = end.forced;
    p.sampling.reasoning.other_end_markers = end.others;
    p.sampling.reasoning.token_budget = budget;
}

bool ChatService::wants_stream(const Prepared& prepared) { return prepared.request.stream; }

const std::vector<int32_t>& ChatService::prompt_ids(const Prepared& prepared) { return prepared.prompt_ids; }

const std::string& ChatService::response_model(const Prepared& prepared) const {
    return prepared.request.model.empty() ? model_name_ : prepared.request.model;
}

ChatOutputParser ChatService::output_parser(const Prepared& prepared) const {
    std::unique_ptr<ReasoningParser> reasoning;
    if (!reasoning_parser_.empty())
        reasoning = make_reasoning_parser(reasoning_parser_, prepared.request, prepared.prompt_text);
    std::unique_ptr<ToolParser> tools;
    switch (prepared.request.tool_choice) {
        case ToolChoice::Auto:
            tools = make_tool_parser(tool_parser_, {}, prepared.request.tools);
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

std::shared_ptr<ChatCall> ChatService::start(std::shared_ptr<const Prepared> prepared,
                                             std::shared_ptr<ReadyQueue> queue, uint64_t tag) const {
    return ChatCall::start(*this, std::move(prepared), std::move(queue), tag);
}

void ChatService::run(std::shared_ptr<const Prepared> prepared, const ChunkSink& sink) const {
    const std::shared_ptr<ChatCall> call = start(std::move(prepared), std::make_shared<ReadyQueue>(), 0);
    call->deliver(sink);
    call->detach();
    const ChatCall::Outcome outcome = call->outcome();
    if (!call->cancelled() && outcome.status != VLLM_OK) throw Error(outcome.status, outcome.error);
}

std::string ChatService::complete(std::string_view request_json) const {
    std::shared_ptr<const Prepared> prepared = prepare_request(request_json);
    if (prepared->request.stream) {  // the response, whatever the body asks
        auto whole = std::make_shared<Prepared>(*prepared);
        whole->request.stream = false;
        prepared = std::move(whole);
    }
    std::string response;
    run(std::move(prepared), [&](const std::string& text, bool) {
        response = text;
        return true;
    });
    return response;
}

void ChatService::stream(std::string_view request_json, const ChunkSink& sink) const {
    std::shared_ptr<const Prepared> prepared = prepare_request(request_json);
    if (!prepared->request.stream) {  // chunks, whatever the body asks
        auto chunks = std::make_shared<Prepared>(*prepared);
        chunks->request.stream = true;
        prepared = std::move(chunks);
    }
    run(std::move(prepared), sink);
}

}  // namespace vllm::chat
