#pragma once
// A Jinja value with the Python semantics Jinja2 gives it when transformers renders a chat
// template: undefined, None, bool, int, float, str, list, tuple, dict (insertion-ordered,
// like Python dicts), objects with attributes (namespace(), loop) and callables (macros,
// bound string methods, globals). Lists and dicts are immutable once built (transformers
// renders in ImmutableSandboxedEnvironment); namespace objects are the one mutable kind.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace llmport::jinja {

class Value;
using ValueList = std::vector<Value>;
/// Python dict: (key, value) pairs in insertion order; keys are unique.
using ValueDict = std::vector<std::pair<Value, Value>>;

/// Arguments of a call: positional, then keyword (in call order).
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

/// A callable value: a global function, a bound method, a macro, loop.cycle...
struct Callable {
  std::string name;  ///< for error messages, e.g. "str.split"
  std::function<Value(CallArgs&)> fn;
};

/// An object with named attributes: namespace() (mutable through `set ns.x = ...`) or the
/// loop variable.
struct Object {
  std::string type_name;  ///< "Namespace", "LoopContext"
  ValueDict attrs;        ///< string keys
  bool is_namespace = false;
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Tuple, Dict, Object, Callable };

  /// An undefined value; `hint` names what was looked up, for the error a later use raises.
  Value() = default;
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(std::int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(ValueDict items);
  static Value object(std::shared_ptr<Object> obj);
  static Value callable(std::string name, std::function<Value(CallArgs&)> fn);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_float() const { return kind_ == Kind::Float; }
  /// int, float or bool (Python's numbers.Number; bool is an int subclass).
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_list() const { return kind_ == Kind::List || kind_ == Kind::Tuple; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return std::get<bool>(data_); }
  /// int (or bool as 0/1).
  std::int64_t as_int() const;
  /// int, bool or float as a double.
  double as_double() const;
  const std::string& as_str() const { return std::get<std::string>(data_); }
  const ValueList& as_list() const { return *std::get<std::shared_ptr<const ValueList>>(data_); }
  const ValueDict& as_dict() const { return *std::get<std::shared_ptr<const ValueDict>>(data_); }
  Object& as_object() const { return *std::get<std::shared_ptr<Object>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  /// What an undefined value stands for ("'foo' is undefined").
  const std::string& undefined_hint() const { return hint_; }

  /// Python bool(): None, False, 0, 0.0, "", [], {} and undefined are false.
  bool truthy() const;
  /// Python str() as Jinja2 prints it ({{ x }}); undefined prints "".
  std::string str() const;
  /// Python repr() (used inside str() of lists and dicts).
  std::string repr() const;
  /// Python type name for messages: 'str', 'int', 'list', 'dict', 'NoneType', 'Undefined'.
  std::string type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  std::variant<std::monostate, bool, std::int64_t, double, std::string, std::shared_ptr<const ValueList>,
               std::shared_ptr<const ValueDict>, std::shared_ptr<Object>, std::shared_ptr<const Callable>>
      data_;
  std::string hint_;
};

/// A new Object (namespace(), loop, cycler). Objects, lists, dicts and callables are
/// released iteratively: dropping a value nested a million levels deep (a chain built in a
/// loop) does not recurse a million frames.
std::shared_ptr<Object> make_object(std::string type_name, bool is_namespace = false);

/// Guards one level of a recursive walk over a value (repr, ==, ordering, tojson): deeper
/// than RenderLimits::kMaxNesting levels (e.g. a namespace that contains itself) throws
/// LimitExceeded instead of overflowing the stack.
class NestingGuard {
 public:
  NestingGuard();
  ~NestingGuard();
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
};

/// Python ==. Undefined equals only undefined; 1 == 1.0 == True.
bool equals(const Value& a, const Value& b);
/// Python ordering (<, >...) of numbers, strings, or lists: negative, 0, positive.
/// Throws RenderError for types Python cannot order ('<' not supported between ...).
int compare(const Value& a, const Value& b);
/// Value of `key` in a dict, nullptr when absent.
const Value* dict_find(const ValueDict& d, const Value& key);
/// Attribute of an Object (nullptr when absent).
Value* object_find(Object& o, const std::string& name);
/// Python float repr: shortest round-trip digits, exponent form outside 1e-4 <= |x| < 1e16.
std::string float_repr(double v);
/// Python repr() of a string (quotes chosen as Python does).
std::string string_repr(const std::string& s);
/// Throws RenderError("'<hint>' is undefined") when `v` is undefined.
void require_defined(const Value& v);

}  // namespace llmport::jinja
