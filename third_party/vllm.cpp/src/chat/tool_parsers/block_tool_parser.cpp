#include "chat/tool_parsers/block_tool_parser.h"

#include <algorithm>

#include "chat/marker_scan.h"

namespace vllm::chat {

// A streamer's calls sent into the step's delta.
class BlockToolParser::DeltaWriter : public BlockStreamer::Writer {
public:
    DeltaWriter(BlockToolParser& parser, ToolDelta& out) : parser_(parser), out_(out) {}
    int begin(const std::string& name) override { return parser_.begin_call(name, out_); }
    void extend(int index, std::string_view arguments) override { parser_.continue_call(index, arguments, out_); }

private:
    BlockToolParser& parser_;
    ToolDelta& out_;
};

BlockToolParser::BlockToolParser(IdGenerator ids, std::vector<BlockTags> tags, BlockReader reader)
    : ToolParser(std::move(ids)), tags_(std::move(tags)), reader_(std::move(reader)) {
    for (const BlockTags& t : tags_) opens_.push_back(t.open);
}

BlockToolParser::BlockToolParser(IdGenerator ids, std::vector<BlockTags> tags, StreamerFactory streamers)
    : BlockToolParser(std::move(ids), std::move(tags), BlockReader()) {
    streamers_ = std::move(streamers);
}

bool BlockToolParser::stream_block(bool ended, bool closed, ToolDelta& out) {
    DeltaWriter writer(*this, out);
    return streamer_->read(*open_tag_, pending_, ended, closed, writer);
}

ToolDelta BlockToolParser::feed(std::string_view text) {
    ToolDelta out;
    pending_ += text;
    while (true) {
        if (!open_tag_) {
            const MarkerMatch open = find_first_marker(pending_, opens_);
            if (!open.found()) {
                const size_t keep = partial_marker_length(pending_, opens_);
                emit_outside_text(std::string_view(pending_).substr(0, pending_.size() - keep), out);
                pending_.erase(0, pending_.size() - keep);
                return out;
            }
            emit_outside_text(std::string_view(pending_).substr(0, open.position), out);
            pending_.erase(0, open.position + opens_[open.marker].size());
            open_tag_ = open.marker;
            searched_ = 0;
            if (streamers_) streamer_ = streamers_();
        } else {
            // Resume where the last search stopped (a long block streamed a
            // token at a time is searched once), less a tag cut across pieces.
            const std::string& close = tags_[*open_tag_].close;
            const size_t from = searched_ >= close.size() ? searched_ - close.size() + 1 : 0;
            const size_t at = pending_.find(close, from);
            if (at == std::string::npos) {
                searched_ = pending_.size();
                if (streamer_) stream_block(/*ended=*/false, /*closed=*/false, out);
                return out;
            }
            const std::string rest = pending_.substr(at + close.size());
            pending_.resize(at);
            end_block(/*closed=*/true, out);
            pending_ = rest;
        }
    }
}

void BlockToolParser::finish_markup(ToolDelta& out) {
    if (open_tag_) {
        end_block(/*closed=*/false, out);
    } else {
        emit_outside_text(pending_, out);
    }
    pending_.clear();
}

void BlockToolParser::end_block(bool closed, ToolDelta& out) {
    const BlockTags& tags = tags_[*open_tag_];
    bool made_calls = false;
    if (streamer_) {
        made_calls = stream_block(/*ended=*/true, closed, out);
        streamer_.reset();
    } else if (const std::optional<std::vector<BlockCall>> calls = reader_(*open_tag_, pending_, closed);
               calls && !calls->empty()) {
        for (const BlockCall& c : *calls) emit_call(c.name, c.arguments, out, c.id);
        made_calls = true;
    }
    if (!made_calls) emit_content(tags.open + pending_ + (closed ? tags.close : std::string()), out);
    open_tag_.reset();
    pending_.clear();
}

std::optional<std::vector<std::string_view>> split_marked(std::string_view body, std::string_view open,
                                                          std::string_view close) {
    std::vector<std::string_view> parts;
    auto only_space = [](std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; };
    size_t pos = 0;
    while (true) {
        const size_t begin = body.find(open, pos);
        if (begin == std::string_view::npos) break;
        if (!only_space(body.substr(pos, begin - pos))) return std::nullopt;
        const size_t end = body.find(close, begin + open.size());
        if (end == std::string_view::npos) return std::nullopt;
        parts.push_back(body.substr(begin + open.size(), end - begin - open.size()));
        pos = end + close.size();
    }
    if (!only_space(body.substr(pos))) return std::nullopt;
    return parts;
}

std::string_view trim_space(std::string_view s) {
    const size_t begin = s.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos) return {};
    return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

}  // namespace vllm::chat
