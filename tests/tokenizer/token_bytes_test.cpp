// Tokenizer::token_bytes: the raw bytes a token stands for where the decoder maps pieces to
// bytes, checked against the tokenizer.json vocabulary read here and GPT-2's
// bytes_to_unicode table written out from its definition (openai/gpt-2 encoder.py).
#include <cstdio>
#include <fstream>

#include "tokenizer/tokenizer_fixtures.hpp"

namespace llmport::test {
namespace {

// GPT-2 bytes_to_unicode inverted: code point -> byte. Printable Latin-1 ('!'..'~',
// '¡'..'¬', '®'..'ÿ') stands for itself, every other byte b for 256 + its rank among them.
std::map<char32_t, int> gpt2_unicode_to_byte() {
  std::map<char32_t, int> m;
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    m[static_cast<char32_t>(printable ? b : 256 + next++)] = b;
  }
  return m;
}

// The code points of valid UTF-8 `s`.
std::vector<char32_t> code_points(const std::string& s) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]) & 0x3F);
    out.push_back(cp);
    i += static_cast<std::size_t>(n);
  }
  return out;
}

nlohmann::json tokenizer_json(const std::string& name) {
  std::ifstream f(shared_path("tokenizers/" + name) / "tokenizer.json");
  return nlohmann::json::parse(f);
}

// A ByteFallback tokenizer: each "<0xNN>" piece is the byte NN (half of a character too,
// which decode({id}) renders as U+FFFD); an ordinary piece and an added token have none.
TEST(TokenBytes, ByteFallbackPiecesAreTheirByte) {
  const Tokenizer& tok = cached_tokenizer(shared_path("tokenizers/mistral_v0_1"));
  const auto vocab = tokenizer_json("mistral_v0_1")["model"]["vocab"];
  int byte_pieces = 0;
  for (const auto& [piece, id] : vocab.items()) {
    unsigned b = 0;
    if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%2X>", &b) == 1) {
      ++byte_pieces;
      EXPECT_EQ(tok.token_bytes(id.get<int>()), std::string(1, static_cast<char>(b))) << piece;
    }
  }
  EXPECT_EQ(byte_pieces, 256);
  EXPECT_EQ(tok.decode({*tok.token_to_id("<0xE2>")}), "\xEF\xBF\xBD");
  EXPECT_EQ(tok.token_bytes(*tok.token_to_id("\xE2\x96\x81the")), std::nullopt);  // "▁the": its text
  EXPECT_EQ(tok.token_bytes(*tok.bos_id()), std::nullopt);
}

// A ByteLevel tokenizer: every vocabulary piece maps back through the byte alphabet, so a
// piece holding half of "€" (E2 82 AC) is those bytes; added tokens have none.
TEST(TokenBytes, ByteLevelPiecesMapBackThroughTheAlphabet) {
  const Tokenizer& tok = cached_tokenizer(shared_path("tokenizers/qwen3"));
  const auto to_byte = gpt2_unicode_to_byte();
  const auto vocab = tokenizer_json("qwen3")["model"]["vocab"];
  int checked = 0, partial = 0;
  for (const auto& [piece, id] : vocab.items()) {
    if (id.get<int>() % 97 != 0) continue;  // a sample: the whole vocabulary is 151k pieces
    std::string want;
    for (char32_t cp : code_points(piece)) want.push_back(static_cast<char>(to_byte.at(cp)));
    EXPECT_EQ(tok.token_bytes(id.get<int>()), want) << piece;
    ++checked;
    partial += tok.decode({id.get<int>()}) != want;
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(partial, 0) << "no sampled piece holds part of a character";
  const std::vector<int> euro = tok.encode("\xE2\x82\xAC", {false, false});
  std::string joined;
  for (int id : euro) joined += tok.token_bytes(id).value();
  EXPECT_EQ(joined, "\xE2\x82\xAC");
  EXPECT_EQ(tok.token_bytes(*tok.token_to_id("<|im_start|>")), std::nullopt);
}

}  // namespace
}  // namespace llmport::test
