#include "chat/ops.hpp"

#include <cmath>

#include "chat/errors.hpp"
#include "chat/sandbox.hpp"
#include "chat/ustr.hpp"

namespace llmport::jinja {

namespace {
Value no_attr(const Value& obj, const std::string& name) {
  return Value::undefined(std::string("'") + obj.type_name() + " object' has no attribute '" + name + "'");
}
}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
  require_defined(obj);
  if (obj.is_object()) {
    if (Value* v = object_find(obj.as_object(), name)) return *v;
    return no_attr(obj, name);
  }
  bool found = false;
  Value m = method(obj, name, &found);
  if (found) return m;
  if (obj.is_dict()) {
    if (const Value* v = dict_find(obj.as_dict(), Value::string(name))) return *v;
  }
  return no_attr(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  require_defined(obj);
  if (obj.is_dict()) {
    if (const Value* v = dict_find(obj.as_dict(), key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    std::int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto& l = obj.as_list();
      auto n = static_cast<std::int64_t>(l.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return l[static_cast<std::size_t>(i)];
    } else {
      std::u32string cps = ustr::decode(obj.as_str());
      auto n = static_cast<std::int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value::string(ustr::encode(cps.substr(static_cast<std::size_t>(i), 1)));
    }
    return Value::undefined("index " + std::to_string(key.as_int()) + " out of range of a " + obj.type_name() +
                            " of length " + std::to_string(obj.is_list() ? obj.as_list().size() : ustr::length(obj.as_str())));
  }
  if (key.is_string()) return get_attr(obj, key.as_str());
  return Value::undefined(std::string("'") + obj.type_name() + " object' has no item " + key.repr());
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  require_defined(obj);
  auto idx = [](const Value& v, bool* given) -> std::int64_t {
    *given = !(v.is_undefined() || v.is_none());
    if (!*given) return 0;
    if (!v.is_int() && !v.is_bool()) throw RenderError("slice indices must be integers or None");
    return v.as_int();
  };
  bool has_start, has_stop, has_step;
  std::int64_t b = idx(start, &has_start), e = idx(stop, &has_stop), s = idx(step, &has_step);
  if (!has_step) s = 1;
  if (s == 0) throw RenderError("slice step cannot be zero");
  std::u32string cps;
  std::int64_t n;
  if (obj.is_list()) {
    n = static_cast<std::int64_t>(obj.as_list().size());
  } else if (obj.is_string()) {
    cps = ustr::decode(obj.as_str());
    n = static_cast<std::int64_t>(cps.size());
  } else {
    return Value::undefined(std::string("'") + obj.type_name() + "' object is not subscriptable");
  }
  std::int64_t lower = s > 0 ? 0 : -1, upper = s > 0 ? n : n - 1;
  auto clamp = [&](std::int64_t v) {
    if (v < 0) v += n;
    return v < lower ? lower : (v > upper ? upper : v);
  };
  b = has_start ? clamp(b) : (s > 0 ? lower : upper);
  e = has_stop ? clamp(e) : (s > 0 ? upper : lower);
  // b and e lie in [-1, n]: counting the picks first keeps i + s from overflowing for a
  // huge step.
  std::uint64_t as = s > 0 ? static_cast<std::uint64_t>(s) : 0 - static_cast<std::uint64_t>(s);
  std::uint64_t span = s > 0 ? (e > b ? static_cast<std::uint64_t>(e - b) : 0) : (b > e ? static_cast<std::uint64_t>(b - e) : 0);
  std::uint64_t count = span == 0 ? 0 : (span - 1) / as + 1;
  budget_step(static_cast<std::int64_t>(count));
  std::vector<std::size_t> picks;
  for (std::uint64_t k = 0; k < count; ++k)
    picks.push_back(static_cast<std::size_t>(s > 0 ? b + static_cast<std::int64_t>(k * as) : b - static_cast<std::int64_t>(k * as)));
  if (obj.is_string()) {
    std::u32string out;
    for (auto i : picks) out += cps[i];
    return Value::string(ustr::encode(out));
  }
  ValueList out;
  for (auto i : picks) out.push_back(obj.as_list()[i]);
  return obj.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

namespace {
[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  throw RenderError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

Value repeat(const Value& seq, std::int64_t n) {
  if (n < 0) n = 0;
  std::size_t unit = seq.is_string() ? seq.as_str().size() : seq.as_list().size();
  // Sized before anything is built: 'a' * 10**12 is refused, not attempted.
  if (unit > 0 && static_cast<std::uint64_t>(n) > (seq.is_string() ? RenderLimits::kMaxBytes : max_list_items()) / unit) {
    std::uint64_t total = 0;
    std::string sz = __builtin_mul_overflow(static_cast<std::uint64_t>(unit), static_cast<std::uint64_t>(n), &total)
                         ? "more than 18446744073709551615"
                         : std::to_string(total);
    if (seq.is_string())
      throw LimitExceeded("string of " + sz + " bytes exceeds the limit of " + std::to_string(RenderLimits::kMaxBytes) +
                          " bytes");
    throw LimitExceeded("list of " + sz + " items exceeds the limit of " + std::to_string(max_list_items()) +
                        " items (" + std::to_string(RenderLimits::kMaxBytes) + " bytes)");
  }
  if (unit == 0) n = 0;
  if (seq.is_string()) {
    std::string out;
    for (std::int64_t i = 0; i < n; ++i) out += seq.as_str();
    return Value::string(out);
  }
  ValueList out;
  for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return seq.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}
}  // namespace

Value arith(const std::string& op, const Value& a, const Value& b) {
  require_defined(a);
  require_defined(b);
  bool nums = a.is_number() && b.is_number();
  bool flt = nums && (a.is_float() || b.is_float());
  if (op == "+") {
    if (nums) return flt ? Value::number(a.as_double() + b.as_double()) : Value::integer(int_add(a.as_int(), b.as_int()));
    if (a.is_string() && b.is_string()) return Value::string(a.as_str() + b.as_str());
    if (a.is_list() && b.is_list() && a.kind() == b.kind()) {
      ValueList out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return a.kind() == Value::Kind::Tuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (a.is_string()) throw RenderError("can only concatenate str (not \"" + b.type_name() + "\") to str");
    bad_operands(op, a, b);
  }
  if (op == "-") {
    if (!nums) bad_operands(op, a, b);
    return flt ? Value::number(a.as_double() - b.as_double()) : Value::integer(int_sub(a.as_int(), b.as_int()));
  }
  if (op == "*") {
    if (nums) return flt ? Value::number(a.as_double() * b.as_double()) : Value::integer(int_mul(a.as_int(), b.as_int()));
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int());
    bad_operands(op, a, b);
  }
  if (op == "%" && a.is_string()) return Value::string(percent_format(a.as_str(), b));
  if (!nums) bad_operands(op, a, b);
  if (op == "**") {
    if (!flt && b.as_int() >= 0) return Value::integer(int_pow(a.as_int(), b.as_int()));
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  if (b.as_double() == 0.0) {  // Python's ZeroDivisionError messages
    if (op == "/") throw RenderError(flt ? "float division by zero" : "division by zero");
    if (op == "//") throw RenderError(flt ? "float floor division by zero" : "integer division or modulo by zero");
    throw RenderError(flt ? "float modulo" : "integer modulo by zero");
  }
  if (op == "/") return Value::number(a.as_double() / b.as_double());
  if (op == "//") {
    if (flt) return Value::number(std::floor(a.as_double() / b.as_double()));
    return Value::integer(int_floordiv(a.as_int(), b.as_int()));
  }
  if (op == "%") {
    if (flt) {
      double r = std::fmod(a.as_double(), b.as_double());
      if (r != 0 && ((r < 0) != (b.as_double() < 0))) r += b.as_double();
      return Value::number(r);
    }
    return Value::integer(int_mod(a.as_int(), b.as_int()));
  }
  throw Unsupported("operator '" + op + "'");
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!item.is_string())
        throw RenderError("'in <string>' requires string as left operand, not " + item.type_name());
      // A substring search costs up to haystack x needle comparisons.
      budget_step(static_cast<std::int64_t>(container.as_str().size() / 256 * (1 + item.as_str().size() / 16)));
      return container.as_str().find(item.as_str()) != std::string::npos;
    case Value::Kind::List: case Value::Kind::Tuple:
      budget_step(static_cast<std::int64_t>(container.as_list().size() / 16));
      for (const auto& v : container.as_list())
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::Dict: return dict_find(container.as_dict(), item) != nullptr;
    default: throw RenderError("argument of type '" + container.type_name() + "' is not iterable");
  }
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: case Value::Kind::Tuple: return v.as_list();
    case Value::Kind::Dict: {
      ValueList keys;
      for (const auto& kv : v.as_dict()) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::String: {
      check_list_size(ustr::length(v.as_str()));
      ValueList chars;
      for (char32_t c : ustr::decode(v.as_str())) chars.push_back(Value::string(ustr::encode(std::u32string(1, c))));
      return chars;
    }
    default: throw RenderError("'" + v.type_name() + "' object is not iterable");
  }
}

Value call(const Value& callee, CallArgs& args) {
  require_defined(callee);
  if (!callee.is_callable()) throw RenderError("'" + callee.type_name() + "' object is not callable");
  return callee.as_callable().fn(args);
}

}  // namespace llmport::jinja
