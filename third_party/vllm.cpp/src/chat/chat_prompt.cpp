#include "chat/chat_prompt.h"

#include "chat/jinja/py_str.h"
#include "util/error.h"

namespace vllm::chat {

namespace {

// Python's str.lstrip() / str.strip(), as transformers applies them.
std::string_view strip_leading(std::string_view s) { return s.substr(jinja::py::leading_space(s)); }

std::string_view strip(std::string_view s) {
    s = strip_leading(s);
    return s.substr(0, s.size() - jinja::py::trailing_space(s));
}

const std::string& final_message_text(const json::Value& messages) {
    const json::Value& last = messages.items().back();
    const json::Value* content = last.find("content");
    if (content == nullptr || !content->is_string())
        throw_invalid_argument("'continue_final_message' needs the final message (messages[" +
                               std::to_string(messages.size() - 1) + "]) to have text content");
    return content->as_string();
}

}  // namespace

std::string cut_after_final_message(const std::string& rendered, std::string_view final_content) {
    const std::string_view stripped = strip(final_content);
    const size_t at = rendered.rfind(stripped);
    if (at == std::string::npos)
        throw_invalid_argument(
            "'continue_final_message': the final message's content does not appear in the rendered chat template");
    // Keep the content's trailing whitespace only when the template printed
    // the content as it is (transformers compares the whole content against
    // a slice as long as the content without its leading whitespace).
    const size_t kept = strip_leading(final_content).size();
    if (std::string_view(rendered).substr(at, kept) == final_content) return rendered.substr(0, at + kept);
    return rendered.substr(0, at + stripped.size());
}

std::string render_chat_prompt(const ChatRequest& request, const ChatTemplate* chat_template) {
    const std::string rendered =
        chat_template != nullptr
            ? chat_template->render(request.messages, request.tools, request.add_generation_prompt,
                                    request.chat_template_kwargs)
            : render_without_template(request.messages, request.add_generation_prompt);
    if (!request.continue_final_message) return rendered;
    return cut_after_final_message(rendered, final_message_text(request.messages));
}

}  // namespace vllm::chat
