#include "verify/self_match_memo.hpp"

#include <map>
#include <mutex>

#include "llmport/architecture.hpp"
#include "llmport/file_io.hpp"
#include "llmport/kernel_cache.hpp"

namespace llmport::verify_detail {

namespace {
struct State {
  std::mutex mu;
  std::map<std::string, PathRun> runs;
  int64_t hits = 0, misses = 0;
};

State& state() {
  static State s;
  return s;
}

// A verify holds a few dozen runs; a long-lived process (a test binary, serve never calls
// verify) forgets them all past this many rather than grow without bound.
constexpr std::size_t kMaxRuns = 1024;
}  // namespace

SelfMatchMemo& SelfMatchMemo::process() {
  static SelfMatchMemo memo;
  return memo;
}

std::optional<PathRun> SelfMatchMemo::find(const std::string& key) {
  State& s = state();
  std::lock_guard lock(s.mu);
  const auto it = s.runs.find(key);
  if (it == s.runs.end()) {
    ++s.misses;
    return std::nullopt;
  }
  ++s.hits;
  return it->second;
}

void SelfMatchMemo::put(const std::string& key, PathRun run) {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (s.runs.size() >= kMaxRuns) s.runs.clear();
  s.runs[key] = std::move(run);
}

int64_t SelfMatchMemo::hits() const {
  std::lock_guard lock(state().mu);
  return state().hits;
}

int64_t SelfMatchMemo::misses() const {
  std::lock_guard lock(state().mu);
  return state().misses;
}

std::string model_content_key(const std::filesystem::path& config_json, const ModelConfig& cfg,
                              const WeightStore& weights) {
  const std::string config = read_text_file(config_json);
  std::string key = "config " + content_hash(config.data(), config.size());
  for (const TensorSpec& spec : expected_tensors(cfg)) {
    const TensorView& t = weights.get(spec.name);
    key += " | " + t.name + " " + std::string(dtype_name(t.dtype));
    for (int64_t d : t.shape) key += " " + std::to_string(d);
    key += " " + content_hash(t.data, t.nbytes);
  }
  return content_hash(key.data(), key.size());
}

}  // namespace llmport::verify_detail
