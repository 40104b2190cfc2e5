// Fuzz target: tokenizer.json load + encode/decode (src/tokenizer). The input is a
// tokenizer.json; a tokenizer that loads encodes a few fixed texts (ASCII, accents, CJK,
// emoji, special-token text, spaces) and decodes what it got plus the first ids.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "llmport/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  llmport::fuzz::put_file("tokenizer.json", llmport::fuzz::as_text(data, size));
  try {
    auto tok = llmport::Tokenizer::load(llmport::fuzz::work_dir());
    static const char* texts[] = {"Hello world", " caf\xc3\xa9  na\xc3\xafve\n\n", "\xe4\xbd\xa0\xe5\xa5\xbd 123",
                                  "\xf0\x9f\x98\x80!", "<s>[INST] x [/INST]</s><|im_start|>", "   ", ""};
    for (const char* t : texts) {
      for (bool special : {false, true}) {
        try {
          llmport::EncodeOptions o;
          o.add_special_tokens = special;
          auto ids = tok->encode(t, o);
          (void)tok->decode(ids, special);
        } catch (const std::exception&) {
        }
      }
    }
    std::vector<int> first;
    for (int i = 0; i < tok->vocab_size() && i < 64; ++i) first.push_back(i);
    (void)tok->decode(first, false);
    (void)tok->decode(first, true);
  } catch (const std::exception&) {
  }
  return 0;
}
