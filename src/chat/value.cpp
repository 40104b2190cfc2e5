#include "chat/value.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <type_traits>

#include "chat/errors.hpp"
#include "chat/sandbox.hpp"
#include "chat/ustr.hpp"

namespace llmport::jinja {

namespace {

// Iterative release: a deleter called while another value is being released queues its
// pointer; the outermost one deletes the queue in a loop. Nesting depth stays one level.
struct Pending {
  void* p;
  void (*destroy)(void*);
};
thread_local std::vector<Pending>* t_pending = nullptr;

template <class T>
struct DeferredDelete {
  static void destroy(void* p) { delete static_cast<T*>(p); }
  void operator()(T* p) const {
    using U = std::remove_const_t<T>;
    void* raw = const_cast<U*>(p);
    if (t_pending) {
      t_pending->push_back({raw, &DeferredDelete<U>::destroy});
      return;
    }
    std::vector<Pending> pending;
    t_pending = &pending;
    delete p;
    while (!pending.empty()) {
      Pending x = pending.back();
      pending.pop_back();
      x.destroy(x.p);
    }
    t_pending = nullptr;
  }
};

thread_local int t_nesting = 0;

}  // namespace

std::shared_ptr<Object> make_object(std::string type_name, bool is_namespace) {
  auto* o = new Object;
  o->type_name = std::move(type_name);
  o->is_namespace = is_namespace;
  return std::shared_ptr<Object>(o, DeferredDelete<Object>{});
}

NestingGuard::NestingGuard() {
  if (t_nesting >= RenderLimits::kMaxNesting)
    throw LimitExceeded("value nesting exceeds the limit of " + std::to_string(RenderLimits::kMaxNesting) + " levels");
  ++t_nesting;
}
NestingGuard::~NestingGuard() { --t_nesting; }

Value Value::undefined(std::string hint) {
  Value v;
  v.hint_ = std::move(hint);
  return v;
}
Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.data_ = b;
  return v;
}
Value Value::integer(std::int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.data_ = i;
  return v;
}
Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::Float;
  v.data_ = f;
  return v;
}
Value Value::string(std::string s) {
  check_string_size(s.size());
  budget_step(static_cast<std::int64_t>(s.size() / 256));
  Value v;
  v.kind_ = Kind::String;
  v.data_ = std::move(s);
  return v;
}
Value Value::list(ValueList items) {
  check_list_size(items.size());
  budget_step(static_cast<std::int64_t>(items.size()));
  Value v;
  v.kind_ = Kind::List;
  v.data_ = std::shared_ptr<const ValueList>(new ValueList(std::move(items)), DeferredDelete<const ValueList>{});
  return v;
}
Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}
Value Value::dict(ValueDict items) {
  check_list_size(items.size());
  budget_step(static_cast<std::int64_t>(items.size()));
  Value v;
  v.kind_ = Kind::Dict;
  v.data_ = std::shared_ptr<const ValueDict>(new ValueDict(std::move(items)), DeferredDelete<const ValueDict>{});
  return v;
}
Value Value::object(std::shared_ptr<Object> obj) {
  if (RenderBudget* b = RenderBudget::current()) b->track(obj);
  Value v;
  v.kind_ = Kind::Object;
  v.data_ = std::move(obj);
  return v;
}
Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.data_ = std::shared_ptr<const Callable>(new Callable{std::move(name), std::move(fn)}, DeferredDelete<const Callable>{});
  return v;
}

std::int64_t Value::as_int() const {
  if (kind_ == Kind::Bool) return as_bool() ? 1 : 0;
  // A template may hand any value where an integer goes (indent(10 * messages)): Python's
  // TypeError, not an escaping bad_variant_access.
  if (kind_ != Kind::Int) throw RenderError("'" + type_name() + "' object cannot be interpreted as an integer");
  return std::get<std::int64_t>(data_);
}

