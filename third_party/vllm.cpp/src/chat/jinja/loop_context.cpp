#include "chat/jinja/loop_context.h"

#include "chat/jinja/error.h"

namespace vllm::chat::jinja {

// loop.cycle / loop.changed, bound to their loop.
class LoopMethod : public Object {
public:
    LoopMethod(std::shared_ptr<LoopContext> loop, bool is_cycle) : loop_(std::move(loop)), is_cycle_(is_cycle) {}
    const char* type_name() const override { return "method"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter&, CallArgs& args) override {
        if (!args.keywords.empty()) throw_render_error("loop methods take positional arguments only");
        if (is_cycle_) {
            if (args.positional.empty()) throw_render_error("no items for cycling given");
            return args.positional[loop_->index_ % args.positional.size()];
        }
        Value current(List(args.positional), true);
        if (!loop_->last_changed_.is_undefined() && equals(current, loop_->last_changed_)) return Value(false);
        loop_->last_changed_ = std::move(current);
        return Value(true);
    }

private:
    std::shared_ptr<LoopContext> loop_;
    bool is_cycle_;
};

Value LoopContext::get_attr(std::string_view name) const {
    const int64_t i = static_cast<int64_t>(index_);
    const int64_t n = static_cast<int64_t>(items_.size());
    if (name == "index") return Value(i + 1);
    if (name == "index0") return Value(i);
    if (name == "revindex") return Value(n - i);
    if (name == "revindex0") return Value(n - i - 1);
    if (name == "first") return Value(i == 0);
    if (name == "last") return Value(i == n - 1);
    if (name == "length") return Value(n);
    if (name == "depth") return Value(int64_t{1});
    if (name == "depth0") return Value(int64_t{0});
    if (name == "previtem") {
        if (i == 0) return Value::undefined("there is no previous item");
        return items_[index_ - 1];
    }
    if (name == "nextitem") {
        if (i + 1 >= n) return Value::undefined("there is no next item");
        return items_[index_ + 1];
    }
    if (name == "cycle" || name == "changed") {
        // The bound method keeps the loop context alive.
        auto self = std::const_pointer_cast<LoopContext>(shared_from_this());
        return Value(std::make_shared<LoopMethod>(std::move(self), name == "cycle"));
    }
    return Object::get_attr(name);
}

std::string LoopContext::str() const {
    return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_.size()) + ">";
}

}  // namespace vllm::chat::jinja
