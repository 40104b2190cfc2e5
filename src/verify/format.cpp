#include "verify/format.hpp"

#include <algorithm>
#include <cstdio>

namespace llmport::verify_detail {

std::string format_top(const std::vector<TopEntry>& top, int k) {
  std::string s = "[";
  const int n = std::min(k, static_cast<int>(top.size()));
  for (int i = 0; i < n; ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%d (%.4g)", i ? ", " : "", top[static_cast<std::size_t>(i)].id,
                  static_cast<double>(top[static_cast<std::size_t>(i)].logit));
    s += buf;
  }
  return s + "]";
}

std::string fmt_g(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

std::string format_ids(const std::vector<int>& ids, std::size_t max) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size() && i < max; ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > max) s += ", ... (" + std::to_string(ids.size()) + " ids)";
  return s + "]";
}

}  // namespace llmport::verify_detail
