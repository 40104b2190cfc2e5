// Consistency of a reference step with itself (record_checks.hpp).
#include "verify/record_checks.hpp"

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>

#include <algorithm>

#include "llmport/error.hpp"
#include "llmport/model_config.hpp"
#include "verify/format.hpp"

namespace llmport::verify_detail {

namespace {

// How far a recorded logsumexp may sit from what its logits allow beyond their printed
// digits: float32 summation over a vocabulary (relative ~1e-6 of |lse|; logsumexps here
// are O(10)) plus 1e-4 nats for a reference that summed in a different order.
double lse_tolerance(double lse) { return 1e-4 + 1e-6 * std::abs(lse); }

std::string token_check(const StepRecord& st) {
  if (st.top.empty()) return "";
  for (const TopEntry& e : st.top)
    if (e.id == st.token && e.logit == st.top[0].logit) return "";
  return "token " + std::to_string(st.token) + " is not the top-1 of its own top list " + format_top(st.top) +
         " (a greedy reference picks its largest logit)";
}

std::string mass_check(const StepRecord& st) {
  if (!st.logsumexp) return "";
  if (!std::isfinite(*st.logsumexp)) return "logsumexp " + fmt_g(*st.logsumexp) + " is not finite";
  // The smallest mass the printed digits allow: each logit down by its own half unit, the
  // logsumexp up by its own (a uniform slack would let one absurd entry widen them all).
  double mass = 0.0, least = 0.0;
  for (std::size_t i = 0; i < st.top.size(); ++i) {
    const double lp = static_cast<double>(st.top[i].logit) - *st.logsumexp;
    mass += std::exp(lp);
    least += std::exp(lp - st.top_half_unit(i) - st.lse_half_unit);
  }
  if (!(least <= 1.0 + kMassSlack))
    return "the top entries' probabilities exp(logit - logsumexp) sum to " + fmt_g(mass, 8) +
           " > 1: logsumexp " + fmt_g(*st.logsumexp) + " is below the logits it sums";
  return "";
}

std::string logits_check(const StepRecord& st) {
  if (st.logits.empty()) return "";
  for (std::size_t v = 0; v < st.logits.size(); ++v)
    if (!std::isfinite(st.logits[v])) return "full logit " + std::to_string(v) + " is not finite";
  for (const TopEntry& e : st.top) {
    if (e.id < 0 || static_cast<std::size_t>(e.id) >= st.logits.size())
      return "top id " + std::to_string(e.id) + " is outside the " + std::to_string(st.logits.size()) + " full logits";
    const float full = st.logits[static_cast<std::size_t>(e.id)];
    if (std::bit_cast<uint32_t>(full) != std::bit_cast<uint32_t>(e.logit))
      return "top entry " + std::to_string(e.id) + " (" + fmt_g(e.logit, 9) + ") differs from the full logit " +
             fmt_g(full, 9) + " at that id";
  }
  // The list must hold the largest values: compare it rank by rank with the logits' own
  // top (ties may order ids either way, so values are compared, not ids).
  const auto own = top_k(st.logits, static_cast<int>(st.top.size()));
  for (std::size_t i = 0; i < own.size(); ++i)
    if (own[i].logit != st.top[i].logit)
      return "the top list is not the largest logits: rank " + std::to_string(i) + " holds " +
             fmt_g(st.top[i].logit, 9) + ", the full logits have " + fmt_g(own[i].logit, 9) + " (id " +
             std::to_string(own[i].id) + ")";
  if (st.logsumexp) {
    const double lse = log_sum_exp(st.logits);
    if (!(std::abs(lse - *st.logsumexp) <= lse_tolerance(lse) + st.print_resolution()))
      return "logsumexp " + fmt_g(*st.logsumexp, 9) + " is not the full logits' own " + fmt_g(lse, 9);
  }
  return "";
}

}  // namespace

std::string step_inconsistency(const StepRecord& st) {
  for (const std::string& why : {token_check(st), mass_check(st), logits_check(st)})
    if (!why.empty()) return why;
  return "";
}

std::string other_model_hint(const RecordFile* ref) {
  if (!ref) return "";
  return ref->model.empty() ? " (a reference of another model?)"
                            : " (the reference states model '" + ref->model + "': a reference of another model?)";
}

}  // namespace llmport::verify_detail

