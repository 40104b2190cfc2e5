// Tokenizer::load: the tokenizer.json pipeline (added tokens -> normalizer -> pre-tokenizer
// -> BPE -> post-processor; decoders for the way back) plus tokenizer_config.json /
// special_tokens_map.json / chat_template.jinja metadata.

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/tokenizer.hpp"
#include "tokenizer/added_vocabulary.hpp"
#include "tokenizer/bpe_model.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/config_agreement.hpp"
#include "tokenizer/components.hpp"
#include "tokenizer/tokenizer_json.hpp"
#include "tokenizer/utf8.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using tok::json;

std::string read_text(const fs::path& p) { return read_text_file(p); }

json parse_json(const fs::path& p) { return parse_json_text(read_text_file(p), p.string()); }

/// bos_token / eos_token value of a tokenizer_config.json / special_tokens_map.json object.
std::string token_field(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it == j.end() ? "" : tok::named_token(*it);
}

class HfTokenizer final : public Tokenizer {
 public:
  HfTokenizer(const fs::path& file, const fs::path& dir) {
    const std::string where = file.string();
    tok::TokenizerJson parsed = tok::parse_tokenizer_json(read_text(file), where);
    const json& j = parsed.doc;
    try {
      if (!j.is_object()) throw ConfigError(where + ": top level must be an object");
      model_ = tok::BpeModel::from_json(tok::require(j, "model", where), std::move(parsed.vocab),
                                        std::move(parsed.merges), where);
      normalizer_ = tok::make_normalizer(j.value("normalizer", json()), where);
      pre_tokenizer_ = tok::make_pre_tokenizer(j.value("pre_tokenizer", json()), where);
      post_processor_ = tok::make_post_processor(j.value("post_processor", json()), where);
      decoder_ = tok::make_decoder(j.value("decoder", json()), where);
      note_byte_decoders(j.value("decoder", json()));
      std::vector<tok::AddedToken> added;
      if (auto it = j.find("added_tokens"); it != j.end() && !it->is_null()) {
        if (!it->is_array()) throw ConfigError(where + ": 'added_tokens' must be an array");
        for (const auto& a : *it) {
          tok::AddedToken t;
          if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
              !a["content"].is_string())
            throw ConfigError(where + ": each added_tokens entry needs an integer 'id' and a string 'content'");
          t.content = a["content"].get<std::string>();
          const std::string field = "added_tokens['" + t.content + "'].id";
          try {
            t.id = static_cast<int>(json_integer(a["id"], field, 0, 2147483646));
          } catch (const ConfigError& e) {
            throw ConfigError(where + ": " + e.what());
          }
          const long long bound = tok::max_dense_id(static_cast<std::size_t>(model_->size()) + it->size());
          if (t.id >= bound)
            throw ConfigError(where + ": field '" + field + "': id " + std::to_string(t.id) +
                              " is beyond the vocabulary (ids must be < " + std::to_string(bound) + ")");
          t.special = tok::get_bool(a, "special", false);
          t.lstrip = tok::get_bool(a, "lstrip", false);
          t.rstrip = tok::get_bool(a, "rstrip", false);
          t.single_word = tok::get_bool(a, "single_word", false);
          t.normalized = tok::get_bool(a, "normalized", !t.special);
          added.push_back(std::move(t));
        }
      }
      added_.build(std::move(added), normalizer_.get());
    } catch (const json::exception& e) {
      throw ConfigError(where + ": " + e.what());
    }
    vocab_size_ = std::max(model_->size(), added_.max_id() + 1);
    load_metadata(dir);
  }

  std::vector<int> encode(std::string_view text, const EncodeOptions& opt) const override {
    if (std::size_t bad = tok::utf8_first_invalid(text); bad != text.size())
      throw UsageError("text to tokenize is not valid UTF-8 (byte offset " + std::to_string(bad) + ")");
    std::vector<int> ids;
    ids.reserve(text.size() / 3 + 4);
    std::vector<tok::Segment> raw, norm;
    added_.split(text, false, opt.split_special_tokens, raw);
    std::string piece;
    for (const auto& seg : raw) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
        continue;
      }
      piece.assign(text.substr(seg.b, seg.e - seg.b));
      if (normalizer_) normalizer_->normalize(piece);
      norm.clear();
      added_.split(piece, true, opt.split_special_tokens, norm);
      for (const auto& s2 : norm) {
        if (s2.id >= 0) {
          ids.push_back(s2.id);
          continue;
        }
        encode_piece(std::string_view(piece).substr(s2.b, s2.e - s2.b), seg.b == 0 && s2.b == 0, ids);
      }
    }
    if (opt.add_special_tokens && post_processor_) post_processor_->process(ids);
    return ids;
  }

  std::string decode(const std::vector<int>& ids, bool skip_special_tokens) const override {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int id : ids) {
      if (const tok::AddedToken* a = added_.by_id(id)) {
        if (skip_special_tokens && a->special) continue;
        tokens.push_back(a->content);
      } else if (const std::string* t = model_->id_to_token(id)) {
        tokens.push_back(*t);
      }
    }
    std::string out;
    if (decoder_) {
      decoder_->decode_chain(tokens);
      for (const auto& t : tokens) out += t;
    } else {
      for (std::size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    }
    return out;
  }

  std::string id_to_token(int id) const override {
    if (const tok::AddedToken* a = added_.by_id(id)) return a->content;
    if (const std::string* t = model_->id_to_token(id)) return *t;
    throw UsageError("token id " + std::to_string(id) + " is out of range (vocab size " +
                     std::to_string(vocab_size_) + ")");
  }
  std::optional<int> token_to_id(std::string_view token) const override {
    if (const tok::AddedToken* a = added_.by_content(token)) return a->id;
    return model_->token_to_id(token);
  }
  int vocab_size() const override { return vocab_size_; }
  bool is_special(int id) const override {
    const tok::AddedToken* a = added_.by_id(id);
    return a && a->special;
  }
  std::optional<std::string> token_bytes(int id) const override {
    if (added_.by_id(id)) return std::nullopt;
    const std::string* piece = model_->id_to_token(id);
    if (!piece) return std::nullopt;
    if (const int b = tok::byte_piece_value(*piece); byte_fallback_ && b >= 0)
      return std::string(1, static_cast<char>(b));
    if (!byte_level_) return std::nullopt;
    std::string bytes;
    for (std::size_t i = 0; i < piece->size();) {
      const int b = tok::unicode_to_byte(tok::utf8_next(*piece, i));
      if (b < 0) return std::nullopt;  // the decoder keeps such a piece's text as it is
      bytes.push_back(static_cast<char>(b));
    }
    return bytes;
  }
  std::string bos_token() const override { return bos_; }
  std::string eos_token() const override { return eos_; }
  std::string chat_template() const override { return chat_template_; }
  std::string chat_template_origin() const override { return chat_template_origin_; }
  std::vector<std::string> config_disagreements() const override { return disagreements_; }

 private:
  void encode_piece(std::string_view text, bool at_start, std::vector<int>& ids) const {
    if (text.empty()) return;
    if (!pre_tokenizer_) {
      model_->tokenize(text, ids);
      return;
    }
    std::vector<tok::PreToken> pieces;
    pieces.push_back({std::string(text), at_start});
    pre_tokenizer_->pre_tokenize(pieces);
    for (const auto& p : pieces) model_->tokenize(p.text, ids);
  }

  void load_metadata(const fs::path& dir) {
    json cfg, special_map;
    const fs::path cfg_path = dir / "tokenizer_config.json";
    if (const fs::path& p = cfg_path; fs::exists(p)) {
      cfg = parse_json(p);
      // A damaged file is named, not read as "no settings" (which would drop the chat
      // template and the special tokens without a word).
      if (!cfg.is_object()) throw ConfigError(p.string() + ": not a JSON object");
      bos_ = token_field(cfg, "bos_token");
      eos_ = token_field(cfg, "eos_token");
      if (auto it = cfg.find("chat_template"); it != cfg.end() && !it->is_null()) {
        if (!it->is_string() && !it->is_array())
          throw ConfigError(p.string() + ": field 'chat_template': expected a string or a list of {name, template}, got " +
                            std::string(it->type_name()));
        if (it->is_string()) {
          chat_template_ = it->get<std::string>();
        } else if (it->is_array()) {
          for (const auto& t : *it)
            if (t.is_object() && t.value("name", "") == "default" && t.contains("template") && t["template"].is_string())
              chat_template_ = t["template"].get<std::string>();
        }
        if (!chat_template_.empty()) chat_template_origin_ = p.string() + ": chat_template";
      }
    }
    if (fs::path p = dir / "special_tokens_map.json"; fs::exists(p)) {
      special_map = parse_json(p);
      if (bos_.empty()) bos_ = token_field(special_map, "bos_token");
      if (eos_.empty()) eos_ = token_field(special_map, "eos_token");
    }
    if (fs::path p = dir / "chat_template.jinja"; fs::exists(p)) {
      chat_template_ = read_text(p);
      chat_template_origin_ = p.string();
    }
    disagreements_ = tok::config_disagreements(*this, added_, cfg, special_map, cfg_path.string());
  }

  // Which byte-mapping decoders the chain holds (make_decoder has validated it).
  void note_byte_decoders(const json& d) {
    if (!d.is_object()) return;
    const std::string type = d.value("type", "");
    if (type == "ByteLevel") byte_level_ = true;
    if (type == "ByteFallback") byte_fallback_ = true;
    if (auto it = d.find("decoders"); type == "Sequence" && it != d.end() && it->is_array())
      for (const json& c : *it) note_byte_decoders(c);
  }

  std::unique_ptr<tok::BpeModel> model_;
  bool byte_level_ = false, byte_fallback_ = false;
  std::unique_ptr<tok::Normalizer> normalizer_;
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<tok::PostProcessor> post_processor_;
  std::unique_ptr<tok::Decoder> decoder_;
  tok::AddedVocabulary added_;
  int vocab_size_ = 0;
  std::string bos_, eos_, chat_template_, chat_template_origin_;
  std::vector<std::string> disagreements_;
};

}  // namespace

bool Tokenizer::exists(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / "tokenizer.json", ec);
}

std::unique_ptr<Tokenizer> Tokenizer::load(const fs::path& dir) {
  fs::path file = dir, base = dir;
  // A path that does not exist is named as given (its parent's tokenizer.json is not it).
  if (!fs::exists(dir)) throw ConfigError(dir.string() + ": no such file or directory (a tokenizer.json or its directory)");
  if (fs::is_directory(dir)) {
    file = dir / "tokenizer.json";
  } else {
    // A file path: tokenizer.json itself, or another file of the model directory
    // (e.g. config.json), whose directory then holds the tokenizer.
    base = dir.parent_path();
    if (dir.filename() != "tokenizer.json") file = base / "tokenizer.json";
  }
  if (fs::is_directory(file)) throw ConfigError(file.string() + ": is a directory, expected the tokenizer.json file");
  if (!fs::is_regular_file(file)) throw ConfigError(file.string() + ": no tokenizer.json there");
  return std::make_unique<HfTokenizer>(file, base);
}

}  // namespace llmport
