#include "chat/globals.hpp"

#include <ctime>

#include "chat/args.hpp"
#include "chat/errors.hpp"
#include "chat/ops.hpp"
#include "chat/sandbox.hpp"

namespace llmport::jinja {
namespace {

/// dict(*args, **kwargs) as Python builds it: an optional mapping or pair list, then keywords.
ValueDict build_dict(const std::string& fn, const CallArgs& a) {
  ValueDict d;
  auto put = [&d](const Value& k, const Value& v) {
    budget_step(static_cast<std::int64_t>(d.size() / 16));
    for (auto& kv : d)
      if (equals(kv.first, k)) {
        kv.second = v;
        return;
      }
    d.emplace_back(k, v);
  };
  if (a.args.size() > 1) throw RenderError(fn + "() expected at most 1 positional argument");
  if (!a.args.empty()) {
    const Value& src = a.args[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.as_dict()) put(k, v);
    } else {
      for (const auto& pair : iterate(src)) {
        if (!pair.is_list() || pair.as_list().size() != 2)
          throw RenderError(fn + "() sequence elements must be pairs");
        put(pair.as_list()[0], pair.as_list()[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kwargs) put(Value::string(k), v);
  return d;
}

Value range_fn(CallArgs& a) {
  if (!a.kwargs.empty() || a.args.empty() || a.args.size() > 3) throw RenderError("range() takes 1 to 3 integer arguments");
  for (const auto& v : a.args)
    if (!v.is_int() && !v.is_bool()) throw RenderError("'" + v.type_name() + "' object cannot be interpreted as an integer");
  std::int64_t start = 0, stop, step = 1;
  if (a.args.size() == 1) {
    stop = a.args[0].as_int();
  } else {
    start = a.args[0].as_int();
    stop = a.args[1].as_int();
    if (a.args.size() == 3) step = a.args[2].as_int();
  }
  if (step == 0) throw RenderError("range() arg 3 must not be zero");
  // The item count first (unsigned: stop - start may not fit int64), checked against
  // jinja2.sandbox.MAX_RANGE before anything is built; then no i + step can overflow.
  auto ustart = static_cast<std::uint64_t>(start), ustop = static_cast<std::uint64_t>(stop);
  std::uint64_t span = step > 0 ? (stop > start ? ustop - ustart : 0) : (start > stop ? ustart - ustop : 0);
  std::uint64_t mag = step > 0 ? static_cast<std::uint64_t>(step) : 0 - static_cast<std::uint64_t>(step);
  std::uint64_t count = span == 0 ? 0 : (span - 1) / mag + 1;
  check_range(count);
  ValueList out;
  out.reserve(static_cast<std::size_t>(count));
  for (std::uint64_t k = 0; k < count; ++k)
    out.push_back(Value::integer(static_cast<std::int64_t>(ustart + k * static_cast<std::uint64_t>(step))));
  return Value::list(std::move(out));
}

Value cycler_fn(CallArgs& a) {
  auto obj = make_object("Cycler");
  auto items = std::make_shared<ValueList>(a.args);
  auto pos = std::make_shared<std::size_t>(0);
  auto current = [items, pos]() { return items->empty() ? Value::none() : (*items)[*pos % items->size()]; };
  obj->attrs.emplace_back(Value::string("next"), Value::callable("cycler.next", [items, pos, current](CallArgs&) {
                            Value v = current();
                            ++*pos;
                            return v;
                          }));
  obj->attrs.emplace_back(Value::string("reset"), Value::callable("cycler.reset", [pos](CallArgs&) {
                            *pos = 0;
                            return Value::none();
                          }));
  obj->attrs.emplace_back(Value::string("current"), current());
  return Value::object(obj);
}

Value joiner_fn(CallArgs& a) {
  BoundArgs b("joiner", a, {"sep"});
  std::string sep = b.get(0, Value::string(", ")).str();
  auto used = std::make_shared<bool>(false);
  return Value::callable("joiner", [sep, used](CallArgs&) {
    if (!*used) {
      *used = true;
      return Value::string("");
    }
    return Value::string(sep);
  });
}

}  // namespace

const std::unordered_map<std::string, Value>& global_functions() {
  static const std::unordered_map<std::string, Value> g = [] {
    std::unordered_map<std::string, Value> m;
    m["range"] = Value::callable("range", range_fn);
    m["dict"] = Value::callable("dict", [](CallArgs& a) { return Value::dict(build_dict("dict", a)); });
    m["namespace"] = Value::callable("namespace", [](CallArgs& a) {
      auto obj = make_object("Namespace", true);
      obj->attrs = build_dict("namespace", a);
      return Value::object(obj);
    });
    m["cycler"] = Value::callable("cycler", cycler_fn);
    m["joiner"] = Value::callable("joiner", joiner_fn);
    m["raise_exception"] = Value::callable("raise_exception", [](CallArgs& a) -> Value {
      BoundArgs b("raise_exception", a, {"message"});
      throw Raised(b.get(0, Value::string("")).str());
    });
    m["strftime_now"] = Value::callable("strftime_now", [](CallArgs& a) {
      BoundArgs b("strftime_now", a, {"format"});
      std::time_t t = std::time(nullptr);
      std::tm tm{};
      localtime_r(&t, &tm);
      char buf[256];
      std::size_t n = std::strftime(buf, sizeof buf, b.str(0).c_str(), &tm);
      return Value::string(std::string(buf, n));
    });
    return m;
  }();
  return g;
}

}  // namespace llmport::jinja
