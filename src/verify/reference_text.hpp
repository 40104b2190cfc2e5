#pragma once
// What a reference printed beside its ids (RecordSequence::full_text, completion_text,
// pieces), held against llmport's tokenizer. The logit gates compare ids only: a
// tokenizer.json whose decoder or normalizer was changed (a name rewritten on output, a word
// rewritten before encoding) would pass them with text the reference never printed.
#include <string>

#include "llmport/records.hpp"
#include "llmport/tokenizer.hpp"

namespace llmport::verify_detail {

/// "" when llmport's tokenizer reproduces every text `g` states, else the first difference
/// (shown around its byte offset). Compared where text and ids overlap (a golden cut to
/// fewer steps keeps its longer text: a prefix is no difference). Checked, each where stated:
/// - pieces: id_to_token of each prompt and generated id is the reference's piece;
/// - full_text: decode(prompt_ids + tokens, skip special) agrees with it, and
///   decode(encode(full_text)) equals it (the encoder's normalizer must not rewrite the text; the
///   prompt's own encoding is checked against its ids elsewhere); a difference within the
///   prompt's text length is not judged (a prompt holding special-token text or characters
///   without a piece does not come back from any tokenizer);
/// - completion_text: decode(prompt_ids + tokens) agrees with decode(prompt_ids) + it.
/// verify caps the verdict on a difference (VerifyResult::reference_text_differs).
/// `n_checked` (optional) receives how many of these held.
std::string reference_text_mismatch(const RecordSequence& g, const Tokenizer& tok, int* n_checked = nullptr);

}  // namespace llmport::verify_detail
