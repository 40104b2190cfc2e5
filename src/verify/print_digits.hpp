#pragma once
// How finely a record file printed its logits: a golden written with "%.6g" holds each
// logsumexp only to +-5e-5 at 35, and the coarsened KL's rest bucket (1 - P5) moves by that
// much times P5, enough alone to exceed the fp32 bound on a sharp step. The digits are read
// from the numbers themselves, so no field has to declare them.
#include <nlohmann/json.hpp>

#include "llmport/records.hpp"

namespace llmport::verify_detail {

/// The print precision of one kind of value (a sequence's logsumexps, or its logits), as
/// the most significant digits any of them carries and the finest decimal place any of
/// them reaches. "%.6g" reads as {6, ...}, "%.4f" as {..., -4}; exact float32 values written
/// as shortest doubles read as ~17 digits (a half unit of ~1e-15: nothing to widen). One
/// value printed finely holds all of its kind in the sequence to its precision: a sequence
/// cannot widen its own slack by rounding some of them coarsely.
struct PrintDigits {
  int significant = 17;       ///< most significant digits of any value
  int last_exponent = -400;   ///< finest decimal place of any value: 10^last_exponent
  /// Half a unit in the last digit `v` was printed with: 0.5 * 10^max(E - significant + 1,
  /// last_exponent), E = floor(log10 |v|) (the finer of the two print styles, so a value is
  /// never given more slack than either style allows).
  double half_unit(double v) const;
};

/// A sequence's print precision, per kind: its logsumexps and its logits (top lists and
/// full rows) are often written by different code ("%.6g" logits beside a logsumexp
/// written in full), and each kind is judged by its own digits.
struct SequenceDigits {
  PrintDigits logsumexp;  ///< values under a key "logsumexp"
  PrintDigits logits;     ///< values under "logit", "logits", "last_logits", "prompt_last_logits"
};

/// Scans `sequence` (one sequence's object of a parsed record file: a stories case, a
/// synthetic or llmport-records sequence) for its values; a kind without values keeps the
/// defaults (exact). Keys of other names ("logit_note") are not read: the reader uses only these.
SequenceDigits scan_print_digits(const nlohmann::json& sequence);

/// Top entries more than this many nats below the top-1 weigh less than 2^-24 of its
/// probability, below float32's resolution of the step's mass (ln 2^24 = 16.6): their
/// print precision cannot move any sum the gates compute, so it does not set the step's
/// logit_half_unit (their own top_half_units still bound their own values).
inline constexpr double kPrintMassWindow = 16.7;

/// Sets st.lse_half_unit (0 without a logsumexp), st.top_half_units (each top logit's) and
/// st.logit_half_unit (the largest among those within kPrintMassWindow of the top-1) for a
/// step of a sequence of precision `d`.
void set_print_half_units(StepRecord& st, const SequenceDigits& d);

}  // namespace llmport::verify_detail
