#pragma once
// PCRE2 (UTF + UCP, JIT when available) wrapper for the regexes of tokenizer.json, which
// the reference compiles with Oniguruma: \p{L}, \p{N}, \s are Unicode-aware in both.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmport::tok {

class Regex {
 public:
  /// Compiles `pattern`; throws ConfigError "<where>: bad regex ..." on a syntax error.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  /// All non-overlapping matches [start, end) in byte offsets, left to right. `text` must be
  /// valid UTF-8. An empty match advances the search by one character. Throws ConfigError
  /// naming the file and pattern when matching fails (PCRE2's match limit) or runs past
  /// `base_s` + `per_byte_s` x text bytes seconds in all: PCRE2 bounds the work at one start
  /// position, not the whole text, so a pattern that re-scans the rest of the text at every
  /// match (e.g. `(?:[\s\S]*X)?...`) is quadratic in its length (minutes at 1 MB), and one
  /// that backtracks at every position without matching (`(?:a|aa){1,22}c`) costs ~20 ms a
  /// byte. The clock is read after every search of at most kStartsPerCall start positions,
  /// so the budget is overrun by at most that many positions' work. The defaults allow ~50x
  /// the measured cost of the real tokenizers' patterns (< 1 us a byte).
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text, double base_s = kBaseSeconds,
                                                            double per_byte_s = kSecondsPerByte) const;
  static constexpr double kBaseSeconds = 1.0;
  static constexpr double kSecondsPerByte = 50e-6;
  static constexpr std::size_t kStartsPerCall = 16;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Escapes `literal` so that it matches itself in a PCRE2 pattern.
std::string regex_escape(std::string_view literal);

}  // namespace llmport::tok
