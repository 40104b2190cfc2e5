#pragma once
// The text side of a streamed generation: bytes of an incomplete UTF-8 character are held
// until it completes, and text that may be the start of a stop string is held until the
// match resolves (the stop string itself is never returned).
#include <cstddef>
#include <deque>
#include <string>
#include <utility>
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

/// Per-token entries (logprobs) held back with the text they add, so that the entries
/// released join to the text released, each at its offset. A token's text is the bytes it
/// added before the holdbacks above (the decoder's output for it).
template <class T>
class TokenHoldback {
 public:
  /// A token whose own text is `text`, after every token pushed before it.
  void push(T token, std::string text) {
    const std::size_t start = end_;
    end_ += text.size();
    held_.push_back({std::move(token), std::move(text), start});
  }
  /// The entries out now that `released_bytes` bytes of the text are: each whose whole text
  /// is. With `stopped` (a stop string cut the text at `released_bytes`) also the one the
  /// cut falls inside, its text cut there; the tokens after the cut (the stop string's and
  /// any beyond) are dropped: the text never holds them. Returns {entry, its text out}.
  std::vector<std::pair<T, std::string>> release(std::size_t released_bytes, bool stopped) {
    std::vector<std::pair<T, std::string>> out;
    while (!held_.empty()) {
      Held& h = held_.front();
      // A token that adds nothing (a part of a character, or no tokenizer) at the cut
      // belongs to what follows it.
      const bool whole = h.start + h.text.size() <= released_bytes &&
                         !(stopped && h.text.empty() && h.start == released_bytes);
      const bool cut = stopped && h.start < released_bytes;
      if (!whole && !cut) break;
      if (!whole) h.text.resize(released_bytes - h.start);
      out.emplace_back(std::move(h.token), std::move(h.text));
      held_.pop_front();
    }
    if (stopped) held_.clear();
    return out;
  }

 private:
  struct Held {
    T token;
    std::string text;
    std::size_t start;  // bytes of the text before this token's
  };
  std::deque<Held> held_;
  std::size_t end_ = 0;
};

}  // namespace llmport::serve
