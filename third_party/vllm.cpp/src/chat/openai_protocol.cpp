#include "chat/openai_protocol.h"

#include <random>

namespace vllm::chat {

std::string random_alphanumeric(size_t n) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<size_t> pick(0, sizeof(kAlphabet) - 2);
    std::string out(n, ' ');
    for (char& c : out) c = kAlphabet[pick(rng)];
    return out;
}

std::string make_chat_completion_id() { return "chatcmpl-" + random_alphanumeric(32); }
std::string make_completion_id() { return "cmpl-" + random_alphanumeric(32); }
std::string make_tool_call_id() { return "call_" + random_alphanumeric(24); }
std::string make_mistral_tool_call_id() { return random_alphanumeric(9); }

}  // namespace vllm::chat
