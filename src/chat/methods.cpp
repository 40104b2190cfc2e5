// Python methods of str, dict and list reachable from a template (`s.strip()`,
// `d.get(k)`, `d.items()`). transformers renders in ImmutableSandboxedEnvironment, so
// methods that mutate a list or dict are refused, as the sandbox refuses them.
#include <set>

#include "chat/args.hpp"
#include "chat/errors.hpp"
#include "chat/ops.hpp"
#include "chat/ustr.hpp"

namespace llmport::jinja {
namespace {

// Bytes of the line boundary Python's str.splitlines sees at s[i] (0: none): \n, \r, \r\n,
// \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029.
std::size_t line_break_at(const std::string& s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == '\r') return i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
  if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e)) return 1;
  if (s.compare(i, 2, "\xC2\x85") == 0) return 2;
  if (s.compare(i, 3, "\xE2\x80\xA8") == 0 || s.compare(i, 3, "\xE2\x80\xA9") == 0) return 3;
  return 0;
}

using Fn = std::function<Value(CallArgs&)>;

Value bound(const std::string& name, Fn fn) { return Value::callable(name, std::move(fn)); }

/// `chars` argument of strip/lstrip/rstrip: absent or None -> whitespace.
std::optional<std::string> opt_chars(const BoundArgs& b, const std::string& fn) {
  if (!b.has(0) || b.get(0).is_none()) return std::nullopt;
  if (!b.get(0).is_string()) throw RenderError(fn + " arg must be None or str");
  return b.get(0).as_str();
}

/// startswith/endswith: prefix is a str or a tuple of str.
bool affix_match(const std::string& s, const Value& p, bool start, const std::string& fn) {
  auto one = [&](const Value& x) {
    if (!x.is_string()) throw RenderError(fn + " first arg must be str or a tuple of str, not " + x.type_name());
    const std::string& a = x.as_str();
    if (a.size() > s.size()) return false;
    return start ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (p.kind() == Value::Kind::Tuple) {
    for (const auto& x : p.as_list())
      if (one(x)) return true;
    return false;
  }
  return one(p);
}

ValueList strings(const std::vector<std::string>& parts) {
  ValueList out;
  for (const auto& p : parts) out.push_back(Value::string(p));
  return out;
}

Value str_method(const std::string& s, const std::string& name, bool* found) {
  const std::string fn = "str." + name;
  *found = true;
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return bound(fn, [s, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"chars"});
      auto chars = opt_chars(b, fn);
      return Value::string(ustr::strip(s, chars ? &*chars : nullptr, name != "rstrip", name != "lstrip"));
    });
  if (name == "split" || name == "rsplit")
    return bound(fn, [s, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"sep", "maxsplit"});
      std::optional<std::string> sep;
      if (b.has(0) && !b.get(0).is_none()) {
        sep = b.str(0);
        if (sep->empty()) throw RenderError("empty separator");
      }
      long maxsplit = static_cast<long>(b.integer(1, -1));
      auto parts = name == "split" ? ustr::split(s, sep ? &*sep : nullptr, maxsplit)
                                   : ustr::rsplit(s, sep ? &*sep : nullptr, maxsplit);
      return Value::list(strings(parts));
    });
  if (name == "startswith" || name == "endswith")
    return bound(fn, [s, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"prefix", "start", "end"});
      if (b.has(1) || b.has(2)) throw Unsupported(fn + "() with start/end arguments");
      return Value::boolean(affix_match(s, b.need(0), name == "startswith", fn));
    });
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "isalpha" ||
      name == "isdigit" || name == "isalnum" || name == "islower" || name == "isupper" || name == "isspace" ||
      name == "isnumeric" || name == "isdecimal")
    return bound(fn, [s, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {});
      if (name == "upper") return Value::string(ustr::upper(s));
      if (name == "lower") return Value::string(ustr::lower(s));
      if (name == "title") return Value::string(ustr::title(s));
      if (name == "capitalize") return Value::string(ustr::capitalize(s));
      if (name == "isalpha") return Value::boolean(ustr::is_alpha(s));
      if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") return Value::boolean(ustr::is_digit(s));
      if (name == "isalnum") return Value::boolean(ustr::is_alnum(s));
      if (name == "islower") return Value::boolean(ustr::is_lower(s));
      if (name == "isupper") return Value::boolean(ustr::is_upper(s));
      return Value::boolean(!s.empty() && ustr::strip(s, nullptr, true, true).empty());
    });
  if (name == "replace")
    return bound(fn, [s, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"old", "new", "count"});
      return Value::string(ustr::replace(s, b.str(0), b.str(1), static_cast<long>(b.integer(2, -1))));
    });
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count")
    return bound(fn, [s, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"sub", "start", "end"});
      if (b.has(1) || b.has(2)) throw Unsupported(fn + "() with start/end arguments");
      const std::string& sub = b.str(0);
      if (name == "count") {
        if (sub.empty()) return Value::integer(static_cast<std::int64_t>(ustr::length(s) + 1));
        std::int64_t n = 0;
        for (std::size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
        return Value::integer(n);
      }
      std::size_t p = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
      if (p == std::string::npos) {
        if (name == "index" || name == "rindex") throw RenderError("substring not found");
        return Value::integer(-1);
      }
      return Value::integer(static_cast<std::int64_t>(ustr::length(std::string_view(s).substr(0, p))));
    });
  if (name == "join")
    return bound(fn, [s, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"iterable"});
      std::string out;
      bool first = true;
      for (const auto& v : iterate(b.need(0))) {
        if (!v.is_string()) throw RenderError("sequence item: expected str instance, " + v.type_name() + " found");
        out += (first ? "" : s) + v.as_str();
        first = false;
      }
      return Value::string(out);
    });
  if (name == "removeprefix" || name == "removesuffix")
    return bound(fn, [s, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"affix"});
      const std::string& x = b.str(0);
      bool pre = name == "removeprefix";
      if (affix_match(s, Value::string(x), pre, fn))
        return Value::string(pre ? s.substr(x.size()) : s.substr(0, s.size() - x.size()));
      return Value::string(s);
    });
  if (name == "splitlines")
    return bound(fn, [s, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"keepends"});
      bool keep = b.get(0, Value::boolean(false)).truthy();
      ValueList out;
      std::size_t p = 0, e = 0;
      while (p < s.size()) {
        std::size_t nl = 0;
        for (e = p; e < s.size() && (nl = line_break_at(s, e)) == 0;) ++e;
        if (e == s.size()) {
          out.push_back(Value::string(s.substr(p)));
          break;
        }
        out.push_back(Value::string(s.substr(p, e - p + (keep ? nl : 0))));
        p = e + nl;
      }
      return Value::list(std::move(out));
    });
  if (name == "format")
    return bound(fn, [s](CallArgs& a) { return Value::string(str_format(s, a)); });
  static const std::set<std::string> python_str_methods = {
      "casefold", "center", "encode", "expandtabs", "format_map", "isascii", "isidentifier", "isprintable",
      "istitle", "ljust", "maketrans", "partition", "rjust", "rpartition", "swapcase", "translate", "zfill"};
  if (python_str_methods.count(name)) throw Unsupported("string method '" + name + "'");
  *found = false;
  return Value();
}

