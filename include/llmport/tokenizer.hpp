#pragma once
// Hugging Face tokenizer.json, id-for-id with the Rust `tokenizers` library: BPE (with
// byte fallback, ignore_merges), normalizers, pre-tokenizers, post-processor, decoders,
// added tokens matched before the model.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmport {

/// Options of one encode call.
struct EncodeOptions {
  bool add_special_tokens = true;  ///< apply the post-processor (e.g. BOS)
  /// Treat special-token text as plain text (transformers split_special_tokens=True);
  /// non-special added tokens are still matched. Safe mode for untrusted input.
  bool split_special_tokens = false;
};

/// A loaded tokenizer. const methods are thread-safe (the word cache is behind a lock).
///
/// Behaviour follows the Hugging Face Rust `tokenizers` library (what transformers' fast
/// tokenizers run): added tokens are split out of the raw text first (leftmost-longest),
/// each remaining piece goes through normalizer -> pre-tokenizer -> BPE, and the
/// post-processor adds BOS/EOS only when add_special_tokens is set. Input text must be
/// valid UTF-8 (UsageError otherwise).
class Tokenizer {
 public:
  /// Loads tokenizer.json (+ tokenizer_config.json, special_tokens_map.json,
  /// chat_template.jinja when present) from `dir` (a directory, or a file inside it such as
  /// tokenizer.json or config.json). config.json is not needed. Throws ConfigError (one line) naming the file and
  /// the component/field at fault: malformed JSON, unknown component type, a merge naming a
  /// token missing from the vocab, a non-BPE model, a directory named tokenizer.json
  /// ("is a directory, expected the tokenizer.json file"). Load time: ~0.2 s CPU for a 9 MB file.
  static std::unique_ptr<Tokenizer> load(const std::filesystem::path& dir);
  /// True if `dir` holds something named tokenizer.json (a file, or anything else in its
  /// place: load() then says what is wrong with it, e.g. "is a directory", rather than the
  /// model being taken for one without a tokenizer).
  static bool exists(const std::filesystem::path& dir);
  virtual ~Tokenizer() = default;

  /// Text -> ids, as HF `tokenizer.encode(text, add_special_tokens=...)`.
  virtual std::vector<int> encode(std::string_view text, const EncodeOptions& opt = {}) const = 0;
  /// Ids -> text, as HF `decode(ids, skip_special_tokens=...)` without cleanup. Ids with no
  /// token (e.g. the padding rows of a larger embedding) are skipped, as the reference does.
  virtual std::string decode(const std::vector<int>& ids, bool skip_special_tokens = false) const = 0;
  /// Token string of an id (vocab or added token); throws UsageError when out of range.
  virtual std::string id_to_token(int id) const = 0;
  /// Id of a token string, if any.
  virtual std::optional<int> token_to_id(std::string_view token) const = 0;
  /// Vocabulary size including added tokens (max id + 1).
  virtual int vocab_size() const = 0;
  /// Whether `id` is a special added token.
  virtual bool is_special(int id) const = 0;
  /// Token strings from tokenizer_config.json (a string or {"content": ...}), else from
  /// special_tokens_map.json; empty if absent.
  virtual std::string bos_token() const = 0;
  virtual std::string eos_token() const = 0;
  /// Chat template: chat_template.jinja beside tokenizer.json when present (it takes
  /// precedence, as in transformers), else tokenizer_config.json "chat_template" (a string,
  /// or a list of {name, template}: the one named "default"); "" when none.
  virtual std::string chat_template() const = 0;
  /// Where chat_template() came from, for error messages: "<dir>/chat_template.jinja" or
  /// "<dir>/tokenizer_config.json: chat_template"; "" when there is none.
  virtual std::string chat_template_origin() const { return ""; }
  /// Id of bos_token()/eos_token() when they name a token, else nullopt.
  std::optional<int> bos_id() const { return bos_token().empty() ? std::nullopt : token_to_id(bos_token()); }
  std::optional<int> eos_id() const { return eos_token().empty() ? std::nullopt : token_to_id(eos_token()); }
};

/// Streaming decoder: feed ids one at a time, get the text that became complete. Never
/// returns half a UTF-8 character; the decoder's leading-space strip applies once.
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tok, bool skip_special_tokens = false);
  /// Appends `id` and returns the newly completed text (possibly empty).
  std::string push(int id);
  /// Text still held back (an incomplete UTF-8 tail), flushed as is.
  std::string flush();

 private:
  // The HF tokenizers DecodeStream scheme: decode a short window of ids, and emit the text
  // past the window's already-emitted prefix once it no longer ends in U+FFFD (an
  // incomplete character). The window restarts at the last emitted token, so the cost of a
  // push does not grow with the length of the stream.
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int> ids_;          // window of recent ids
  std::string prefix_;            // decode(ids_[0, prefix_index_)) within the window
  std::size_t prefix_index_ = 0;  // ids of the window already emitted
};

}  // namespace llmport
