// A model's costs and bounds on this machine's roofline (llmport/roofline.hpp). The
// measurements themselves run the cpu backend's loops: src/kernels/cpu/roofline.cpp.
#include "llmport/roofline.hpp"

namespace llmport {

ComputePeak measure_compute_peak(int threads, DType dtype, QuantType quant) {
  const bool q = quant != QuantType::None;
  return compute_peak(measure_compute_peaks(threads, !q && dtype == DType::BF16, q), dtype, quant);
}

ModelCost model_cost(const ModelConfig& cfg, DType dtype) {
  const double e = cfg.emb_dim, hd = cfg.head_dim;
  const double per_layer = e * cfg.n_heads * hd * 2 + e * cfg.n_kv_heads * hd * 2 +
                           3.0 * e * cfg.hidden_dim;
  const double head = static_cast<double>(cfg.vocab_size) * e;
  const double params = per_layer * cfg.n_layers + head;
  ModelCost c;
  c.weight_bytes = params * static_cast<double>(dtype_size(dtype));
  c.flops_per_token = 2.0 * params;
  c.layer_flops_per_token = 2.0 * per_layer * cfg.n_layers;
  c.lm_head_flops = 2.0 * head;
  c.attn_flops_per_pair = 4.0 * cfg.n_heads * hd * cfg.n_layers;
  c.kv_bytes_per_pos = 2.0 * cfg.n_layers * cfg.n_kv_heads * hd * 4.0;
  return c;
}

double decode_bound_tps(const Roofline& r, const ModelCost& c, int ctx) {
  const double bytes = c.weight_bytes + c.kv_bytes_per_pos * ctx;
  return bytes > 0 ? r.read_gbps * 1e9 / bytes : 0;
}

ComputePeak compute_peak(const Roofline& r, DType dtype, QuantType quant) {
  if (quant != QuantType::None) {
    if (r.int8_gops > 0 && r.int8_gops >= r.f32_gflops) return {r.int8_gops, "int8_dot"};
    return {r.f32_gflops, "fp32_fma"};
  }
  if (dtype == DType::BF16 && r.bf16_gflops > 0 && r.bf16_gflops >= r.f32_gflops)
    return {r.bf16_gflops, "bf16_dot"};
  return {r.f32_gflops, "fp32_fma"};
}

double prefill_flops(const ModelCost& c, int n) {
  if (n < 1) return 0;
  const double pairs = static_cast<double>(n) * (n + 1) / 2.0;
  return n * c.layer_flops_per_token + c.attn_flops_per_pair * pairs + c.lm_head_flops;
}

double prefill_bound_tps(const Roofline& r, const ModelCost& c, DType dtype, int n, QuantType quant) {
  const double flops = prefill_flops(c, n);
  return flops > 0 ? compute_peak(r, dtype, quant).gflops * 1e9 * n / flops : 0;
}

}  // namespace llmport
