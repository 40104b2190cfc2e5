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
  int64_t n = 0, far = 0;
  void add(const Sums& o) {
    df += o.df;
    ff += o.ff;
    dd += o.dd;
    n += o.n;
    far += o.far;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// d and f of every step of `side` against `fp64` (the same reference entries in the same
// order). Entries whose median-centred |d| exceeds kCopyDirectionFar times the larger of
// the row's rms(f) and their own |f| are far: counted, not fitted (a few large moves on a
// copy would otherwise inflate the slope's error until nothing is decided; copied()
// decides only when they are few; a median, so a far entry cannot drag its step's others
// along as a mean would).
Sums sums_of(const SelfMatch& side, const SelfMatch& fp64) {
  std::vector<double> d(side.own.size()), f(side.own.size());
  int begin = 0;
  double ff = 0;
  for (const int end : side.step_end) {
    std::vector<double> sd, sf;
    for (int i = begin; i < end; ++i) {
      sd.push_back(static_cast<double>(side.reference[i]) - side.own[i]);
      sf.push_back(static_cast<double>(fp64.own[i]) - side.own[i]);
    }
    if (end - begin >= 2) {
      const double md = median(sd), mf = median(sf);
      for (int i = begin; i < end; ++i) {
        d[i] = sd[i - begin] - md;
        f[i] = sf[i - begin] - mf;
        ff += f[i] * f[i];
      }
    }
    begin = end;
  }
  const double rms_f = side.own.empty() ? 0.0 : std::sqrt(ff / static_cast<double>(side.own.size()));
  // Far entries judged on the median-centred values; the fit re-centres each step on the
  // mean of its near entries (a median makes the middle entry's d exactly 0, which would
  // pull an honest slope toward 0 by about one entry in a step's five).
  Sums s;
  begin = 0;
  for (const int end : side.step_end) {
    if (end - begin >= 2) {
      std::vector<int> near;
      for (int i = begin; i < end; ++i) {
        if (std::abs(d[i]) > kCopyDirectionFar * std::max(rms_f, std::abs(f[i])))
          ++s.far;
        else
          near.push_back(i);
      }
      double md = 0, mf = 0;
      for (const int i : near) {
        md += d[i];
        mf += f[i];
      }
      md /= std::max<std::size_t>(near.size(), 1);
      mf /= std::max<std::size_t>(near.size(), 1);
      for (const int i : near) {
        s.df += (d[i] - md) * (f[i] - mf);
        s.ff += (f[i] - mf) * (f[i] - mf);
        s.dd += (d[i] - md) * (d[i] - md);
      }
      s.n += std::max<int64_t>(static_cast<int64_t>(near.size()) - 1, 0);  // one degree per step
    }
    begin = end;
  }
  return s;
}

// Entries fitted and a direction to read (C computing F's very bits gives f = 0).
bool readable(const Sums& s) { return s.n > 0 && s.ff > 0.0; }

CopyDirection direction(const std::string& against, const std::string& sequence, const Sums& s) {
  CopyDirection c{against, sequence, s.n};
  c.far = s.far;
  c.beta = s.df / s.ff;
  const double residual = std::max(0.0, s.dd - 2 * c.beta * s.df + c.beta * c.beta * s.ff);
  c.se = std::sqrt(residual / static_cast<double>(std::max<int64_t>(s.n - 1, 1)) / s.ff);
  c.rms_d = std::sqrt(s.dd / static_cast<double>(s.n));
  c.rms_f = std::sqrt(s.ff / static_cast<double>(s.n));
  return c;
}

}  // namespace

bool CopyDirection::decidable() const {
  const bool few_far = static_cast<double>(far) <= kCopyDirectionFarShare * static_cast<double>(n + far);
  return n >= kCopyDirectionMinEntries && few_far && std::isfinite(beta) && std::isfinite(se);
}

bool CopyDirection::copied() const { return decidable() && beta + kCopyDirectionSigmas * se < kCopyDirectionBeta; }

bool CopyDirection::independent() const {
  return decidable() && beta - kCopyDirectionShownSigmas * se > kCopyDirectionShownBeta;
}

