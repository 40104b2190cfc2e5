// The oracle's formulas with every sum and every intermediate value in fp64, each op's output
// rounded to fp32 once: what an exact machine computes given llmport's fp32 op boundaries.
// Its distance from an fp32 computation points along that computation's own rounding: the
// direction verify's copy-direction check reads (src/verify/copy_direction.cpp). Summation
// order is free here (fp64 sums of fp32 products, each product exact, are right to ~1e-16
// relative whatever the order), so the dot products are written for the compiler to
// vectorize.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/reference/reference_ops.hpp"

namespace llmport::reference::precise {

namespace {
double dot(const float* a, const float* b, int n) {
  double acc = 0.0;
#pragma omp simd reduction(+ : acc)
  for (int k = 0; k < n; ++k) acc += static_cast<double>(a[k]) * static_cast<double>(b[k]);
  return acc;
}
}  // namespace

void linear(const float* w, int n_out, int n_in, const float* x, int m, float* y, const float* bias,
            int threads) {
  // As reference::linear: no parallel region below ~1M multiply-adds, never more threads
  // than cores.
  const double macs = static_cast<double>(m) * n_out * n_in;
  const int nt = macs >= (1 << 20) ? std::clamp(threads, 1, std::max(1, omp_get_num_procs())) : 1;
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt) if (nt > 1)
  for (int i = 0; i < m; ++i)
    for (int o = 0; o < n_out; ++o) {
      const double acc = dot(x + static_cast<std::size_t>(i) * n_in, w + static_cast<std::size_t>(o) * n_in, n_in);
      y[static_cast<std::size_t>(i) * n_out + o] = static_cast<float>(bias ? acc + bias[o] : acc);
    }
}

void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps) {
  for (int i = 0; i < m; ++i) {
    const float* xi = x + static_cast<std::size_t>(i) * dim;
    float* yi = y + static_cast<std::size_t>(i) * dim;
    const double inv = 1.0 / std::sqrt(dot(xi, xi, dim) / dim + static_cast<double>(eps));
    for (int k = 0; k < dim; ++k) yi[k] = static_cast<float>(xi[k] * inv * w[k]);
  }
}

void rope(float* x, int m, int n_heads, int head_dim, const int* positions, const float* inv_freq) {
  const int half = head_dim / 2;
  for (int t = 0; t < m; ++t)
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;  // [head_dim]
      for (int i = 0; i < half; ++i) {
        // The angle stays the fp32 product HF and the oracle form (a convention, not a sum).
        const float angle = static_cast<float>(positions[t]) * inv_freq[i];
        const double c = std::cos(static_cast<double>(angle)), s = std::sin(static_cast<double>(angle));
        const double a = v[i], b = v[i + half];
        v[i] = static_cast<float>(a * c - b * s);
        v[i + half] = static_cast<float>(b * c + a * s);
      }
    }
}

void attention(const float* q, const float* k_cache, const float* v_cache, int max_seq, int start_pos, int m,
               int n_heads, int n_kv_heads, int head_dim, float scale, float* out) {
  const int group = n_heads / n_kv_heads;
  std::vector<double> p(static_cast<std::size_t>(start_pos + m));  // [n_ctx]
  std::vector<double> o(static_cast<std::size_t>(head_dim));
  for (int t = 0; t < m; ++t) {
    const int n_ctx = start_pos + t + 1;
    for (int h = 0; h < n_heads; ++h) {
      const int kvh = h / group;
      const float* qv = q + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;
      const float* kc = k_cache + static_cast<std::size_t>(kvh) * max_seq * head_dim;
      const float* vc = v_cache + static_cast<std::size_t>(kvh) * max_seq * head_dim;
      double mx = -INFINITY;
      for (int j = 0; j < n_ctx; ++j) {
        p[j] = dot(qv, kc + static_cast<std::size_t>(j) * head_dim, head_dim) * scale;
        mx = std::max(mx, p[j]);
      }
      double sum = 0.0;
      for (int j = 0; j < n_ctx; ++j) sum += (p[j] = std::exp(p[j] - mx));
      std::fill(o.begin(), o.end(), 0.0);
      for (int j = 0; j < n_ctx; ++j)
        for (int d = 0; d < head_dim; ++d) o[d] += p[j] / sum * vc[static_cast<std::size_t>(j) * head_dim + d];
      float* od = out + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;
      for (int d = 0; d < head_dim; ++d) od[d] = static_cast<float>(o[d]);
    }
  }
}

void swiglu(const float* gate, const float* up, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const double g = gate[i];
    out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * up[i]);
  }
}

}  // namespace llmport::reference::precise
