#pragma once
// Python/Jinja2 operations on values: attribute and item lookup (sandboxed getattr /
// getitem: a missing key gives undefined, anything done to undefined raises), slicing,
// arithmetic, `in`, iteration and calls.
#include <string>
#include <vector>

#include "chat/value.hpp"

namespace llmport::jinja {

/// `obj.name`: dict methods first, then dict keys; str/list methods; object attributes.
/// Missing -> undefined; obj undefined -> RenderError.
Value get_attr(const Value& obj, const std::string& name);
/// `obj[key]`: dict key, list/str index (negative from the end); missing -> undefined.
Value get_item(const Value& obj, const Value& key);
/// `obj[start:stop:step]` on list, tuple or str (code points); none/undefined parts omitted.
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
/// Arithmetic `+ - * / // % **` with Python semantics (str % args formats).
Value arith(const std::string& op, const Value& a, const Value& b);
/// Python `item in container`.
bool contains(const Value& container, const Value& item);
/// Python iter(): list/tuple items, dict keys, str characters; undefined -> nothing.
ValueList iterate(const Value& v);
/// Calls a callable value; undefined -> RenderError naming it.
Value call(const Value& callee, CallArgs& args);
/// Python str.format and printf-style `%` formatting.
std::string str_format(const std::string& fmt, const CallArgs& args);
std::string percent_format(const std::string& fmt, const Value& args);
/// Bound method `obj.name` for str, dict and list; nullopt-like undefined when `name` is no
/// method of that type. Throws Unsupported for a Python method this subset lacks.
Value method(const Value& obj, const std::string& name, bool* found);

}  // namespace llmport::jinja
