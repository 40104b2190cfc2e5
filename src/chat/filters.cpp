#include "chat/filters.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <unordered_map>

#include "chat/args.hpp"
#include "chat/errors.hpp"
#include "chat/sandbox.hpp"
#include "chat/jinja_tests.hpp"
#include "chat/ops.hpp"
#include "chat/pyjson.hpp"
#include "chat/ustr.hpp"

namespace llmport::jinja {
namespace {

using FilterFn = std::function<Value(const Value&, const CallArgs&)>;

CallArgs rest(const CallArgs& a, std::size_t from) {
  CallArgs r;
  if (from < a.args.size()) r.args.assign(a.args.begin() + static_cast<long>(from), a.args.end());
  r.kwargs = a.kwargs;
  return r;
}

/// jinja2's make_attrgetter: "a.b.0" looked up part by part with getitem.
Value attr_path(const Value& item, const std::string& path) {
  Value v = item;
  std::size_t p = 0;
  while (true) {
    std::size_t e = path.find('.', p);
    std::string part = path.substr(p, e == std::string::npos ? std::string::npos : e - p);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    // More than 18 digits is past any list's end: INT64_MAX looks up the same nothing.
    v = get_item(v, digits ? Value::integer(part.size() > 18 ? INT64_MAX : std::stoll(part)) : Value::string(part));
    if (e == std::string::npos) return v;
    p = e + 1;
  }
}

/// Key used by sort/unique/min/max: lowercased strings unless case_sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(ustr::lower(v.as_str()));
  return v;
}

Value filter_default(const Value& v, const CallArgs& a) {
  BoundArgs b("default", a, {"default_value", "boolean"});
  bool boolean = b.get(1, Value::boolean(false)).truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return b.get(0, Value::string(""));
  return v;
}

Value filter_length(const Value& v, const CallArgs& a) {
  BoundArgs b("length", a, {});
  switch (v.kind()) {
    case Value::Kind::Undefined: return Value::integer(0);
    case Value::Kind::String: return Value::integer(static_cast<std::int64_t>(ustr::length(v.as_str())));
    case Value::Kind::List: case Value::Kind::Tuple: return Value::integer(static_cast<std::int64_t>(v.as_list().size()));
    case Value::Kind::Dict: return Value::integer(static_cast<std::int64_t>(v.as_dict().size()));
    case Value::Kind::Object:
      if (v.as_object().is_namespace) break;
      return Value::integer(static_cast<std::int64_t>(v.as_object().attrs.size()));
    default: break;
  }
  throw RenderError("object of type '" + v.type_name() + "' has no len()");
}

Value filter_tojson(const Value& v, const CallArgs& a) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  BoundArgs b("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = b.get(0, Value::boolean(false)).truthy();
  Value indent = b.get(1, Value::none());
  if (indent.is_int()) {
    auto width = static_cast<std::size_t>(std::max<std::int64_t>(0, indent.as_int()));
    check_string_size(width, "tojson indent");
    o.indent = std::string(width, ' ');
  } else if (indent.is_string()) {
    o.indent = indent.as_str();
  } else if (!indent.is_none()) {
    throw RenderError("tojson indent must be an int or a str");
  }
  if (o.indent) o.item_sep = ",";
  Value seps = b.get(2, Value::none());
  if (!seps.is_none()) {
    if (!seps.is_list() || seps.as_list().size() != 2 || !seps.as_list()[0].is_string() || !seps.as_list()[1].is_string())
      throw RenderError("tojson separators must be a pair of strings");
    o.item_sep = seps.as_list()[0].as_str();
    o.key_sep = seps.as_list()[1].as_str();
  }
  o.sort_keys = b.get(3, Value::boolean(false)).truthy();
  return Value::string(json_dumps(v, o));
}

Value filter_items(const Value& v, const CallArgs& a) {
  BoundArgs b("items", a, {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) throw RenderError("Can only get item pairs from a mapping.");
  ValueList out;
  for (const auto& [k, x] : v.as_dict()) out.push_back(Value::tuple({k, x}));
  return Value::list(std::move(out));
}

Value filter_join(const Value& v, const CallArgs& a) {
  BoundArgs b("join", a, {"d", "attribute"});
  std::string sep = b.get(0, Value::string("")).str();
  std::string out;
  bool first = true;
  for (const auto& x : iterate(v)) {
    out += (first ? "" : sep) + (b.has(1) ? attr_path(x, b.get(1).str()) : x).str();
    first = false;
  }
  return Value::string(out);
}

Value filter_first_last(const Value& v, const CallArgs& a, bool first) {
  BoundArgs b(first ? "first" : "last", a, {});
  ValueList items = iterate(v);
  if (items.empty()) return Value::undefined(std::string("No ") + (first ? "first" : "last") + " item, sequence was empty.");
  return first ? items.front() : items.back();
}

Value filter_int(const Value& v, const CallArgs& a) {
  BoundArgs b("int", a, {"default", "base"});
  Value def = b.get(0, Value::integer(0));
  std::int64_t base = b.integer(1, 10);
  require_defined(v);
  // jinja2's do_int returns the default for a NaN (ValueError); infinity raises (OverflowError).
  if (v.is_float() && std::isnan(v.as_double())) return def;
  if (v.is_number()) return Value::integer(v.is_float() ? float_to_int(v.as_double(), "int") : v.as_int());
  if (v.is_string()) {
    std::string s = ustr::strip(v.as_str(), nullptr, true, true);
    std::string digits;
    for (char c : s)
      if (c != '_') digits += c;
    try {
      std::size_t used = 0;
      long long r = std::stoll(digits, &used, static_cast<int>(base));
      if (used == digits.size()) return Value::integer(r);
    } catch (const std::exception&) {
    }
    try {
      std::size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size() && std::isfinite(d)) return Value::integer(float_to_int(d, "int"));
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value filter_float(const Value& v, const CallArgs& a) {
  BoundArgs b("float", a, {"default"});
  Value def = b.get(0, Value::number(0.0));
  require_defined(v);
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string()) {
    std::string s = ustr::strip(v.as_str(), nullptr, true, true);
    try {
      std::size_t used = 0;
      double d = std::stod(s, &used);
      if (used == s.size()) return Value::number(d);
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value filter_list(const Value& v, const CallArgs& a) {
  BoundArgs b("list", a, {});
  return Value::list(iterate(v));
}

Value filter_trim(const Value& v, const CallArgs& a) {
  BoundArgs b("trim", a, {"chars"});
  Value chars = b.get(0, Value::none());
  std::string c = chars.is_none() ? "" : chars.str();
  return Value::string(ustr::strip(v.str(), chars.is_none() ? nullptr : &c, true, true));
}

Value filter_replace(const Value& v, const CallArgs& a) {
  BoundArgs b("replace", a, {"old", "new", "count"});
  return Value::string(ustr::replace(v.str(), b.need(0).str(), b.need(1).str(), static_cast<long>(b.integer(2, -1))));
}

Value filter_title(const Value& v, const CallArgs& a) {
  BoundArgs b("title", a, {});
  // jinja2: each chunk after a run of [-\s({[<] gets item[0].upper() + item[1:].lower().
  std::u32string cps = ustr::decode(v.str());
  std::string out;
  bool start = true;
  for (char32_t c : cps) {
    bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || ustr::is_space(c);
    std::string ch = ustr::encode(std::u32string(1, c));
    out += start ? ustr::upper(ch) : ustr::lower(ch);
    start = sep;
  }
  return Value::string(out);
}

Value filter_indent(const Value& v, const CallArgs& a) {
  BoundArgs b("indent", a, {"width", "first", "blank"});
  Value w = b.get(0, Value::integer(4));
  std::string ind;
  if (w.is_string()) {
    ind = w.as_str();
  } else {
    auto width = static_cast<std::size_t>(std::max<std::int64_t>(0, w.as_int()));
    check_string_size(width, "indent");
    ind = std::string(width, ' ');
  }
  bool first = b.get(1, Value::boolean(false)).truthy();
  bool blank = b.get(2, Value::boolean(false)).truthy();
  std::string s = v.str();
  std::string nl = "\n";
  s += nl;  // as jinja2: lines are rejoined, then the added newline removed
  std::vector<std::string> lines;
  std::size_t p = 0;
  while (true) {
    std::size_t e = s.find('\n', p);
    if (e == std::string::npos) {
      lines.push_back(s.substr(p));
      break;
    }
    lines.push_back(s.substr(p, e - p));
    p = e + 1;
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += nl;
    bool add = i == 0 ? first : (blank || !lines[i].empty());
    if (i > 0 && i == lines.size() - 1 && lines[i].empty()) add = false;
    out += (add ? ind : "") + lines[i];
  }
  out.resize(out.size() - nl.size());
  return Value::string(out);
}

Value filter_select(const Value& v, const CallArgs& a, bool select, bool by_attr) {
  const char* fname = by_attr ? (select ? "selectattr" : "rejectattr") : (select ? "select" : "reject");
  std::string attr;
  std::size_t i = 0;
  if (by_attr) {
    if (a.args.empty() || !a.args[0].is_string()) throw RenderError(std::string(fname) + "() needs an attribute name");
    attr = a.args[0].as_str();
    i = 1;
  }
  std::string test;
  if (i < a.args.size()) {
    if (!a.args[i].is_string()) throw RenderError(std::string(fname) + "() test name must be a string");
    test = a.args[i].as_str();
    if (!has_test(test)) throw Unsupported("test '" + test + "'");
    ++i;
  }
  CallArgs targs = rest(a, i);
  ValueList out;
  for (const auto& item : iterate(v)) {
    Value x = by_attr ? attr_path(item, attr) : item;
    bool ok = test.empty() ? x.truthy() : apply_test(test, x, targs);
    if (ok == select) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_map(const Value& v, const CallArgs& a) {
  ValueList out;
  bool by_attr = false;
  std::string attr;
  Value def;
  for (const auto& [k, x] : a.kwargs) {
    if (k == "attribute") {
      by_attr = true;
      attr = x.str();
    } else if (k == "default") {
      def = x;
    }
  }
  if (by_attr) {
    for (const auto& item : iterate(v)) {
      Value x = attr_path(item, attr);
      out.push_back(x.is_undefined() && !def.is_undefined() ? def : x);
    }
    return Value::list(std::move(out));
  }
  if (a.args.empty() || !a.args[0].is_string()) throw RenderError("map() needs a filter name or attribute=");
  std::string f = a.args[0].as_str();
  if (!has_filter(f)) throw Unsupported("filter '" + f + "'");
  CallArgs fargs = rest(a, 1);
  for (const auto& item : iterate(v)) out.push_back(apply_filter(f, item, fargs));
  return Value::list(std::move(out));
}

Value filter_sort(const Value& v, const CallArgs& a) {
  BoundArgs b("sort", a, {"reverse", "case_sensitive", "attribute"});
  bool rev = b.get(0, Value::boolean(false)).truthy();
  bool cs = b.get(1, Value::boolean(false)).truthy();
  ValueList items = iterate(v);
  auto key = [&](const Value& x) { return sort_key(b.has(2) ? attr_path(x, b.get(2).str()) : x, cs); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    int c = compare(key(x), key(y));
    return rev ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value filter_dictsort(const Value& v, const CallArgs& a) {
  BoundArgs b("dictsort", a, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) throw RenderError("dictsort: can only sort a mapping");
  bool cs = b.get(0, Value::boolean(false)).truthy();
  std::string by = b.get(1, Value::string("key")).str();
  if (by != "key" && by != "value") throw RenderError("You can only sort by either \"key\" or \"value\"");
  bool rev = b.get(2, Value::boolean(false)).truthy();
  ValueList items;
  for (const auto& [k, x] : v.as_dict()) items.push_back(Value::tuple({k, x}));
  std::size_t pos = by == "key" ? 0 : 1;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    int c = compare(sort_key(x.as_list()[pos], cs), sort_key(y.as_list()[pos], cs));
    return rev ? c > 0 : c < 0;
  });
  return Value::list(std::move(items));
}

Value filter_unique(const Value& v, const CallArgs& a) {
  BoundArgs b("unique", a, {"case_sensitive", "attribute"});
  bool cs = b.get(0, Value::boolean(false)).truthy();
  ValueList out, seen;
  for (const auto& x : iterate(v)) {
    Value k = sort_key(b.has(1) ? attr_path(x, b.get(1).str()) : x, cs);
    budget_step(static_cast<std::int64_t>(seen.size() / 16));  // quadratic: large inputs cost steps
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); })) continue;
    seen.push_back(k);
    out.push_back(x);
  }
  return Value::list(std::move(out));
}

Value filter_minmax(const Value& v, const CallArgs& a, bool max) {
  BoundArgs b(max ? "max" : "min", a, {"case_sensitive", "attribute"});
  bool cs = b.get(0, Value::boolean(false)).truthy();
  ValueList items = iterate(v);
  if (items.empty()) return Value::undefined(std::string("No aggregated item, sequence was empty."));
  auto key = [&](const Value& x) { return sort_key(b.has(1) ? attr_path(x, b.get(1).str()) : x, cs); };
  Value best = items[0];
  for (const auto& x : items) {
    int c = compare(key(x), key(best));
    if (max ? c > 0 : c < 0) best = x;
  }
  return best;
}

Value filter_sum(const Value& v, const CallArgs& a) {
  BoundArgs b("sum", a, {"attribute", "start"});
  Value total = b.get(1, Value::integer(0));
  for (const auto& x : iterate(v)) total = arith("+", total, b.has(0) ? attr_path(x, b.get(0).str()) : x);
  return total;
}

Value filter_reverse(const Value& v, const CallArgs& a) {
  BoundArgs b("reverse", a, {});
  if (v.is_string()) return get_slice(v, Value(), Value(), Value::integer(-1));
  ValueList items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

// Python's round(x, n) of an integer: x itself for n >= 0, else to a multiple of 10^-n,
// half to even (round(25, -1) == 20, round(35, -1) == 40).
Value round_integer(std::int64_t x, std::int64_t prec) {
  if (prec >= 0) return Value::integer(x);
  constexpr std::int64_t kHalfTen19 = 5'000'000'000'000'000'000;  // half of 10^19, beyond int64
  if (prec < -19 || (prec == -19 && x >= -kHalfTen19 && x <= kHalfTen19)) return Value::integer(0);
  if (prec == -19) throw RenderError("round: the result does not fit in 64 bits");
  std::int64_t q = 1;
  for (std::int64_t i = 0; i < -prec; ++i) q *= 10;
  std::int64_t d = x / q, r = x % q;  // floor division: 0 <= r < q
  if (r < 0) {
    d -= 1;
    r += q;
  }
  if (r > q - r || (r == q - r && d % 2 != 0)) d += 1;
  std::int64_t out = 0;
  if (__builtin_mul_overflow(d, q, &out)) throw RenderError("round: the result does not fit in 64 bits");
  return Value::integer(out);
}

Value filter_round(const Value& v, const CallArgs& a) {
  BoundArgs b("round", a, {"precision", "method"});
  std::int64_t prec = b.integer(0, 0);
  std::string method = b.get(1, Value::string("common")).str();
  if (!v.is_number()) throw RenderError("round: a number is required, not " + v.type_name());
  double scale = std::pow(10.0, static_cast<double>(prec));
  double x = v.as_double() * scale;
  double r;
  if (method == "common") {
    if (!v.is_float()) return round_integer(v.as_int(), prec);  // Python: round(int, n) is an int
    // Python's round(x, n >= 0) rounds the double's exact value half to even, as printf's
    // "%.nf" does: 2.675 is 2.67499999... and rounds to 2.67 (x * 100 rounds up to 267.5).
    if (prec >= 0 && std::isfinite(v.as_double())) {
      if (prec > 340) return v;
      const int n = static_cast<int>(prec);
      std::string text(static_cast<std::size_t>(std::snprintf(nullptr, 0, "%.*f", n, v.as_double())) + 1, '\0');
      std::snprintf(text.data(), text.size(), "%.*f", n, v.as_double());
      return Value::number(std::strtod(text.c_str(), nullptr));
    }
    r = std::nearbyint(x);  // Python round(): half to even
  } else if (method == "ceil") {
    r = std::ceil(x);
  } else if (method == "floor") {
    r = std::floor(x);
  } else {
    throw RenderError("method must be common, ceil or floor");
  }
  return Value::number(r / scale);
}

Value filter_batch(const Value& v, const CallArgs& a) {
  BoundArgs b("batch", a, {"linecount", "fill_with"});
  std::int64_t n = b.integer(0, 1);
  if (n <= 0) throw RenderError("batch linecount must be positive");
  ValueList out, cur;
  for (const auto& x : iterate(v)) {
    cur.push_back(x);
    if (static_cast<std::int64_t>(cur.size()) == n) {
      out.push_back(Value::list(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (b.has(1))
      while (static_cast<std::int64_t>(cur.size()) < n) cur.push_back(b.get(1));
    out.push_back(Value::list(cur));
  }
  return Value::list(std::move(out));
}

Value filter_escape(const Value& v, const CallArgs& a) {
  BoundArgs b("escape", a, {});
  std::string out;
  for (char c : v.str()) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value::string(out);
}

Value filter_wordcount(const Value& v, const CallArgs& a) {
  BoundArgs b("wordcount", a, {});
  std::int64_t n = 0;
  bool in_word = false;
  for (char32_t c : ustr::decode(v.str())) {
    std::string ch = ustr::encode(std::u32string(1, c));
    bool w = c == '_' || ustr::is_alnum(ch);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value unary_string(const char* name, const Value& v, const CallArgs& a, std::string (*f)(std::string_view)) {
  BoundArgs b(name, a, {});
  return Value::string(f(v.str()));
}

const std::unordered_map<std::string, FilterFn>& table() {
  static const std::unordered_map<std::string, FilterFn> t = [] {
    std::unordered_map<std::string, FilterFn> m;
    m["default"] = m["d"] = filter_default;
    m["length"] = m["count"] = filter_length;
    m["tojson"] = filter_tojson;
    m["items"] = filter_items;
    m["join"] = filter_join;
    m["first"] = [](const Value& v, const CallArgs& a) { return filter_first_last(v, a, true); };
    m["last"] = [](const Value& v, const CallArgs& a) { return filter_first_last(v, a, false); };
    m["int"] = filter_int;
    m["float"] = filter_float;
    m["list"] = filter_list;
    m["trim"] = filter_trim;
    m["replace"] = filter_replace;
    m["title"] = filter_title;
    m["indent"] = filter_indent;
    m["upper"] = [](const Value& v, const CallArgs& a) { return unary_string("upper", v, a, ustr::upper); };
    m["lower"] = [](const Value& v, const CallArgs& a) { return unary_string("lower", v, a, ustr::lower); };
    m["capitalize"] = [](const Value& v, const CallArgs& a) { return unary_string("capitalize", v, a, ustr::capitalize); };
    m["string"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("string", a, {});
      return Value::string(v.str());
    };
    m["safe"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("safe", a, {});
      return v;
    };
    m["escape"] = m["e"] = m["forceescape"] = filter_escape;
    m["select"] = [](const Value& v, const CallArgs& a) { return filter_select(v, a, true, false); };
    m["reject"] = [](const Value& v, const CallArgs& a) { return filter_select(v, a, false, false); };
    m["selectattr"] = [](const Value& v, const CallArgs& a) { return filter_select(v, a, true, true); };
    m["rejectattr"] = [](const Value& v, const CallArgs& a) { return filter_select(v, a, false, true); };
    m["map"] = filter_map;
    m["sort"] = filter_sort;
    m["dictsort"] = filter_dictsort;
    m["unique"] = filter_unique;
    m["min"] = [](const Value& v, const CallArgs& a) { return filter_minmax(v, a, false); };
    m["max"] = [](const Value& v, const CallArgs& a) { return filter_minmax(v, a, true); };
    m["sum"] = filter_sum;
    m["reverse"] = filter_reverse;
    m["round"] = filter_round;
    m["batch"] = filter_batch;
    m["wordcount"] = filter_wordcount;
    m["abs"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("abs", a, {});
      if (!v.is_number()) throw RenderError("bad operand type for abs(): '" + v.type_name() + "'");
      return v.is_float() ? Value::number(std::fabs(v.as_double())) : Value::integer(int_abs(v.as_int()));
    };
    m["attr"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("attr", a, {"name"});
      return get_attr(v, b.str(0));
    };
    m["format"] = [](const Value& v, const CallArgs& a) {
      if (!a.args.empty() && !a.kwargs.empty()) throw RenderError("can't handle positional and keyword arguments at the same time");
      if (!a.kwargs.empty()) {
        ValueDict d;
        for (const auto& [k, x] : a.kwargs) d.emplace_back(Value::string(k), x);
        return Value::string(percent_format(v.str(), Value::dict(std::move(d))));
      }
      return Value::string(percent_format(v.str(), Value::tuple(a.args)));
    };
    return m;
  }();
  return t;
}

}  // namespace

bool has_filter(const std::string& name) { return table().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& v, const CallArgs& args) {
  auto it = table().find(name);
  if (it == table().end()) throw Unsupported("filter '" + name + "'");
  return it->second(v, args);
}

}  // namespace llmport::jinja
