// The `loop` variable of a for loop: index, index0, revindex, revindex0,
// first, last, length, previtem, nextitem, depth, depth0, cycle(), changed().
#pragma once
#include <memory>
#include <utility>

#include "chat/jinja/value.h"

namespace vllm::chat::jinja {

class LoopContext : public Object, public std::enable_shared_from_this<LoopContext> {
public:
    explicit LoopContext(List items) : items_(std::move(items)) {}
    const List& items() const { return items_; }
    void advance_to(size_t index) { index_ = index; }

    const char* type_name() const override { return "LoopContext"; }
    Value get_attr(std::string_view name) const override;
    std::string str() const override;

private:
    List items_;  // the (filtered) items being looped over
    size_t index_ = 0;
    Value last_changed_;
    friend class LoopMethod;
};

}  // namespace vllm::chat::jinja
