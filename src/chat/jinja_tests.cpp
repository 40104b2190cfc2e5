#include "chat/jinja_tests.hpp"

#include <functional>
#include <unordered_map>

#include "chat/args.hpp"
#include "chat/errors.hpp"
#include "chat/filters.hpp"
#include "chat/ops.hpp"
#include "chat/ustr.hpp"

namespace llmport::jinja {
namespace {

using TestFn = std::function<bool(const Value&, const CallArgs&)>;

bool is_sequence(const Value& v) {
  // Python: has __len__ and __getitem__ (str, list, tuple, dict; jinja2's Undefined too).
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}

TestFn cmp(const std::string& name, std::function<bool(int)> ok) {
  return [name, ok](const Value& v, const CallArgs& a) {
    BoundArgs b(name, a, {"other"});
    return ok(compare(v, b.need(0)));
  };
}

const std::unordered_map<std::string, TestFn>& table() {
  static const std::unordered_map<std::string, TestFn> t = [] {
    std::unordered_map<std::string, TestFn> m;
    auto none_args = [](const std::string& n, std::function<bool(const Value&)> f) {
      return [n, f](const Value& v, const CallArgs& a) {
        BoundArgs b(n, a, {});
        return f(v);
      };
    };
    m["defined"] = none_args("defined", [](const Value& v) { return !v.is_undefined(); });
    m["undefined"] = none_args("undefined", [](const Value& v) { return v.is_undefined(); });
    m["none"] = none_args("none", [](const Value& v) { return v.is_none(); });
    m["boolean"] = none_args("boolean", [](const Value& v) { return v.is_bool(); });
    m["true"] = none_args("true", [](const Value& v) { return v.is_bool() && v.as_bool(); });
    m["false"] = none_args("false", [](const Value& v) { return v.is_bool() && !v.as_bool(); });
    m["string"] = none_args("string", [](const Value& v) { return v.is_string(); });
    m["number"] = none_args("number", [](const Value& v) { return v.is_number(); });
    m["integer"] = none_args("integer", [](const Value& v) { return v.is_int(); });
    m["float"] = none_args("float", [](const Value& v) { return v.is_float(); });
    m["mapping"] = none_args("mapping", [](const Value& v) { return v.is_dict(); });
    m["sequence"] = none_args("sequence", is_sequence);
    m["iterable"] = none_args("iterable", [](const Value& v) { return is_sequence(v); });
    m["callable"] = none_args("callable", [](const Value& v) { return v.is_callable(); });
    m["escaped"] = none_args("escaped", [](const Value&) { return false; });
    m["lower"] = none_args("lower", [](const Value& v) { return ustr::is_lower(v.str()); });
    m["upper"] = none_args("upper", [](const Value& v) { return ustr::is_upper(v.str()); });
    m["odd"] = none_args("odd", [](const Value& v) { return arith("%", v, Value::integer(2)).as_double() == 1; });
    m["even"] = none_args("even", [](const Value& v) { return arith("%", v, Value::integer(2)).as_double() == 0; });
    m["divisibleby"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("divisibleby", a, {"num"});
      return arith("%", v, b.need(0)).as_double() == 0;
    };
    TestFn eq = [](const Value& v, const CallArgs& a) {
      BoundArgs b("eq", a, {"other"});
      return equals(v, b.need(0));
    };
    TestFn ne = [](const Value& v, const CallArgs& a) {
      BoundArgs b("ne", a, {"other"});
      return !equals(v, b.need(0));
    };
    m["eq"] = m["equalto"] = m["=="] = eq;
    m["ne"] = m["!="] = ne;
    m["lt"] = m["lessthan"] = m["<"] = cmp("lt", [](int c) { return c < 0; });
    m["le"] = m["<="] = cmp("le", [](int c) { return c <= 0; });
    m["gt"] = m["greaterthan"] = m[">"] = cmp("gt", [](int c) { return c > 0; });
    m["ge"] = m[">="] = cmp("ge", [](int c) { return c >= 0; });
    m["in"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("in", a, {"seq"});
      return contains(b.need(0), v);
    };
    m["sameas"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("sameas", a, {"other"});
      const Value& o = b.need(0);
      if (v.kind() != o.kind()) return false;
      if (v.is_list()) return &v.as_list() == &o.as_list();
      if (v.is_dict()) return &v.as_dict() == &o.as_dict();
      return equals(v, o);
    };
    m["filter"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("filter", a, {});
      return v.is_string() && has_filter(v.as_str());
    };
    m["test"] = [](const Value& v, const CallArgs& a) {
      BoundArgs b("test", a, {});
      return v.is_string() && has_test(v.as_str());
    };
    return m;
  }();
  return t;
}

}  // namespace

bool has_test(const std::string& name) { return table().count(name) != 0; }

bool apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  auto it = table().find(name);
  if (it == table().end()) throw Unsupported("test '" + name + "'");
  return it->second(v, args);
}

}  // namespace llmport::jinja
