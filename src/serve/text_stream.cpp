#include "serve/text_stream.hpp"

#include <algorithm>

namespace llmport::serve {

std::size_t utf8_complete_prefix(const std::string& s) {
  const std::size_t n = s.size();
  // Walk back over at most 3 continuation bytes to the last lead byte.
  std::size_t i = n;
  int cont = 0;
  while (i > 0 && cont < 4) {
    const auto c = static_cast<unsigned char>(s[i - 1]);
    if ((c & 0xC0) != 0x80) break;
    --i;
    ++cont;
  }
  if (i == 0) return n;  // only continuation bytes: invalid, pass through
  const auto lead = static_cast<unsigned char>(s[i - 1]);
  int need = 0;
  if ((lead & 0xE0) == 0xC0) need = 1;
  else if ((lead & 0xF0) == 0xE0) need = 2;
  else if ((lead & 0xF8) == 0xF0) need = 3;
  else return n;  // ASCII or invalid lead: complete
  return cont < need ? i - 1 : n;
}

std::string Utf8Holdback::push(const std::string& piece) {
  held_ += piece;
  const std::size_t k = utf8_complete_prefix(held_);
  std::string out = held_.substr(0, k);
  held_.erase(0, k);
  return out;
}

std::string Utf8Holdback::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

std::string StopMatcher::push(const std::string& text) {
  if (stopped_) return "";
  held_ += text;
  // A full match: release what precedes the earliest one.
  std::size_t first = std::string::npos;
  for (const auto& s : stops_) {
    const std::size_t at = held_.find(s);
    if (at != std::string::npos) first = std::min(first, at);
  }
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first);
    held_.clear();
    return out;
  }
  // Hold the longest tail that could still grow into a stop string.
  std::size_t keep = 0;
  for (const auto& s : stops_) {
    const std::size_t max_len = std::min(s.size() - 1, held_.size());
    for (std::size_t len = max_len; len > keep; --len)
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(held_);
  return out;
}

}  // namespace llmport::serve
