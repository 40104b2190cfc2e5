// Phase 0, reference baseline: the model loads and is consistent (foundation's phase-0
// checks), and the fp32 reference kernels run the first prompt with a sane top-1, no NaN.
#include <fmt/format.h>

#include <algorithm>

#include "deploy/phase.hpp"
#include "deploy/prompts.hpp"
#include "deploy/util.hpp"
#include "llmport/error.hpp"
#include "llmport/model_checks.hpp"
#include "llmport/runner.hpp"

namespace llmport::deploy {
namespace {

nlohmann::json top_json(const std::vector<TopEntry>& top) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : top) a.push_back({{"id", t.id}, {"logit", t.logit}});
  return a;
}

// A failed check_model_dir: a consistency mismatch is a failed check; anything that stops
// loading (a damaged file, a NaN stored in a tensor) blocks, as bad input where its exit
// code says so.
PhaseResult model_checks_result(const Phase0Report& rep, const nlohmann::json& num) {
  PhaseResult r = make_result(0, rep.exit_code == kExitCheckFailed ? PhaseStatus::Fail : PhaseStatus::Blocked,
                              "model checks: " + rep.error, num);
  r.bad_input = rep.exit_code == kExitBadInput;
  return r;
}

class Phase0 : public Phase {
 public:
  int index() const override { return 0; }
  std::string gate() const override { return "reference baseline"; }

  PhaseResult run(Context& ctx) override {
    nlohmann::json num;
    Phase0Report rep = check_model_dir(ctx.m.model_dir, ctx.opt.max_seq);
    num["checks"] = rep.to_json();
    if (!rep.pass) return model_checks_result(rep, num);
    std::vector<int> ids = first_prompt_ids(ctx);
    num["prompt_ids"] = ids;
    ctx.m.first_prompt_ids = ids;  // Makefile default for id-only models
    auto oracle = make_oracle_runner(ctx.cfg, ctx.weights(), ctx.opt.threads);
    Stopwatch sw;
    PrefillRecord rec = oracle->prefill(ids);
    ctx.runtime_s += sw.seconds();
    num["oracle_top1"] = rec.last.token;
    num["oracle_top5"] = top_json(rec.last.top);
    if (rec.last.non_finite()) {
      // A NaN/inf stored in a tensor is a damaged model file (bad input, naming the tensor,
      // as `check --scan-values` does); only finite weights make it the model's own failure.
      const Phase0Report scan = check_model_dir(ctx.m.model_dir, ctx.opt.max_seq, /*scan_values=*/true);
      if (!scan.pass) return model_checks_result(scan, num);
      return make_result(0, PhaseStatus::Fail, "the fp32 reference produced NaN/inf logits on the first prompt", num);
    }
    if (rec.last.top.size() >= 2 && rec.last.top.front().logit == rec.last.top.back().logit)
      return make_result(0, PhaseStatus::Fail, "degenerate logits: the top-5 are all equal", num);
    PhaseResult r;
    if (auto g = golden_records(ctx.ref)) {
      const auto& step0 = g->sequences.front().steps.front();
      num["golden_top1"] = step0.token;
      num["golden_top5"] = top_json(step0.top);
      bool in_top = std::any_of(step0.top.begin(), step0.top.end(),
                                [&](const TopEntry& t) { return t.id == rec.last.token; });
      if (!in_top)
        return make_result(0, PhaseStatus::Fail,
                           fmt::format("reference top-1 {} is not in the golden top-5 of '{}'",
                                       rec.last.token, g->sequences.front().name),
                           num);
      r = make_result(0, PhaseStatus::Pass,
                      fmt::format("{} tensors load; config consistent; reference top-1 {} ({} the golden's {})",
                                  rep.n_tensors, rec.last.token,
                                  rec.last.token == step0.token ? "equals" : "in the top-5 of", step0.token),
                      num);
    } else {
      r = make_result(0, PhaseStatus::Pass,
                      fmt::format("{} tensors load; config consistent; reference top-1 {} on the first prompt, logits finite",
                                  rep.n_tensors, rec.last.token),
                      num);
    }
    r.warnings = rep.warnings;
    if (!r.warnings.empty()) r.status = PhaseStatus::PassWithWarnings;
    return r;
  }
};

}  // namespace

std::unique_ptr<Phase> make_phase0_baseline() { return std::make_unique<Phase0>(); }

}  // namespace llmport::deploy
