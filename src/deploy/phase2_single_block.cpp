// Phase 2, single block: layer 0 on the target vs the reference (verify's single-block
// gate: whole-tensor cosine >= 0.99 and relative error <= 0.141 (0.0040 for fp32 against
// fp32: single_block_rel_threshold), per-position min cosine
// by head_dim, no NaN, the embedding where both sides have it). Compared against the fp32
// oracle at every prompt position, and also against a golden reference's own layer-0
// output in every sequence that records one. A quantized deployment's
// oracle holds the same quantized projections, dequantized exactly, so this phase checks
// its kernels; its layer 0 against the unquantized golden is recorded but does not decide
// (quantization error is the KLD gate's to judge, in phases 3 and 7). A golden layer-0
// record that the golden's own next record contradicts BLOCKs the phase as bad input.
#include <fmt/format.h>

#include <optional>

#include "verify/golden_layers.hpp"
#include "deploy/phase.hpp"
#include "deploy/prompts.hpp"
#include "deploy/util.hpp"
#include "llmport/diagnosis.hpp"
#include "llmport/runner.hpp"

namespace llmport::deploy {
namespace {

class Phase2 : public Phase {
 public:
  int index() const override { return 2; }
  std::string gate() const override { return "single block"; }

  PhaseResult run(Context& ctx) override {
    // The golden prompt with the most positions (per-position minimum over more rows).
    const int seq = longest_golden_sequence(ctx.ref);
    auto golden = golden_records(ctx.ref);
    std::vector<int> ids = golden ? golden->sequences[static_cast<std::size_t>(seq)].prompt_ids : first_prompt_ids(ctx);
    Stopwatch sw;
    const EngineOptions target = ctx.target_engine_options(ConfigStage::Default);
    EngineRunner engine(ctx.cfg, ctx.weights(), target);
    ctx.compile_s += sw.seconds();  // weight conversion / packing
    sw = Stopwatch();
    PrefillRecord e = engine.prefill(ids, /*want_hidden=*/true);
    // The oracle mirrors the engine's q8 activation blocks too (make_oracle_runner).
    auto oracle = make_oracle_runner(ctx.cfg, ctx.weights(), ctx.opt.threads, target.quant, target.quant_lm_head,
                                     engine.engine().quant_acts());
    PrefillRecord o = oracle->prefill(ids, true);
    ctx.runtime_s += sw.seconds();
    nlohmann::json num;
    num["prompt_ids"] = ids;
    const bool quantized = target.quant != QuantType::None;
    // The relative-error budget follows the run's KL bound: an fp32 engine against an fp32
    // side is held to fp32's (a golden's layer 0 scaled by 1.1 passed the bf16 budget); a
    // quantized engine's activation blocks keep the bf16 one.
    const DType dt = engine.engine().dtype();
    auto bound_against = [&](const std::string& reference_dtype) {
      return quantized ? kKlBoundBf16 : kl_bound_for(dt, reference_dtype);
    };
    SingleBlockResult vs_oracle = single_block_gate(e.hidden, o.hidden, ctx.cfg.head_dim, bound_against("float32"));
    num["vs_oracle"] = vs_oracle.to_json();
    const std::string oracle_name =
        quantized ? fmt::format("fp32 oracle with the same {} weights", quant_name(target.quant)) : "fp32 oracle";
    std::string summary = fmt::format("vs {}: {}", oracle_name, vs_oracle.message);
    bool pass = vs_oracle.pass;
    std::string fail_reason = pass ? "" : "layer 0 vs the " + oracle_name + ": " + vs_oracle.message;
    if (golden) {
      // Every golden sequence that records hidden states, not only the longest: a golden
      // damaged in one case must not pass on another's.
      nlohmann::json per_seq = nlohmann::json::array();
      std::optional<SingleBlockResult> shown;
      std::string shown_name;
      for (std::size_t i = 0; i < golden->sequences.size(); ++i) {
        const auto& gs = golden->sequences[i];
        if (!gs.hidden.has_layers()) continue;
        const PrefillRecord ei = static_cast<int>(i) == seq ? e : engine.prefill(gs.prompt_ids, true);
        SingleBlockResult r =
            single_block_gate(ei.hidden, gs.hidden, ctx.cfg.head_dim, bound_against(golden->compute_dtype));
        nlohmann::json j = r.to_json();
        j["sequence"] = gs.name;
        per_seq.push_back(j);
        // The report shows the longest sequence unless another fails.
        if (!shown || (static_cast<int>(i) == seq && shown->pass) || (!r.pass && shown->pass)) {
          shown = r;
          shown_name = gs.name;
        }
      }
      if (shown) {
        num["vs_golden"] = per_seq;
        const std::string where = per_seq.size() > 1 ? fmt::format(" ({} sequences; {})", per_seq.size(), shown_name) : "";
        summary += fmt::format("; vs golden{}{}: {}", quantized ? " (unquantized, not gating)" : "", where, shown->message);
        if (!shown->pass && pass && !quantized) {
          pass = false;
          fail_reason = "layer 0 vs the golden" + where + ": " + shown->message;
          // The engine agreeing with the oracle, a golden layer-0 record that its own layer
          // 1 contradicts is the golden's damage, not the engine's fault (golden_layers.hpp).
          const verify_detail::GoldenLayers g = verify_detail::compare_target_golden_layers(
              golden, engine, false, ctx.cfg, ctx.weights(), ctx.opt.threads, oracle.get());
          if (!g.golden_damaged.empty()) {
            PhaseResult r = make_result(2, PhaseStatus::Blocked, "golden " + g.golden_damaged + " (" + fail_reason + ")", num);
            r.bad_input = true;
            return r;
          }
        }
      } else {
        num["vs_golden"] = "golden has no layer outputs";
      }
    }
    return make_result(2, pass ? PhaseStatus::Pass : PhaseStatus::Fail, pass ? summary : fail_reason, num);
  }
};

}  // namespace

std::unique_ptr<Phase> make_phase2_single_block() { return std::make_unique<Phase2>(); }

}  // namespace llmport::deploy
