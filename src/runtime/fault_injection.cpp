// FaultInjection::parse: "kind[@layer][=value]" (test-only faults; see engine.hpp).
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "llmport/engine.hpp"
#include "llmport/error.hpp"

namespace llmport {
namespace {

const std::pair<const char*, FaultInjection::Kind> kKinds[] = {
    {"none", FaultInjection::Kind::None},
    {"rope_interleaved", FaultInjection::Kind::RopeInterleaved},
    {"drop_qkv_bias", FaultInjection::Kind::DropQkvBias},
    {"skip_qk_norm", FaultInjection::Kind::SkipQkNorm},
    {"wrong_rope_theta", FaultInjection::Kind::WrongRopeTheta},
    {"kv_off_by_one", FaultInjection::Kind::KvOffByOne},
    {"logit_scale", FaultInjection::Kind::LogitScale},
    {"proj_scale", FaultInjection::Kind::ProjScale},
};

std::string kind_list() {
  std::string s;
  for (const auto& [n, k] : kKinds) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

bool takes_layer(FaultInjection::Kind k) {
  using K = FaultInjection::Kind;
  return k == K::RopeInterleaved || k == K::DropQkvBias || k == K::SkipQkNorm || k == K::WrongRopeTheta ||
         k == K::ProjScale;
}
bool takes_value(FaultInjection::Kind k) {
  using K = FaultInjection::Kind;
  return k == K::WrongRopeTheta || k == K::LogitScale || k == K::ProjScale;
}

// A part the spec names but leaves empty, or one its kind does not take, would be recorded
// as the planted fault while planting something else (or nothing).
void check_parts(FaultInjection::Kind k, const std::string& spec, const std::string& kind, bool has_layer,
                 const std::string& layer, bool has_value, const std::string& value) {
  if (has_layer && layer.empty()) throw UsageError("fault '" + spec + "': '@' without a layer index");
  if (has_value && value.empty()) throw UsageError("fault '" + spec + "': '=' without a value");
  if (has_layer && !takes_layer(k))
    throw UsageError("fault '" + spec + "': " + kind + " takes no layer (it applies to " +
                     (k == FaultInjection::Kind::None ? "nothing" : "every layer") + ")");
  if (has_value && !takes_value(k)) throw UsageError("fault '" + spec + "': " + kind + " takes no value");
}

}  // namespace

FaultInjection FaultInjection::parse(const std::string& spec) {
  FaultInjection f;
  f.spec = spec;
  std::string kind = spec, layer, value;
  const bool has_value = kind.find('=') != std::string::npos;
  if (has_value) {
    const auto eq = kind.find('=');
    value = kind.substr(eq + 1);
    kind.resize(eq);
  }
  const bool has_layer = kind.find('@') != std::string::npos;
  if (has_layer) {
    const auto at = kind.find('@');
    layer = kind.substr(at + 1);
    kind.resize(at);
  }
  bool found = false;
  for (const auto& [n, k] : kKinds)
    if (kind == n) {
      f.kind = k;
      found = true;
    }
  if (!found)
    throw UsageError("fault '" + spec + "': unknown kind '" + kind + "' (expected one of " +
                     kind_list() + ")");
  check_parts(f.kind, spec, kind, has_layer, layer, has_value, value);
  if (!layer.empty()) {
    char* end = nullptr;
    const long il = std::strtol(layer.c_str(), &end, 10);
    if (*end != '\0' || il < 0 || il > 1000000)
      throw UsageError("fault '" + spec + "': layer '" + layer + "' is not a layer index");
    f.layer = static_cast<int>(il);
  }
  if (!value.empty()) {
    char* end = nullptr;
    f.value = std::strtod(value.c_str(), &end);
    if (*end != '\0' || !(f.value > 0.0))
      throw UsageError("fault '" + spec + "': value '" + value + "' is not a positive number");
    // The value scales fp32 activations: "1e999" (strtod's inf), "inf" or one past float
    // would plant inf/NaN logits, and one below float's normal range a zero, neither the
    // scaling fault asked for.
    if (!std::isfinite(f.value) || f.value > std::numeric_limits<float>::max() ||
        f.value < std::numeric_limits<float>::min())
      throw UsageError(fmt::format("fault '{}': value '{}' is out of range (a positive number from {:g} to {:g})",
                                   spec, value, std::numeric_limits<float>::min(),
                                   std::numeric_limits<float>::max()));
  }
  if (f.kind == FaultInjection::Kind::None) f.spec.clear();
  return f;
}

}  // namespace llmport
