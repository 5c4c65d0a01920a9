#include "chat/jinja/globals.h"

#include <ctime>

#include "chat/jinja/call_args.h"
#include "chat/jinja/error.h"
#include "chat/jinja/interpreter.h"

namespace vllm::chat::jinja {

namespace {

// jinja2's namespace(): the one object whose attributes `set` may assign.
class Namespace : public Object {
public:
    const char* type_name() const override { return "Namespace"; }
    Value get_attr(std::string_view name) const override {
        if (const Value* v = attrs_.find(name)) return *v;
        return Value::undefined("'jinja2.utils.Namespace object' has no attribute '" + std::string(name) + "'");
    }
    bool set_attr(const std::string& name, Value v) override {
        attrs_.set(name, std::move(v));
        return true;
    }
    std::string str() const override { return "<Namespace " + to_repr(Value(attrs_)) + ">"; }

private:
    Dict attrs_;
};

using FunctionFn = Value (*)(Interpreter& interp, CallArgs& args);

class Function : public Object {
public:
    Function(const char* name, FunctionFn fn) : name_(name), fn_(fn) {}
    const char* type_name() const override { return "function"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter& interp, CallArgs& args) override { return fn_(interp, args); }
    std::string str() const override { return std::string("<function ") + name_ + ">"; }

private:
    const char* name_;
    FunctionFn fn_;
};

Value fn_namespace(Interpreter&, CallArgs& args) {
    auto ns = std::make_shared<Namespace>();
    if (args.positional.size() > 1) throw_render_error("namespace() takes at most 1 positional argument");
    if (!args.positional.empty()) {
        if (!args.positional[0].is_dict()) throw_render_error("namespace() positional argument must be a dict");
        for (const auto& entry : args.positional[0].as_dict().entries) ns->set_attr(entry.first, entry.second);
    }
    for (auto& keyword : args.keywords) ns->set_attr(keyword.first, std::move(keyword.second));
    return Value(std::shared_ptr<Object>(std::move(ns)));
}

Value fn_range(Interpreter&, CallArgs& args) {
    BoundArgs b("range", args, {"start", "stop", "step"});
    if (!b.has(0)) throw_render_error("range expected at least 1 argument, got 0");
    int64_t start = 0, stop, step = b.get_int(2, 1);
    if (b.has(1)) {
        start = b.get_int(0, 0);
        stop = b.get_int(1, 0);
    } else {
        stop = b.get_int(0, 0);
    }
    if (step == 0) throw_render_error("range() arg 3 must not be zero");
    int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                             : (start > stop ? (start - stop - step - 1) / -step : 0);
    if (count > kMaxRange)
        throw_render_error("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    List out;
    out.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) out.emplace_back(start + i * step);
    return Value(std::move(out));
}

Value fn_dict(Interpreter&, CallArgs& args) {
    if (!args.positional.empty()) throw_render_error("dict() takes keyword arguments only in this engine");
    Dict d;
    for (auto& keyword : args.keywords) d.set(keyword.first, std::move(keyword.second));
    return Value(std::move(d));
}

// transformers: raise jinja2's TemplateError with the template's message.
Value fn_raise_exception(Interpreter&, CallArgs& args) {
    BoundArgs b("raise_exception", args, {"message"});
    throw RenderError(to_str(b.get(0)), true);
}

// transformers: datetime.now().strftime(format).
Value fn_strftime_now(Interpreter&, CallArgs& args) {
    BoundArgs b("strftime_now", args, {"format"});
    std::string format = b.get_string(0, "");
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::string out(format.size() * 8 + 64, '\0');
    size_t n = format.empty() ? 0 : std::strftime(out.data(), out.size(), format.c_str(), &local);
    if (n == 0 && !format.empty()) throw_render_error("strftime_now: format produced no output or is too long");
    out.resize(n);
    return Value(std::move(out));
}

}  // namespace

std::vector<std::pair<std::string, Value>> builtin_globals() {
    static const std::vector<std::pair<std::string, Value>> kGlobals = {
        {"namespace", Value(std::make_shared<Function>("namespace", fn_namespace))},
        {"range", Value(std::make_shared<Function>("range", fn_range))},
        {"dict", Value(std::make_shared<Function>("dict", fn_dict))},
        {"raise_exception", Value(std::make_shared<Function>("raise_exception", fn_raise_exception))},
        {"strftime_now", Value(std::make_shared<Function>("strftime_now", fn_strftime_now))},
    };
    return kGlobals;
}

}  // namespace vllm::chat::jinja