double Value::as_double() const {
  if (kind_ == Kind::Float) return std::get<double>(data_);
  return static_cast<double>(as_int());
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined: case Kind::None: return false;
    case Kind::Bool: return as_bool();
    case Kind::Int: return as_int() != 0;
    case Kind::Float: return as_double() != 0.0;
    case Kind::String: return !as_str().empty();
    case Kind::List: case Kind::Tuple: return !as_list().empty();
    case Kind::Dict: return !as_dict().empty();
    case Kind::Object: case Kind::Callable: return true;
  }
  return false;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci = [-]d[.ddd]e[+-]XX: split into sign, digits and the exponent of the first digit.
  std::string sign;
  std::size_t i = 0;
  if (sci[0] == '-') {
    sign = "-";
    i = 1;
  }
  std::size_t epos = sci.find('e');
  std::string digits;
  for (std::size_t k = i; k < epos; ++k)
    if (sci[k] != '.') digits += sci[k];
  int exp = std::stoi(sci.substr(epos + 1));
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  if (exp >= -4 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<std::size_t>(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<std::size_t>(exp) + 1) + "." +
            digits.substr(static_cast<std::size_t>(exp) + 1);
    }
    return sign + out;
  }
  std::string mant = digits.substr(0, 1);
  if (digits.size() > 1) mant += "." + digits.substr(1);
  char eb[16];
  std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return sign + mant + eb;
}

std::string string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char32_t c : ustr::decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!ustr::is_printable(c)) {
      char b[16];
      if (c < 0x100)
        std::snprintf(b, sizeof b, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000)
        std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(c));
      else
        std::snprintf(b, sizeof b, "\\U%08x", static_cast<unsigned>(c));
      out += b;
    } else {
      out += ustr::encode(std::u32string(1, c));
    }
  }
  out += q;
  return out;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return as_str();
    default: return repr();
  }
}

std::string Value::repr() const {
  NestingGuard guard;
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return as_bool() ? "True" : "False";
    case Kind::Int: return std::to_string(as_int());
    case Kind::Float: return float_repr(as_double());
    case Kind::String: return string_repr(as_str());
    case Kind::List: case Kind::Tuple: {
      bool tup = kind_ == Kind::Tuple;
      std::string out = tup ? "(" : "[";
      const auto& l = as_list();
      for (std::size_t i = 0; i < l.size(); ++i) out += (i ? ", " : "") + l[i].repr();
      if (tup && l.size() == 1) out += ",";
      return out + (tup ? ")" : "]");
    }
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : as_dict()) {
        out += (first ? "" : ", ") + k.repr() + ": " + v.repr();
        first = false;
      }
      return out + "}";
    }
    case Kind::Object: {
      const Object& o = as_object();
      if (!o.is_namespace) return "<" + o.type_name + ">";
      return "<Namespace " + Value::dict(o.attrs).repr() + ">";
    }
    case Kind::Callable: return "<function " + as_callable().name + ">";
  }
  return "";
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Object: return as_object().type_name;
    case Kind::Callable: return "function";
  }
  return "";
}

void require_defined(const Value& v) {
  if (v.is_undefined()) throw RenderError(v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
}

bool equals(const Value& a, const Value& b) {
  NestingGuard guard;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.is_list() && b.is_list()) {
    if (a.kind() != b.kind()) return false;
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!equals(x[i], y[i])) return false;
    return true;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined: case Value::Kind::None: return true;
    case Value::Kind::String: return a.as_str() == b.as_str();
    case Value::Kind::Dict: {
      const auto& x = a.as_dict();
      const auto& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x) {
        const Value* o = dict_find(y, k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    }
    case Value::Kind::Object: return &a.as_object() == &b.as_object();
    case Value::Kind::Callable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

int compare(const Value& a, const Value& b) {
  NestingGuard guard;
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    auto x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order equals code point order.
    int c = a.as_str().compare(b.as_str());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.kind() == b.kind()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw RenderError("'<' not supported between instances of '" + a.type_name() + "' and '" +
                    b.type_name() + "'");
}

const Value* dict_find(const ValueDict& d, const Value& key) {
  budget_step(static_cast<std::int64_t>(d.size() / 16));  // a linear scan: large dicts cost steps
  for (const auto& kv : d)
    if (equals(kv.first, key)) return &kv.second;
  return nullptr;
}

Value* object_find(Object& o, const std::string& name) {
  for (auto& kv : o.attrs)
    if (kv.first.is_string() && kv.first.as_str() == name) return &kv.second;
  return nullptr;
}

}  // namespace llmport::jinja
