#pragma once
// Binds call arguments to named parameters the way Python does (positional first, then
// keywords), for filters, tests, methods and globals.
#include <optional>
#include <string>
#include <vector>

#include "chat/errors.hpp"
#include "chat/value.hpp"

namespace llmport::jinja {

/// Parameters bound by name; absent ones are std::nullopt.
class BoundArgs {
 public:
  /// Binds `a` to `names` (in order). Throws RenderError naming `fn` on too many
  /// positional arguments, an unknown keyword, or a parameter given twice.
  BoundArgs(const std::string& fn, const CallArgs& a, const std::vector<std::string>& names) : fn_(fn), names_(names) {
    vals_.resize(names.size());
    if (a.args.size() > names.size())
      throw RenderError(fn + "() takes at most " + std::to_string(names.size()) + " argument(s), got " +
                        std::to_string(a.args.size()));
    for (std::size_t i = 0; i < a.args.size(); ++i) vals_[i] = a.args[i];
    for (const auto& [k, v] : a.kwargs) {
      std::size_t i = 0;
      while (i < names.size() && names[i] != k) ++i;
      if (i == names.size()) throw RenderError(fn + "() got an unexpected keyword argument '" + k + "'");
      if (vals_[i]) throw RenderError(fn + "() got multiple values for argument '" + k + "'");
      vals_[i] = v;
    }
  }
  bool has(std::size_t i) const { return vals_[i].has_value(); }
  /// Value of parameter i, or `def` when absent.
  Value get(std::size_t i, Value def = Value()) const { return vals_[i] ? *vals_[i] : def; }
  /// Value of a required parameter i.
  const Value& need(std::size_t i) const {
    if (!vals_[i]) throw RenderError(fn_ + "() missing required argument '" + names_[i] + "'");
    return *vals_[i];
  }
  /// String parameter i (required, must be a str).
  const std::string& str(std::size_t i) const {
    const Value& v = need(i);
    if (!v.is_string()) throw RenderError(fn_ + "() argument '" + names_[i] + "' must be str, not " + v.type_name());
    return v.as_str();
  }
  /// Integer parameter i or `def`.
  std::int64_t integer(std::size_t i, std::int64_t def) const {
    if (!vals_[i] || vals_[i]->is_none()) return def;
    if (!vals_[i]->is_int() && !vals_[i]->is_bool())
      throw RenderError(fn_ + "() argument '" + names_[i] + "' must be int, not " + vals_[i]->type_name());
    return vals_[i]->as_int();
  }

 private:
  std::string fn_;
  std::vector<std::string> names_;
  std::vector<std::optional<Value>> vals_;
};

}  // namespace llmport::jinja