namespace llmport {

using verify_detail::fmt_g;
using verify_detail::other_model_hint;

namespace {

// Recorded hidden states, if any, are the model's shape: hidden_size wide, one output per
// layer, every record one row per position. Phases 2-3 and diagnosis compare them record
// by record; a set of another shape (an empty layer list beside an embedding and a final
// norm, a width cut by one) was skipped or failed mid-deploy instead of refused.
void check_hidden_fits(const RecordFile& ref, const RecordSequence& seq, const ModelConfig& cfg) {
  const HiddenStates& h = seq.hidden;
  if (h.embedding.empty() && h.layer_out.empty() && h.final_norm.empty()) return;
  const std::string where = ref.path.string() + ": sequence " + seq.name + ": hidden states";
  if (h.emb_dim != cfg.emb_dim)
    throw UsageError(where + " are " + std::to_string(h.emb_dim) + " values wide, the model's hidden_size is " +
                     std::to_string(cfg.emb_dim));
  // No "another model?" hint here: a damaged file is as likely (the ids and architecture
  // checks, which another model's file fails first, carry it).
  if (static_cast<int>(h.layer_out.size()) != cfg.n_layers)
    throw UsageError(where + ": " + std::to_string(h.layer_out.size()) + " layer outputs, the model has " +
                     std::to_string(cfg.n_layers) + " layers");
  const std::size_t rows = h.positions.size() * static_cast<std::size_t>(h.emb_dim);
  auto sized = [&](const std::vector<float>& v, const std::string& name) {
    if (!v.empty() && v.size() != rows)
      throw UsageError(where + ": " + name + " has " + std::to_string(v.size()) + " values, " +
                       std::to_string(h.positions.size()) + " position(s) x " + std::to_string(h.emb_dim) + " expected");
  };
  sized(h.embedding, "embedding");
  for (std::size_t l = 0; l < h.layer_out.size(); ++l) sized(h.layer_out[l], "layer " + std::to_string(l) + " output");
  sized(h.final_norm, "final_norm");
}

}  // namespace

namespace {
// The largest logsumexp a step's top list allows over `vocab` logits (record_fits_model's
// rule), each value taken at the far end of its printed half unit.
double top_k_lse_ceiling(const StepRecord& st, int vocab) {
  const double m = st.top[0].logit + st.top_half_unit(0);
  double s = 0.0;
  for (std::size_t i = 0; i < st.top.size(); ++i) s += std::exp(st.top[i].logit + st.top_half_unit(i) - m);
  const std::size_t last = st.top.size() - 1;
  // A list of the whole vocabulary (or more) leaves no other logit: its own logsumexp.
  const double others = std::max(0.0, static_cast<double>(vocab) - static_cast<double>(st.top.size()));
  s += others * std::exp(st.top[last].logit + st.top_half_unit(last) - m);
  return m + std::log(s);
}
}  // namespace

void check_record_fits_model(const RecordFile& ref, const ModelConfig& cfg) {
  // A reference that states another architecture was made for another model: bad input
  // naming both, not an engine failure (its logits would fail the gates as a wrong engine,
  // its hidden states phase 2 and diagnosis).
  // Every statement counts (root and `reference` object, both keys, each list entry): a
  // file stating the model's class in one place and another class elsewhere is no file of
  // this model. Class names compare case-insensitively.
  const auto& stated = ref.architectures;
  auto lower = [](std::string v) {
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v;
  };
  const std::string model_class = lower(cfg.architecture);
  if (!cfg.architecture.empty() &&
      std::any_of(stated.begin(), stated.end(), [&](const std::string& a) { return lower(a) != model_class; })) {
    std::string names;
    for (const auto& a : stated) names += (names.empty() ? "" : ", ") + a;
    throw UsageError(ref.path.string() + ": architecture: the reference states " + names + ", the model is " +
                     cfg.architecture + other_model_hint(&ref));
  }
  for (const auto& seq : ref.sequences) {
    check_hidden_fits(ref, seq, cfg);
    auto check = [&](const std::string& where, int id, const char* what) {
      if (id < 0 || id >= cfg.vocab_size)
        throw UsageError(where + ": " + what + " " + std::to_string(id) + " outside the vocabulary [0, " +
                         std::to_string(cfg.vocab_size) + ")" + other_model_hint(&ref));
    };
    for (int id : seq.prompt_ids) check(ref.path.string() + ": sequence " + seq.name + " prompt", id, "token id");
    for (std::size_t k = 0; k < seq.steps.size(); ++k) {
      const StepRecord& st = seq.steps[k];
      const std::string where = ref.path.string() + ": sequence " + seq.name + " step " + std::to_string(k);
      check(where, st.token, "token id");
      for (const auto& e : st.top) check(where, e.id, "top id");
      if (!st.logits.empty() && st.logits.size() != static_cast<std::size_t>(cfg.vocab_size))
        throw UsageError(where + ": " + std::to_string(st.logits.size()) + " full logits for a vocabulary of " +
                         std::to_string(cfg.vocab_size) + other_model_hint(&ref));
      if (st.logsumexp && !st.top.empty()) {
        const double ceiling = top_k_lse_ceiling(st, cfg.vocab_size);
        const double lse = *st.logsumexp - st.lse_half_unit;
        if (lse > ceiling + verify_detail::lse_tolerance(lse))
          throw UsageError(where + ": logsumexp " + fmt_g(*st.logsumexp, 7) + " is above the " + fmt_g(ceiling, 7) +
                           " its top-" + std::to_string(st.top.size()) + " allows (the other " +
                           std::to_string(std::max(0, cfg.vocab_size - static_cast<int>(st.top.size()))) +
                           " logits are at most its smallest, " + fmt_g(st.top.back().logit, 7) +
                           "): the list is not the largest logits");
      }
    }
  }
}

}  // namespace llmport
