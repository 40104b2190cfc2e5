#include "chat/pyjson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/errors.hpp"
#include "chat/ustr.hpp"

namespace llmport::jinja {
namespace {

void escape_into(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  auto u = [&](unsigned v) {
    std::snprintf(buf, sizeof buf, "\\u%04x", v);
    out += buf;
  };
  for (char32_t c : ustr::decode(s)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
          if (c >= 0x10000) {
            char32_t v = c - 0x10000;
            u(0xD800 + static_cast<unsigned>(v >> 10));
            u(0xDC00 + static_cast<unsigned>(v & 0x3FF));
          } else {
            u(static_cast<unsigned>(c));
          }
        } else {
          out += ustr::encode(std::u32string(1, c));
        }
    }
  }
  out += '"';
}

std::string key_string(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::String: return k.as_str();
    case Value::Kind::Bool: return k.as_bool() ? "true" : "false";
    case Value::Kind::None: return "null";
    case Value::Kind::Int: case Value::Kind::Float: return k.repr();
    default: throw RenderError("keys must be str, int, float, bool or None, not " + k.type_name());
  }
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
  NestingGuard guard;
  auto newline = [&](int lvl) {
    if (!o.indent) return;
    out += '\n';
    for (int i = 0; i < lvl; ++i) out += *o.indent;
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
      double d = v.as_double();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d < 0 ? "-Infinity" : "Infinity";
      else out += float_repr(d);
      return;
    }
    case Value::Kind::String: escape_into(out, v.as_str(), o.ensure_ascii); return;
    case Value::Kind::List: case Value::Kind::Tuple: {
      const auto& l = v.as_list();
      if (l.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < l.size(); ++i) {
        if (i) out += o.item_sep;
        newline(level + 1);
        dump(out, l[i], o, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (v.as_dict().empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [k, x] : v.as_dict()) items.emplace_back(key_string(k), &x);
      if (o.sort_keys)
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += o.item_sep;
        newline(level + 1);
        escape_into(out, items[i].first, o.ensure_ascii);
        out += o.key_sep;
        dump(out, *items[i].second, o, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default: throw RenderError("Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& opt) {
  std::string out;
  dump(out, v, opt, 0);
  return out;
}

}  // namespace llmport::jinja
