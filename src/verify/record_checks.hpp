#pragma once
// Internal consistency of one reference step as a reader sees it: what any honest greedy
// reference satisfies by construction, so a file that breaks it is malformed (exit 2), not a
// verdict about the engine.
#include <string>

#include "llmport/records.hpp"

namespace llmport::verify_detail {

/// "" when `st` is consistent, else what is wrong (the caller names the file and field):
/// - its token is a top-1 of its own top list (a greedy reference picks its largest logit;
///   ties in any order);
/// - with a logsumexp: it is finite and the top entries' probabilities exp(logit -
///   logsumexp) sum to at most 1 + kMassSlack (float32 rounding of an honest logsumexp
///   leaves ~4e-6) with each logit taken down by its own printed half unit and the
///   logsumexp up by its own (st.top_half_unit(i), st.lse_half_unit);
/// - with full logits: all finite, each top entry is bit for bit the logit at its id, the
///   list holds the largest logits, and logsumexp is the logits' own (within 1e-4 + 1e-6
///   relative + st.print_resolution()). Gates read the top list and the full logits
///   separately (top-5 inclusion, self-match / full KL), so two halves that disagree would
///   let each be forged alone.
std::string step_inconsistency(const StepRecord& st);

inline constexpr double kMassSlack = 1e-4;

/// " (a reference of another model?)", naming the model `ref` states when it does; "" for
/// no reference. Appended to errors of ids that do not fit the model.
std::string other_model_hint(const RecordFile* ref);

}  // namespace llmport::verify_detail
