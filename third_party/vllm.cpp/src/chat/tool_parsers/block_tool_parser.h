// The dialects whose calls stand in tagged blocks that a dialect-specific
// reader turns into calls once the block has closed (or, for a dialect
// that streams its calls, a BlockStreamer reads while the block is open):
//   <tool_call><function=f><parameter=x>1</parameter></function></tool_call>  (qwen3_coder)
//   <tool_call>f<arg_key>x</arg_key><arg_value>1</arg_value></tool_call>      (glm45)
//   <｜tool▁calls▁begin｜>...<｜tool▁calls▁end｜>                              (deepseek_v3/v31, kimi_k2)
// Text before the first block is content; a block the reader refuses is
// content as written (opening and closing tags included); a block still
// open when the output ends is read as it stands (the model may stop at
// its end token without the closing tag), and is content when refused.
// Closing tags are searched as plain text: these dialects' values are not
// JSON strings that could quote them.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chat/tool_parsers/tool_parser.h"

namespace vllm::chat {

struct BlockCall {
    std::string name;
    json::Value arguments;
    std::string id;  // "" : a fresh id
};

struct BlockTags {
    std::string open;
    std::string close;
};

// Reads a block while it is still open, for a dialect that streams its
// calls (qwen3_coder): each read passes the body so far (grown only at its
// end since the last read); the streamer sends what that settles through
// the writer and says whether the block has begun a call, after which the
// block is never content. One streamer per block.
class BlockStreamer {
public:
    class Writer {
    public:
        virtual ~Writer() = default;
        virtual int begin(const std::string& name) = 0;  // a call named, no arguments yet: its index
        virtual void extend(int index, std::string_view arguments) = 0;
    };
    virtual ~BlockStreamer() = default;
    // `ended`: the block has ended (`closed`: by its closing tag, else by the output's end).
    virtual bool read(size_t tag, std::string_view body, bool ended, bool closed, Writer& out) = 0;
};

class BlockToolParser : public ToolParser {
public:
    // The calls in a block's body (between its tags), or nullopt when the
    // body is malformed. `tag`: the index into the dialect's tags that opened
    // it; `closed`: false when the output ended inside the block.
    using BlockReader = std::function<std::optional<std::vector<BlockCall>>(size_t tag, std::string_view body, bool closed)>;

    BlockToolParser(IdGenerator ids, std::vector<BlockTags> tags, BlockReader reader);
    using StreamerFactory = std::function<std::unique_ptr<BlockStreamer>()>;
    BlockToolParser(IdGenerator ids, std::vector<BlockTags> tags, StreamerFactory streamers);
    ToolDelta feed(std::string_view text) override;

protected:
    void finish_markup(ToolDelta& out) override;

private:
    class DeltaWriter;
    void end_block(bool closed, ToolDelta& out);
    // The open block read by its streamer; whether it has begun a call.
    bool stream_block(bool ended, bool closed, ToolDelta& out);

    std::vector<BlockTags> tags_;
    std::vector<std::string_view> opens_;
    BlockReader reader_;
    StreamerFactory streamers_;
    std::unique_ptr<BlockStreamer> streamer_;  // inside a block, when the dialect streams
    std::optional<size_t> open_tag_;  // inside a block: the tag that opened it
    std::string pending_;             // outside: a tail that may start a tag; inside: the body so far
    size_t searched_ = 0;             // inside: pending_[0, searched_) holds no closing tag
};

// The text between `open` and `close` markers in `body`, in order: the
// calls of a section. nullopt when anything but whitespace stands outside
// them, or a marker is left open.
std::optional<std::vector<std::string_view>> split_marked(std::string_view body, std::string_view open,
                                                          std::string_view close);

// `s` without leading and trailing spaces, tabs and newlines.
std::string_view trim_space(std::string_view s);

}  // namespace vllm::chat
