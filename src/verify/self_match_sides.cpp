#include "verify/self_match_sides.hpp"

#include <set>

#include "llmport/architecture.hpp"

namespace llmport::verify_detail {

std::string side_key(const Backend& be, DType dtype, const WeightStore& weights) {
  std::string key = be.numerics_key(dtype);
  if (key.empty()) return key;
  // Every layer has layer 0's shapes, so its configs stand for all.
  using R = TensorRole;
  for (R role : {R::Wq, R::Wk, R::Wv, R::Wo, R::WGate, R::WUp, R::WDown, R::LmHead}) {
    const TensorView& w = weights.get(role, role == R::LmHead ? -1 : 0);
    if (w.shape.size() != 2) continue;
    const OpShape shape{{"m", 512}, {"n", static_cast<int>(w.shape[0])}, {"k", static_cast<int>(w.shape[1])}};
    key += " |";
    for (const auto& [name, v] : be.default_tiles(OpDesc{OpKind::Gemm, dtype, shape}))
      key += " " + name + "=" + std::to_string(v);
  }
  return key;
}

namespace {

bool lm_head_takes_fma(const Backend& be, DType dtype, const WeightStore& weights) {
  const TensorView& w = weights.get(TensorRole::LmHead, -1);
  if (dtype != DType::BF16 || w.shape.size() != 2) return false;
  const OpShape shape{{"m", 512}, {"n", static_cast<int>(w.shape[0])}, {"k", static_cast<int>(w.shape[1])}};
  const TileConfig cfg = be.default_tiles(OpDesc{OpKind::Gemm, dtype, shape});
  const auto fma = cfg.find("fma");
  return fma != cfg.end() && fma->second != 0;
}

}  // namespace

bool lm_head_takes_fma(const std::string& level, DType dtype, const WeightStore& weights, int threads) {
  return dtype == DType::BF16 && lm_head_takes_fma(*make_backend_at("cpu", level, threads), dtype, weights);
}

std::vector<SelfMatchSide> self_match_sides(const RunnerInfo& engine, bool engine_default_configs, int threads,
                                            const WeightStore& weights) {
  constexpr DType kDtypes[] = {DType::F32, DType::BF16, DType::F16};
  const bool engine_default = engine.backend == "cpu" && engine_default_configs;
  std::string engine_key;
  for (DType dt : kDtypes)
    if (engine_default && engine.dtype == dtype_name(dt))  // at most one dtype matches: one backend
      engine_key = side_key(*make_backend_at("cpu", engine.isa, threads), dt, weights);
  std::set<std::string> counted;
  std::vector<SelfMatchSide> out;
  const std::vector<std::string> levels = backend_levels("cpu");
  for (const std::string& level : levels) {
    const auto be = make_backend_at("cpu", level, threads);  // one per level: it starts a worker pool
    for (DType dt : kDtypes) {
      const std::string name(dtype_name(dt));
      const std::string key = side_key(*be, dt, weights);
      if (!key.empty() && !counted.insert(key).second) continue;
      const bool is_engine = engine_default && engine.dtype == name &&
                             (engine.isa == level || (!key.empty() && key == engine_key));
      out.push_back({"cpu " + name + " engine" + (level == levels.front() ? "" : " (" + level + ")"), level, dt,
                     is_engine, lm_head_takes_fma(*be, dt, weights), key});
    }
  }
  return out;
}

}  // namespace llmport::verify_detail
