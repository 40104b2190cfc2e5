// The copy-direction check (llmport/verify.hpp, CopyDirection): does a reference's distance
// from an fp32 computation point where that computation's own rounding error points (an
// independent computation), or nowhere in particular (that computation's output, moved in
// its last bits)? Bit-identity (count_self_match) cannot see the second kind.
#include <algorithm>
#include <cmath>
#include <utility>

#include "llmport/verify.hpp"

namespace llmport {

namespace {

struct Sums {
  double df = 0, ff = 0, dd = 0;
  int64_t n = 0;
  void add(const Sums& o) {
    df += o.df;
    ff += o.ff;
    dd += o.dd;
    n += o.n;
  }
};

// Centred d and f of every step of `side`, against `fp64` (the same reference entries in
// the same order).
Sums sums_of(const SelfMatch& side, const SelfMatch& fp64) {
  Sums s;
  int begin = 0;
  for (const int end : side.step_end) {
    const int len = end - begin;
    if (len >= 2) {
      double md = 0, mf = 0;
      for (int i = begin; i < end; ++i) {
        md += static_cast<double>(side.reference[i]) - side.own[i];
        mf += static_cast<double>(fp64.own[i]) - side.own[i];
      }
      md /= len;
      mf /= len;
      for (int i = begin; i < end; ++i) {
        const double d = static_cast<double>(side.reference[i]) - side.own[i] - md;
        const double f = static_cast<double>(fp64.own[i]) - side.own[i] - mf;
        s.df += d * f;
        s.ff += f * f;
        s.dd += d * d;
      }
      s.n += len - 1;  // centring takes one degree of freedom per step
    }
    begin = end;
  }
  return s;
}

CopyDirection direction(const std::string& against, const std::string& sequence, const Sums& s) {
  CopyDirection c{against, sequence, s.n};
  c.beta = s.df / s.ff;
  const double residual = std::max(0.0, s.dd - 2 * c.beta * s.df + c.beta * c.beta * s.ff);
  c.se = std::sqrt(residual / static_cast<double>(std::max<int64_t>(s.n - 1, 1)) / s.ff);
  c.rms_d = std::sqrt(s.dd / static_cast<double>(s.n));
  c.rms_f = std::sqrt(s.ff / static_cast<double>(s.n));
  return c;
}

}  // namespace

bool CopyDirection::copied() const {
  return n >= kCopyDirectionMinEntries && std::isfinite(beta) && std::isfinite(se) &&
         beta + kCopyDirectionSigmas * se < kCopyDirectionBeta;
}

std::vector<CopyDirection> copy_directions(const std::vector<SelfMatch>& rows, const std::string& fp64) {
  std::vector<const SelfMatch*> exact;  // the F rows, one per sequence
  for (const SelfMatch& r : rows)
    if (r.against == fp64 && r.fp32) exact.push_back(&r);
  std::vector<CopyDirection> out;
  std::vector<std::pair<std::string, Sums>> totals;  // per computation, in first-seen order
  for (const SelfMatch& r : rows) {
    if (!r.fp32 || r.against == fp64 || r.own.empty()) continue;
    // The F row of the same sequence: same name and the same reference entries (names
    // may repeat in a file).
    const auto f = std::find_if(exact.begin(), exact.end(), [&](const SelfMatch* e) {
      return e->sequence == r.sequence && e->step_end == r.step_end && e->reference == r.reference;
    });
    if (f == exact.end()) continue;
    const Sums s = sums_of(r, **f);
    if (s.ff <= 0.0 || s.n == 0) continue;  // C computed F's bits: no direction to read
    out.push_back(direction(r.against, r.sequence, s));
    auto t = std::find_if(totals.begin(), totals.end(), [&](const auto& e) { return e.first == r.against; });
    if (t == totals.end()) t = totals.insert(totals.end(), {r.against, Sums{}});
    t->second.add(s);
  }
  for (const auto& [against, s] : totals) out.push_back(direction(against, "all", s));
  return out;
}

const CopyDirection* least_copy_direction(const std::vector<CopyDirection>& rows) {
  const CopyDirection* least = nullptr;
  auto upper = [](const CopyDirection& c) { return c.beta + kCopyDirectionSigmas * c.se; };
  for (const auto& c : rows)
    if (c.sequence == "all" && (!least || upper(c) < upper(*least))) least = &c;
  return least;
}

}  // namespace llmport
