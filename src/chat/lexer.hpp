#pragma once
// Jinja2 lexer with the settings transformers uses: trim_blocks (the first newline after a
// block or comment tag is dropped), lstrip_blocks (spaces and tabs before a block or
// comment tag at the start of a line are dropped, unless `{%+`), `{%-`/`-%}` whitespace
// control, newlines normalized to "\n" and one trailing newline of the source removed
// (keep_trailing_newline=False). Comments are dropped; `{% raw %}` becomes data.
#include <cstdint>
#include <string>
#include <vector>

namespace llmport::jinja {

enum class Tok { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };

struct Token {
  Tok type = Tok::End;
  std::string text;  ///< data, name, unescaped string, or operator
  std::int64_t ival = 0;
  double fval = 0;
  int line = 1;
};

/// Splits template source into tokens. Throws ConfigError("chat template line N: ...") on
/// an unclosed tag/comment/string or a character no Jinja token starts with.
std::vector<Token> tokenize(const std::string& source);

}  // namespace llmport::jinja
