#include "llmport/tokenizer.hpp"

namespace llmport {
namespace {

bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

}  // namespace

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tok, bool skip_special_tokens)
    : tok_(tok), skip_special_(skip_special_tokens) {}

std::string IncrementalDecoder::push(int id) {
  ids_.push_back(id);
  std::string text = tok_.decode(ids_, skip_special_);
  // A trailing U+FFFD may be half a character whose remaining bytes are still to come.
  if (text.size() <= prefix_.size() || ends_with_replacement(text)) return {};
  std::string out;
  if (text.compare(0, prefix_.size(), prefix_) == 0) {
    out = text.substr(prefix_.size());
  } else {
    // Not expected with the HF decoders; emit what follows the common prefix.
    std::size_t k = 0;
    while (k < prefix_.size() && text[k] == prefix_[k]) ++k;
    while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
    out = text.substr(prefix_.size() > k ? prefix_.size() : k);
  }
  // Restart the window at the ids not yet folded into the prefix.
  std::size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
  prefix_ = tok_.decode(ids_, skip_special_);
  prefix_index_ = new_prefix_index;
  return out;
}

std::string IncrementalDecoder::flush() {
  std::string text = tok_.decode(ids_, skip_special_);
  std::string out = text.size() > prefix_.size() ? text.substr(prefix_.size()) : std::string();
  // Everything is emitted now; later pushes continue the same stream.
  if (text.size() > prefix_.size()) {
    prefix_ = std::move(text);
    prefix_index_ = ids_.size();
  }
  return out;
}

}  // namespace llmport
