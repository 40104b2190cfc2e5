#pragma once
// Hugging Face tokenizer.json, id-for-id with the Rust `tokenizers` library: BPE (with
// byte fallback, ignore_merges), normalizers, pre-tokenizers, post-processor, decoders,
// added tokens matched before the model.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
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
  /// The raw bytes a vocabulary token stands for where the decoder maps pieces to bytes: a
  /// ByteFallback piece "<0xNN>" is that one byte, a piece under a ByteLevel decoder its
  /// characters mapped back through the byte alphabet (GPT-2's bytes_to_unicode). nullopt
  /// for added tokens, other pieces and other decoders (their text is their bytes). Unlike
  /// decode({id}), never replaced by U+FFFD: half a UTF-8 character stays its bytes (what
  /// OpenAI's logprobs `bytes` carries per token).
  virtual std::optional<std::string> token_bytes(int id) const { return std::nullopt; }
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
  /// Where the directory's tokenizer_config.json / special_tokens_map.json say what
  /// tokenizer.json does not, one line each (empty when they agree): an added_tokens_decoder
  /// entry tokenizer.json lacks or holds otherwise, a named special token (bos_token, ...)
  /// that is no added token of tokenizer.json, an explicit add_bos_token / add_eos_token
  /// that its post_processor does not do. llmport reads tokenizer.json as the Rust
  /// tokenizers library does; transformers applies these files on top of it (v5
  /// TokenizersBackend.__init__ / update_post_processor), so the two encode such a model
  /// differently. Computed at load.
  virtual std::vector<std::string> config_disagreements() const { return {}; }
  /// Id of bos_token()/eos_token() when they name a token, else nullopt.
  std::optional<int> bos_id() const { return bos_token().empty() ? std::nullopt : token_to_id(bos_token()); }
  std::optional<int> eos_id() const { return eos_token().empty() ? std::nullopt : token_to_id(eos_token()); }
};

/// Ids that `dir`/tokenizer_config.json's added_tokens_decoder marks `"special": true`
/// (sorted; empty when the file or the field is absent): what a model without tokenizer.json
/// says its control tokens are. Throws ConfigError naming the file and entry when it is
/// malformed.
std::vector<int> tokenizer_config_special_ids(const std::filesystem::path& dir);

/// Writes one "warning: ..." line per Tokenizer::config_disagreements() entry to `out`,
/// saying which reading llmport runs (tokenizer.json's).
void warn_tokenizer_disagreements(const Tokenizer& tok, std::ostream& out);

/// Streaming decoder: feed ids one at a time, get the text that became complete. Never
/// returns half a UTF-8 character; the decoder's leading-space strip applies once. The
/// pieces joined equal decode(ids) (tests/tokenizer/incremental_decoder_test.cpp), also
/// where a run of ByteFallback pieces is not valid UTF-8 (it is held until the piece after
/// it settles its text).
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tok, bool skip_special_tokens = false);
  /// Feeds a prompt's ids before the generated ones and returns its text as streamed (bytes
  /// of an unfinished character held back). The continuation is then what follows the
  /// prompt's decode: bytes pending at the prompt's end are the prompt's (take_prompt_tail)
  /// unless a generated piece finishes their character, which the continuation then starts
  /// with.
  std::string seed(const std::vector<int>& prompt);
  /// Appends `id` and returns the newly completed text (possibly empty).
  std::string push(int id);
  /// Text still held back (an incomplete UTF-8 tail), flushed as is.
  std::string flush();
  /// Once the first piece after seed() is out: the prompt's pending text that turned out to
  /// be its own (e.g. U+FFFD of an invalid byte run), for an echo of the prompt; "" after.
  std::string take_prompt_tail();

 private:
  // The HF tokenizers DecodeStream scheme: decode a short window of ids, and emit the text
  // past the window's already-emitted prefix once it no longer ends in U+FFFD (an
  // incomplete character). The window restarts at the last emitted token, so the cost of a
  // push does not grow with the length of the stream.
  bool byte_piece(int id) const;
  std::size_t emit_from(const std::string& text);  // where the new text starts in `text`
  const Tokenizer& tok_;
  bool skip_special_;
  std::vector<int> ids_;          // window of recent ids
  std::string prefix_;            // decode(ids_[0, prefix_index_)) within the window
  std::size_t prefix_index_ = 0;  // ids of the window already emitted
  bool seeded_ = false;           // seed() ran and nothing was emitted since
  std::string seed_text_;         // decode of the window at the end of the prompt
  std::string prompt_tail_;
};

}  // namespace llmport