const std::set<std::string>& mutating(bool dict) {
  static const std::set<std::string> d = {"clear", "pop", "popitem", "setdefault", "update", "fromkeys"};
  static const std::set<std::string> l = {"append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};
  return dict ? d : l;
}

Value dict_method(const Value& obj, const std::string& name, bool* found) {
  const std::string fn = "dict." + name;
  *found = true;
  if (name == "get")
    return bound(fn, [obj, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"key", "default"});
      const Value* v = dict_find(obj.as_dict(), b.need(0));
      return v ? *v : b.get(1, Value::none());
    });
  if (name == "items" || name == "keys" || name == "values" || name == "copy")
    return bound(fn, [obj, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {});
      if (name == "copy") return obj;
      ValueList out;
      for (const auto& [k, v] : obj.as_dict())
        out.push_back(name == "items" ? Value::tuple({k, v}) : name == "keys" ? k : v);
      return Value::list(std::move(out));
    });
  if (mutating(true).count(name))
    return Value::undefined("access to attribute '" + name + "' of 'dict' object is unsafe (immutable sandbox)");
  *found = false;
  return Value();
}

Value list_method(const Value& obj, const std::string& name, bool* found) {
  const std::string fn = obj.type_name() + "." + name;
  *found = true;
  if (name == "index" || name == "count")
    return bound(fn, [obj, name, fn](CallArgs& a) {
      BoundArgs b(fn, a, {"value"});
      const auto& l = obj.as_list();
      std::int64_t n = 0;
      for (std::size_t i = 0; i < l.size(); ++i) {
        if (!equals(l[i], b.need(0))) continue;
        if (name == "index") return Value::integer(static_cast<std::int64_t>(i));
        ++n;
      }
      if (name == "index") throw RenderError(b.need(0).repr() + " is not in list");
      return Value::integer(n);
    });
  if (name == "copy" && obj.kind() == Value::Kind::List)
    return bound(fn, [obj](CallArgs&) { return obj; });
  if (obj.kind() == Value::Kind::List && mutating(false).count(name))
    return Value::undefined("access to attribute '" + name + "' of 'list' object is unsafe (immutable sandbox)");
  *found = false;
  return Value();
}

}  // namespace

Value method(const Value& obj, const std::string& name, bool* found) {
  *found = false;
  if (obj.is_string()) return str_method(obj.as_str(), name, found);
  if (obj.is_dict()) return dict_method(obj, name, found);
  if (obj.is_list()) return list_method(obj, name, found);
  return Value();
}

}  // namespace llmport::jinja
