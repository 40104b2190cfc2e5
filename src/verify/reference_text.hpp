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
/// - the ids decoded whole and streamed (IncrementalDecoder, what `run` prints: a decoder
///   rule anchored at the text's end fires on its short windows only) each agree with
///   full_text, and past the prompt's own decoding (which must begin them) with
///   completion_text (or full_text past the prompt text);
/// - decode(encode(full_text)) equals it (the encoder's normalizer must not rewrite text).
/// A difference within the prompt's text is not judged only when the prompt's ids hold a
/// special token past the first (special-token text, <unk>): such a prompt does not come back
/// from any tokenizer, and its ids are checked against the reference's elsewhere.
/// verify caps the verdict on a difference (VerifyResult::reference_text_differs).
/// `n_checked` (optional) receives how many of these held.
std::string reference_text_mismatch(const RecordSequence& g, const Tokenizer& tok, int* n_checked = nullptr);

}  // namespace llmport::verify_detail
