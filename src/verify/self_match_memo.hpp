#pragma once
// verify's self-match (verify_run.cpp) teacher-forces a dozen of llmport's own computations
// along every golden sequence: most of a golden verify's time, and a deploy runs verify in
// phases 3 to 6 on the same weights and golden. What one computation found along one
// prompt set is kept for the life of the process, keyed by everything it depends on: the
// bytes of the weights and of config.json, the golden content compared, and the
// computation (backend, level, dtype, quantization, path). Phase 7's evaluator is another
// process: it computes afresh.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "llmport/model_config.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"

namespace llmport::verify_detail {

/// One computation along every golden sequence of a prompt set.
struct PathRun {
  std::vector<SelfMatch> rows;             ///< one per golden sequence, in prompt order
  std::vector<std::vector<char>> copied;   ///< per golden sequence: [n_steps], 1 where step k's
                                           ///< compared top-k all count as this computation's
};

/// The process's memo of PathRuns. Thread-safe.
class SelfMatchMemo {
 public:
  static SelfMatchMemo& process();
  std::optional<PathRun> find(const std::string& key);
  void put(const std::string& key, PathRun run);
  /// Lookups answered from the memo / computed, since the process started (tests).
  int64_t hits() const;
  int64_t misses() const;
};

/// The model's part of a key: a hash of config.json's bytes and of every tensor the model
/// consumes (name, dtype, shape, bytes). Reads every weight byte once (~0.3 s for 2 GB).
/// Throws ConfigError naming config.json when it cannot be read.
std::string model_content_key(const std::filesystem::path& config_json, const ModelConfig& cfg,
                              const WeightStore& weights);

}  // namespace llmport::verify_detail
