// Sampling with HF generate's processor order: repetition penalty, temperature, top-k,
// top-p, min-p; then a draw from the softmax of what is left.
#include "llmport/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_set>

#include "llmport/error.hpp"

namespace llmport {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// Descending by value, ties to the smaller id; NaN ranks below every number so the order
// stays a strict weak order and argmax, top-k and the sampler agree on the best id.
bool before(const std::pair<float, int>& a, const std::pair<float, int>& b) {
  const bool an = std::isnan(a.first), bn = std::isnan(b.first);
  if (an != bn) return bn;
  if (!an && a.first != b.first) return a.first > b.first;
  return a.second < b.second;
}

}  // namespace

void SamplingParams::validate() const {
  if (top_k < 0) throw UsageError("top-k must be >= 0 (0 disables it), got " + std::to_string(top_k));
  if (!(top_p > 0.0 && top_p <= 1.0))
    throw UsageError("top-p must be in (0, 1], got " + std::to_string(top_p));
  if (!(min_p >= 0.0 && min_p <= 1.0))
    throw UsageError("min-p must be in [0, 1], got " + std::to_string(min_p));
  if (!(repetition_penalty > 0.0))
    throw UsageError("repeat-penalty must be > 0, got " + std::to_string(repetition_penalty));
  if (!std::isfinite(temperature) || temperature < 0.0)
    throw UsageError("temperature must be a finite number >= 0, got " + std::to_string(temperature));
}

int argmax(std::span<const float> logits) {
  // Same order as top_k_logits (NaN last, ties to the smaller id): argmax == top_k_logits(.., 1).
  int best = 0;
  for (std::size_t i = 1; i < logits.size(); ++i)
    if (before({logits[i], static_cast<int>(i)}, {logits[static_cast<std::size_t>(best)], best}))
      best = static_cast<int>(i);
  return best;
}

std::vector<std::pair<int, float>> top_k_logits(std::span<const float> logits, int k) {
  std::vector<std::pair<float, int>> c(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) c[i] = {logits[i], static_cast<int>(i)};
  const std::size_t kk = std::min<std::size_t>(static_cast<std::size_t>(std::max(k, 0)), c.size());
  std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(kk), c.end(), before);
  std::vector<std::pair<int, float>> out;
  for (std::size_t i = 0; i < kk; ++i) out.emplace_back(c[i].second, c[i].first);
  return out;
}

Sampler::Sampler(const SamplingParams& p) : p_(p) {
  p_.validate();
  uint64_t x = p.seed;
  for (auto& s : s_) s = splitmix64(x);
}

double Sampler::uniform() {
  // xoshiro256** (Blackman & Vigna).
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return static_cast<double>(result >> 11) * 0x1.0p-53;
}

int Sampler::sample(std::span<const float> logits, std::span<const int> history) {
  if (logits.empty()) throw UsageError("sample: empty logits");
  work_.assign(logits.begin(), logits.end());
  if (p_.repetition_penalty != 1.0) {
    const float r = static_cast<float>(p_.repetition_penalty);
    std::unordered_set<int> seen;
    for (int id : history) {
      if (id < 0 || static_cast<std::size_t>(id) >= work_.size() || !seen.insert(id).second) continue;
      float& l = work_[static_cast<std::size_t>(id)];
      l = l < 0 ? l * r : l / r;
    }
  }
  if (p_.temperature <= 0.0) return argmax(work_);

  // Candidates in logit order (the same order as logit / T for any T > 0); the temperature
  // is applied in double to (logit - max), so a tiny T tends to greedy and a huge one to
  // uniform instead of overflowing float (1 / 1e-45 is inf in float: inf - inf = NaN).
  cand_.resize(work_.size());
  for (std::size_t i = 0; i < work_.size(); ++i) cand_[i] = {work_[i], static_cast<int>(i)};
  std::sort(cand_.begin(), cand_.end(), before);

  std::size_t keep = cand_.size();
  if (p_.top_k > 0 && static_cast<std::size_t>(p_.top_k) < keep) {
    // HF keeps every token whose logit ties the k-th largest.
    const float kth = cand_[static_cast<std::size_t>(p_.top_k) - 1].first;
    keep = static_cast<std::size_t>(p_.top_k);
    while (keep < cand_.size() && cand_[keep].first == kth) ++keep;
  }
  // Probabilities of the kept candidates (max-subtracted softmax in double).
  std::vector<double> prob(keep);
  const double mx = cand_[0].first;
  double sum = 0;
  for (std::size_t i = 0; i < keep; ++i)
    sum += prob[i] = std::exp((static_cast<double>(cand_[i].first) - mx) / p_.temperature);
  for (auto& pr : prob) pr /= sum;
  if (p_.top_p < 1.0) {
    // Smallest prefix whose mass reaches top_p (at least one token).
    double acc = 0;
    std::size_t n = 0;
    while (n < keep) {
      acc += prob[n++];
      if (acc >= p_.top_p) break;
    }
    keep = std::max<std::size_t>(n, 1);
  }
  if (p_.min_p > 0.0) {
    const double thr = p_.min_p * prob[0];
    std::size_t n = 1;
    while (n < keep && prob[n] >= thr) ++n;
    keep = n;
  }
  double total = 0;
  for (std::size_t i = 0; i < keep; ++i) total += prob[i];
  const double u = uniform() * total;
  double acc = 0;
  for (std::size_t i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

}  // namespace llmport
