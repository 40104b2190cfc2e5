#include "llmport/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "llmport/error.hpp"

namespace llmport {

// A NaN/Inf in the logits means the forward pass is broken (e.g. a NaN weight); sampling
// from them would silently emit arbitrary ids, so generation stops with a check failure.
void check_finite_logits(std::span<const float> logits, int step, long position) {
  std::size_t bad = 0, first = 0;
  bool any_nan = false;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (std::isfinite(logits[i])) continue;
    if (bad++ == 0) first = i;
    any_nan = any_nan || std::isnan(logits[i]);
  }
  if (bad == 0) {
    // Every id equally likely: the forward pass collapsed (a weight whose square overflows
    // fp32 makes RMSNorm's sum of squares Inf and zeroes the hidden state, so every logit
    // is 0). A model's logits are never all one value; greedy would print id 0 for ever.
    if (logits.size() > 1 && std::all_of(logits.begin(), logits.end(), [&](float v) { return v == logits[0]; }))
      throw GateError("degenerate logits at step " + std::to_string(step) + " (position " + std::to_string(position) +
                      "): all " + std::to_string(logits.size()) + " values are " + fmt::format("{}", logits[0]) +
                      ", so every id is equally likely; the forward pass collapsed (`llmport check MODEL "
                      "--scan-values` finds weights above sqrt(FLT_MAX), whose square overflows fp32)");
    return;
  }
  throw GateError("non-finite logits at step " + std::to_string(step) + " (position " +
                  std::to_string(position) + "): " + std::to_string(bad) + " of " +
                  std::to_string(logits.size()) + " values are " + (any_nan ? "NaN/Inf" : "Inf") +
                  " (first at id " + std::to_string(first) +
                  "); the weights or the forward pass produce non-finite values "
                  "(`llmport check MODEL --scan-values` finds NaN/Inf weights and weights above sqrt(FLT_MAX), "
                  "whose square overflows fp32)");
}

GenerateResult generate(Engine& engine, std::span<const int> prompt, const GenerateOptions& opt,
                        const std::function<void(int)>& on_token) {
  using clock = std::chrono::steady_clock;
  if (prompt.empty()) throw UsageError("the prompt is empty (at least one token is needed)");
  if (opt.n_tokens < 1)
    throw UsageError("n-tokens must be >= 1, got " + std::to_string(opt.n_tokens));
  const long total = static_cast<long>(prompt.size()) + opt.n_tokens;
  if (static_cast<long>(prompt.size()) > engine.max_seq())
    throw UsageError("the prompt is " + std::to_string(prompt.size()) +
                     " tokens, longer than the context of " + std::to_string(engine.max_seq()) +
                     " tokens");
  // The last sampled token is never fed back: the cache holds total - 1 positions.
  if (total - 1 > engine.max_seq())
    throw UsageError("prompt (" + std::to_string(prompt.size()) + " tokens) + n-tokens (" +
                     std::to_string(opt.n_tokens) + ") exceed the context of " +
                     std::to_string(engine.max_seq()) + " tokens");
  Sampler sampler(opt.sampling);

  GenerateResult r;
  r.prompt_ids.assign(prompt.begin(), prompt.end());
  std::vector<int> history(prompt.begin(), prompt.end());  // [prompt + generated]
  history.reserve(static_cast<std::size_t>(total));
  r.stop_reason = "n_tokens";

  auto t0 = clock::now();
  std::vector<float> logits = engine.prefill(prompt);  // [vocab]
  r.prefill_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  for (int step = 0; step < opt.n_tokens; ++step) {
    // The logits at `step` come from the token at position prompt.size() - 1 + step.
    check_finite_logits(logits, step, static_cast<long>(prompt.size()) - 1 + step);
    const int id = sampler.sample(logits, history);
    GenerationStep st;
    st.token = id;
    if (opt.record_top > 0) st.top = top_k_logits(logits, opt.record_top);
    r.steps.push_back(std::move(st));
    if (!opt.ignore_stop &&
        std::find(opt.stop_ids.begin(), opt.stop_ids.end(), id) != opt.stop_ids.end()) {
      r.stop_reason = "stop_id";
      break;
    }
    r.generated_ids.push_back(id);
    history.push_back(id);
    if (on_token) on_token(id);
    if (step + 1 == opt.n_tokens) break;
    auto t1 = clock::now();
    logits = engine.decode_step(id);
    r.decode_ms += std::chrono::duration<double, std::milli>(clock::now() - t1).count();
    ++r.n_decode;
  }
  return r;
}

}  // namespace llmport