namespace {

// The float32 mean of each pair of rows of one sequence over the same entries, as a forger
// averaging two runs writes it.
std::vector<SelfMatch> pair_means(const std::vector<SelfMatch>& rows, const std::string& fp64) {
  std::vector<SelfMatch> out;
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = i + 1; j < rows.size(); ++j) {
      const SelfMatch &a = rows[i], &b = rows[j];
      if (!a.fp32 || !b.fp32 || a.against == fp64 || b.against == fp64 || a.own.empty() || a.against == b.against ||
          a.sequence != b.sequence || a.step_end != b.step_end || a.reference != b.reference)
        continue;
      SelfMatch m{"mean of " + a.against + " and " + b.against, a.sequence, 0, 0};
      m.reference = a.reference;
      m.step_end = a.step_end;
      m.fp32 = true;
      for (std::size_t k = 0; k < a.own.size(); ++k) m.own.push_back(0.5f * (a.own[k] + b.own[k]));
      out.push_back(std::move(m));
    }
  return out;
}

}  // namespace

std::vector<CopyDirection> copy_directions(const std::vector<SelfMatch>& singles, const std::string& fp64) {
  std::vector<SelfMatch> rows = singles;
  const std::size_t n_singles = rows.size();
  for (SelfMatch& m : pair_means(singles, fp64)) rows.push_back(std::move(m));
  std::vector<const SelfMatch*> exact;  // the F rows, one per sequence
  for (const SelfMatch& r : rows)
    if (r.against == fp64 && r.fp32) exact.push_back(&r);
  std::vector<CopyDirection> out;
  std::vector<std::pair<std::string, Sums>> totals;  // per computation, in first-seen order
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SelfMatch& r = rows[i];
    if (!r.fp32 || r.against == fp64 || r.own.empty()) continue;
    // The F row of the same sequence: same name and the same reference entries (names
    // may repeat in a file).
    const auto f = std::find_if(exact.begin(), exact.end(), [&](const SelfMatch* e) {
      return e->sequence == r.sequence && e->step_end == r.step_end && e->reference == r.reference;
    });
    if (f == exact.end()) continue;
    const Sums s = sums_of(r, **f);
    auto t = std::find_if(totals.begin(), totals.end(), [&](const auto& e) { return e.first == r.against; });
    if (t == totals.end()) t = totals.insert(totals.end(), {r.against, Sums{}});
    t->second.add(s);
    if (!readable(s)) continue;
    CopyDirection c = direction(r.against, r.sequence, s);
    c.computations = i < n_singles ? 1 : 2;
    if (c.computations == 1 || c.copied()) out.push_back(c);
  }
  for (const auto& [against, s] : totals)
    if (readable(s)) {
      CopyDirection c = direction(against, "all", s);
      c.computations = against.rfind("mean of ", 0) == 0 ? 2 : 1;
      out.push_back(c);
    }
  return out;
}

CopyDirection pooled_without(const CopyDirection& all, const CopyDirection& one) {
  auto sums = [](const CopyDirection& c) {
    Sums s;
    s.n = c.n;
    s.far = c.far;
    s.ff = c.rms_f * c.rms_f * static_cast<double>(c.n);
    s.dd = c.rms_d * c.rms_d * static_cast<double>(c.n);
    s.df = c.beta * s.ff;
    return s;
  };
  const Sums a = sums(all), o = sums(one);
  Sums rest;
  rest.n = a.n - o.n;
  rest.far = a.far - o.far;
  rest.ff = a.ff - o.ff;
  rest.dd = a.dd - o.dd;
  rest.df = a.df - o.df;
  CopyDirection c{all.against, "all but " + one.sequence, 0};
  // Nothing left, or a difference of sums cancelled to noise: no pool to compare with.
  if (!readable(rest) || rest.dd < 0.0 || rest.n < kCopyDirectionMinEntries || !(rest.ff > 1e-9 * a.ff)) return c;
  c = direction(all.against, "all but " + one.sequence, rest);
  c.computations = all.computations;
  return c;
}

const CopyDirection* least_copy_direction(const std::vector<CopyDirection>& rows, bool pooled) {
  const CopyDirection* least = nullptr;
  auto upper = [](const CopyDirection& c) { return c.beta + kCopyDirectionSigmas * c.se; };
  for (const auto& c : rows)
    if (c.computations == 1 && (c.sequence == "all") == pooled && (!least || upper(c) < upper(*least))) least = &c;
  return least;
}

}  // namespace llmport
