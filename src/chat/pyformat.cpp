// Python string formatting reachable from templates: str.format() with plain replacement
// fields and printf-style `%` (the `format` filter and the `%` operator).
#include <cmath>
#include <cstdio>

#include "chat/errors.hpp"
#include "chat/sandbox.hpp"
#include "chat/ops.hpp"
#include "chat/ustr.hpp"

namespace llmport::jinja {

std::string str_format(const std::string& fmt, const CallArgs& args) {
  std::string out;
  std::size_t auto_idx = 0;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw RenderError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    std::size_t e = fmt.find('}', i);
    if (e == std::string::npos) throw RenderError("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, e - i - 1);
    i = e;
    char conv = 0;
    std::size_t bang = field.find('!');
    if (field.find(':') != std::string::npos) throw Unsupported("format spec in str.format field '{" + field + "}'");
    if (bang != std::string::npos) {
      conv = bang + 1 < field.size() ? field[bang + 1] : 0;
      field = field.substr(0, bang);
    }
    if (field.find_first_of(".[") != std::string::npos)
      throw Unsupported("attribute/index in str.format field '{" + field + "}'");
    Value v;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      std::size_t idx = field.empty() ? auto_idx++ : std::stoul(field);
      if (idx >= args.args.size()) throw RenderError("Replacement index " + std::to_string(idx) + " out of range");
      v = args.args[idx];
    } else {
      bool hit = false;
      for (const auto& [k, kv] : args.kwargs)
        if (k == field) {
          v = kv;
          hit = true;
        }
      if (!hit) throw RenderError("KeyError: '" + field + "'");
    }
    out += conv == 'r' ? v.repr() : v.str();
  }
  return out;
}

std::string percent_format(const std::string& fmt, const Value& args) {
  ValueList list;
  const ValueDict* mapping = nullptr;
  if (args.kind() == Value::Kind::Tuple)
    list = args.as_list();
  else if (args.is_dict())
    mapping = &args.as_dict();
  else
    list.push_back(args);
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) throw RenderError("incomplete format");
    Value v;
    bool have = false;
    if (fmt[i] == '(') {
      std::size_t e = fmt.find(')', i);
      if (e == std::string::npos || !mapping) throw RenderError("format requires a mapping");
      const Value* f = dict_find(*mapping, Value::string(fmt.substr(i + 1, e - i - 1)));
      if (!f) throw RenderError("KeyError: '" + fmt.substr(i + 1, e - i - 1) + "'");
      v = *f;
      have = true;
      i = e + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ 0#").find(fmt[i]) != std::string::npos) flags += fmt[i++];
    std::string width, prec;
    while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) width += fmt[i++];
    if (i < fmt.size() && fmt[i] == '.') {
      prec = ".";
      ++i;
      while (i < fmt.size() && std::isdigit(static_cast<unsigned char>(fmt[i]))) prec += fmt[i++];
    }
    if (i >= fmt.size()) throw RenderError("incomplete format");
    char t = fmt[i];
    if (t == '%') {
      out += '%';
      continue;
    }
    if (!have) {
      if (next >= list.size()) throw RenderError("not enough arguments for format string");
      v = list[next++];
    }
    require_defined(v);
    std::string spec = "%" + flags + width + prec;
    char buf[512];
    if (t == 's' || t == 'r') {
      std::string s = t == 's' ? v.str() : v.repr();
      if (prec.size() > 1) {
        std::u32string cps = ustr::decode(s);
        std::size_t keep = prec.size() > 10 ? cps.size() : static_cast<std::size_t>(std::stoull(prec.substr(1)));
        s = ustr::encode(cps.substr(0, keep));
      }
      if (width.size() > 9)
        throw LimitExceeded("format width of " + width + " bytes exceeds the limit of " +
                            std::to_string(RenderLimits::kMaxBytes) + " bytes");
      std::size_t w = width.empty() ? 0 : std::stoul(width);
      check_string_size(w, "format width");
      std::size_t len = ustr::length(s);
      if (len < w) s = flags.find('-') != std::string::npos ? s + std::string(w - len, ' ') : std::string(w - len, ' ') + s;
      out += s;
    } else if (t == 'd' || t == 'i' || t == 'x' || t == 'X' || t == 'o') {
      if (!v.is_number()) throw RenderError("%" + std::string(1, t) + " format: a real number is required, not " + v.type_name());
      auto n = v.is_float() ? static_cast<long long>(float_to_int(v.as_double(), "%d format")) : static_cast<long long>(v.as_int());
      std::snprintf(buf, sizeof buf, (spec + "ll" + (t == 'i' ? 'd' : t)).c_str(), n);
      out += buf;
    } else if (t == 'f' || t == 'F' || t == 'e' || t == 'E' || t == 'g' || t == 'G') {
      if (!v.is_number()) throw RenderError("must be real number, not " + v.type_name());
      std::snprintf(buf, sizeof buf, (spec + t).c_str(), v.as_double());
      out += buf;
    } else {
      throw Unsupported(std::string("printf-style format '%") + t + "'");
    }
  }
  if (!mapping && next < list.size() && args.kind() == Value::Kind::Tuple)
    throw RenderError("not all arguments converted during string formatting");
  return out;
}

}  // namespace llmport::jinja
