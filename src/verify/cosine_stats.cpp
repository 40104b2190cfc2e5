// Per-position cosine statistics of two [n_rows, dim] arrays (diagnosis, single-block gate).
#include <algorithm>
#include <cmath>
#include <limits>

#include "llmport/verify.hpp"

namespace llmport {

double cosine(const float* a, const float* b, std::size_t n) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  if (std::isnan(ab) || std::isnan(aa) || std::isnan(bb) || std::isinf(aa) || std::isinf(bb))
    return std::nan("");
  if (aa == 0.0 && bb == 0.0) return 1.0;  // both zero: identical
  if (aa == 0.0 || bb == 0.0) return 0.0;
  return ab / std::sqrt(aa * bb);
}

namespace {
// ||num|| / ||ref|| from squared norms: inf where either is not finite (a NaN compares false
// everywhere, so a row NaN on both sides would read as "no error") or ref is 0 and num not.
double norm_ratio(double num2, double ref2) {
  const double inf = std::numeric_limits<double>::infinity();
  if (!(std::isfinite(num2) && std::isfinite(ref2))) return inf;
  return ref2 > 0 ? std::sqrt(num2 / ref2) : (num2 > 0 ? inf : 0.0);
}
}  // namespace

CosineStats compare_rows(const float* a, const float* b, int n_rows, int dim) {
  CosineStats s;
  s.n_rows = n_rows;
  if (n_rows <= 0 || dim <= 0) return s;
  const auto d = static_cast<std::size_t>(dim);
  std::vector<double> sorted;  // [n_rows] cosines, non-finite as -1
  double sum_abs = 0.0, sum_rel = 0.0, all_diff2 = 0.0, all_ref2 = 0.0;
  for (int r = 0; r < n_rows; ++r) {
    const float* ar = a + static_cast<std::size_t>(r) * d;
    const float* br = b + static_cast<std::size_t>(r) * d;
    const double c = cosine(ar, br, d);
    s.per_position.push_back(c);
    if (!std::isfinite(c)) s.has_nan = true;
    sorted.push_back(std::isfinite(c) ? c : -1.0);
    double diff2 = 0.0, ref2 = 0.0, got2 = 0.0;
    for (std::size_t i = 0; i < d; ++i) {
      const double e = std::fabs(static_cast<double>(ar[i]) - br[i]);
      if (!std::isfinite(e)) s.has_nan = true;
      s.max_abs = std::max(s.max_abs, std::isfinite(e) ? e : std::numeric_limits<double>::infinity());
      sum_abs += e;
      diff2 += e * e;
      ref2 += static_cast<double>(br[i]) * br[i];
      got2 += static_cast<double>(ar[i]) * ar[i];
    }
    const double dev = ref2 == 0.0 && got2 == 0.0 ? 0.0 : std::fabs(norm_ratio(got2, ref2) - 1.0);
    s.max_norm_dev = std::max(s.max_norm_dev, dev);
    const double rel = norm_ratio(diff2, ref2);
    s.max_rel = std::max(s.max_rel, rel);
    sum_rel += rel;
    all_diff2 += diff2;
    all_ref2 += ref2;
  }
  s.whole_rel = norm_ratio(all_diff2, all_ref2);
  const auto n = static_cast<std::size_t>(n_rows);
  s.mean_abs = sum_abs / static_cast<double>(n * d);
  s.mean_rel = sum_rel / static_cast<double>(n);
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  // Nearest-rank percentiles on the ascending order.
  s.p5 = sorted[static_cast<std::size_t>(std::floor(0.05 * static_cast<double>(n - 1)))];
  s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  double sum = 0.0;
  for (double c : sorted) sum += c;
  s.mean = sum / static_cast<double>(n);
  const double w = cosine(a, b, n * d);
  s.whole = std::isfinite(w) ? w : -1.0;
  if (!std::isfinite(w)) s.has_nan = true;
  return s;
}

}  // namespace llmport
