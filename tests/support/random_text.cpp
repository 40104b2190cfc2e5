#include "support/random_text.hpp"

#include <random>

namespace llmport::test {

const std::vector<std::string>& random_text_pieces() {
  static const std::vector<std::string> p = {
      "Hello", "world", " the", "THE", "it's", "IT'S", " we'll", "don't", "I'M", "na\u00efve", "caf\u00e9",
      "cafe\u0301", "12345678", "3.14159", "1,000,000", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n ",
      "\u00a0", "\u3000", "\u200b", "\u200d", "\ufeff", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
      "\u4e2d\u6587", "\ud55c\uad6d\uc5b4", "\u1100\u1161", "\u0645\u0631\u062d\u0628\u0627", "\u05e9\u05dc\u05d5\u05dd",
      "\u0939\u093f\u0928\u094d\u0926\u0940", "\u0e20\u0e32\u0e29\u0e32", "\U0001F600",
      "\U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F44D\U0001F3FD", "\U0001F1EB\U0001F1F7", "\u2211\u222b\u221a",
      "\u00bd", "\ufb01", "\u216b", "\u2460", "\uff46\uff55\uff4c\uff4c", "\U0001D4D7\U0001D4EE", "\u03a9", "\u00df",
      "\u0130", "<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>",
      "<|begin_of_text|>", "<|eot_id|>", "[INST]", "<start_of_turn>", "<bos>", "<pad>",
      "<|reserved_special_token_4|>", "\u2581", "\u2581\u2581", "\u0120", "\u010a", "<0x0A>", "\\n", "...", "!!!",
      "???", "---", "\"\"\"", "''", "`code`", "{\"a\": 1}", "http://example.com/a?b=c", "user@mail.org", "#tag",
      "$100", "\u20ac", std::string(1, '\0'), "\x01", "\x7f", "a", " ", ".", ",", std::string(50, 'x'),
      std::string(17, ' '), std::string(9, '\n'), std::string(13, '9'), "The quick brown fox jumps over the lazy dog.",
      "\u01c5", "\ufdfa", "\u0301", "\u064b", "\u24b6", "\U00010000", "\U0010FFFF", "e\u0301\u0301",
      "\uff76\uff80\uff76\uff85", "{{ x }}", "{% if true %}", "{#", "\\", "'", "\"", "<think>why</think>so"};
  return p;
}

// Raw mt19937 words, not a distribution: those differ between standard libraries.
std::vector<std::string> random_strings(unsigned seed, int n) {
  std::mt19937 rng(seed);
  const auto& p = random_text_pieces();
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    std::string s;
    const int k = 1 + static_cast<int>(rng() % 8);
    for (int j = 0; j < k; ++j) s += p[rng() % p.size()];
    if (rng() % 10 == 0) s = " " + s;
    if (rng() % 10 == 0) s += " ";
    out.push_back(s);
  }
  out.emplace_back();
  return out;
}

}  // namespace llmport::test
