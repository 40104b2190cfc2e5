#include "tokenizer/tokenizer_json.hpp"

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"

namespace llmport::tok {
namespace {

using json = nlohmann::json;

class Handler final : public nlohmann::json_sax<json> {
 public:
  Handler(TokenizerJson& out, std::string where) : out_(out), where_(std::move(where)) {}
  std::string error;

  bool null() override {
    if (mode_ == Mode::Vocab) return fail("model.vocab['" + key_ + "'] is not an integer id");
    return in_merges() ? bad_merge() : value(json());
  }
  bool boolean(bool v) override {
    if (mode_ == Mode::Vocab) return fail("model.vocab['" + key_ + "'] is not an integer id");
    return in_merges() ? bad_merge() : value(json(v));
  }
  bool number_integer(number_integer_t v) override {
    if (mode_ == Mode::Vocab) return vocab_id(v);
    return in_merges() ? bad_merge() : value(json(v));
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::Vocab) return vocab_id(static_cast<long long>(v));
    return in_merges() ? bad_merge() : value(json(v));
  }
  bool number_float(number_float_t v, const string_t&) override {
    if (mode_ == Mode::Vocab) return fail("model.vocab['" + key_ + "'] is not an integer id");
    return in_merges() ? bad_merge() : value(json(v));
  }
  bool string(string_t& s) override {
    switch (mode_) {
      case Mode::Vocab:
        return fail("model.vocab['" + key_ + "'] is not an integer id");
      case Mode::Merges: {
        auto sp = s.find(' ');
        if (sp == std::string::npos)
          return fail("merge #" + std::to_string(out_.merges.size()) + " '" + s + "' is not 'left right'");
        out_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        return true;
      }
      case Mode::MergePair:
        pair_.push_back(std::move(s));
        return true;
      case Mode::Dom:
        break;
    }
    return value(json(std::move(s)));
  }
  bool binary(binary_t&) override { return fail("unexpected binary value"); }
  bool start_object(std::size_t) override {
    if (mode_ != Mode::Dom) return fail(mode_ == Mode::Vocab ? "model.vocab values must be integer ids"
                                                             : "model.merges entries must be \"a b\" or [a, b]");
    if (stack_.size() == 2 && keys_[1] == "vocab" && keys_[0] == "model" && stack_[1]->is_object()) {
      mode_ = Mode::Vocab;
      out_.has_vocab = true;
      value(json::object());
      return true;
    }
    return open(json::object());
  }
  bool key(string_t& k) override {
    if (mode_ == Mode::Vocab) {
      key_ = std::move(k);
      return true;
    }
    keys_.back() = std::move(k);
    return true;
  }
  bool end_object() override {
    if (mode_ == Mode::Vocab) {
      mode_ = Mode::Dom;
      return true;
    }
    return close();
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::Merges) {
      mode_ = Mode::MergePair;
      pair_.clear();
      return true;
    }
    if (mode_ != Mode::Dom) return fail("model.merges entries must be \"a b\" or [a, b]");
    if (stack_.size() == 2 && keys_[1] == "merges" && keys_[0] == "model" && stack_[1]->is_object()) {
      mode_ = Mode::Merges;
      value(json::array());
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::MergePair) {
      if (pair_.size() != 2)
        return fail("merge #" + std::to_string(out_.merges.size()) + " is not a pair [a, b]");
      out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      mode_ = Mode::Merges;
      return true;
    }
    if (mode_ == Mode::Merges) {
      mode_ = Mode::Dom;
      return true;
    }
    return close();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    if (error.empty()) error = "malformed JSON: " + json_error_text(ex);
    return false;
  }

 private:
  enum class Mode { Dom, Vocab, Merges, MergePair };

  bool fail(const std::string& msg) {
    if (error.empty()) error = msg;
    return false;
  }
  // A number, bool or null inside model.merges (or one of its pairs) is no merge: without
  // this it would land in the DOM's placeholder array and the merge silently vanish.
  bool in_merges() const { return mode_ == Mode::Merges || mode_ == Mode::MergePair; }
  bool bad_merge() { return fail("merge #" + std::to_string(out_.merges.size()) + " is neither \"a b\" nor [a, b]"); }
  bool vocab_id(long long v) {
    if (v < 0 || v > (1LL << 30)) return fail("model.vocab['" + key_ + "'] is not a valid id");
    out_.vocab.emplace_back(std::move(key_), static_cast<int>(v));
    return true;
  }
  // Adds `v` to the current container (or as the root) and returns where it landed.
  json* place(json&& v) {
    if (stack_.empty()) {
      out_.doc = std::move(v);
      return &out_.doc;
    }
    json* top = stack_.back();
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    json& slot = (*top)[keys_.back()];
    slot = std::move(v);
    return &slot;
  }
  bool value(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& v) {
    if (stack_.size() >= static_cast<std::size_t>(kMaxJsonDepth))
      return fail("JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    json* p = place(std::move(v));
    stack_.push_back(p);
    keys_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  TokenizerJson& out_;
  std::string where_;
  Mode mode_ = Mode::Dom;
  std::vector<json*> stack_;        // open containers (pointers stay valid: a parent only
  std::vector<std::string> keys_;   // grows after its open child is closed); keys_[d]: key at depth d
  std::string key_;                 // pending vocab key
  std::vector<std::string> pair_;   // pending [a, b] merge
};

}  // namespace

TokenizerJson parse_tokenizer_json(const std::string& text, const std::string& where) {
  TokenizerJson out;
  Handler h(out, where);
  bool ok = false;
  try {
    ok = json::sax_parse(text, &h);
  } catch (const json::exception& e) {
    throw ConfigError(where + ": malformed JSON: " + json_error_text(e));
  }
  if (!ok) throw ConfigError(where + ": " + (h.error.empty() ? std::string("malformed JSON") : h.error));
  return out;
}

}  // namespace llmport::tok
