#pragma once
// The text side of a streamed generation: bytes of an incomplete UTF-8 character are held
// until it completes, and text that may be the start of a stop string is held until the
// match resolves (the stop string itself is never returned).
#include <string>
#include <vector>

namespace llmport::serve {

/// Length of the longest prefix of `s` that does not end inside a UTF-8 character (an
/// incomplete multi-byte sequence at the end is excluded; invalid bytes count as complete).
std::size_t utf8_complete_prefix(const std::string& s);

/// Splits a stream of byte pieces into complete UTF-8 characters.
class Utf8Holdback {
 public:
  /// Appends `piece`; returns the text whose characters are complete.
  std::string push(const std::string& piece);
  /// Whatever is still held (an incomplete tail, as is).
  std::string flush();

 private:
  std::string held_;
};

/// Stop-string matching over streamed text.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  /// Appends `text`; returns the text that can be released now: everything before a full
  /// match (then stopped() is true and later pushes return ""), else everything but the
  /// longest tail that is a prefix of some stop string.
  std::string push(const std::string& text);
  /// The held tail, released at the end of a generation that did not stop on a string.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace llmport::serve
