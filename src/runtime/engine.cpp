// The one decoder forward pass (HF modeling_llama.py / modeling_qwen2.py /
// modeling_qwen3.py / modeling_mistral.py): every family difference is a ModelConfig field.
//   x = embed(ids)
//   per layer: h = rmsnorm(x); q,k,v = h W^T (+ bias); [q/k per-head rmsnorm]; RoPE(q, k);
//              x += o_proj(attention(q, K, V)); x += down(silu(gate(h2)) * up(h2)),
//              h2 = rmsnorm(x)
//   logits = rmsnorm(x) lm_head^T (lm_head = embedding when tied)
// Instrumentation is not here: it wraps the backend (engine_decorators.cpp).
#include <algorithm>
#include <cmath>
#include <string>

#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/quant_plan.hpp"
#include "llmport/registry.hpp"
#include "runtime/engine_impl.hpp"

namespace llmport {
namespace {

// Weight vector (norm weight or bias) widened to fp32 after rounding through `compute`. Its
// source pages are dropped after the copy: reading a few KiB can map a whole 2 MiB folio of
// the file, weights packed before it included, and they would stay resident beside the
// packed copy (qwen3-0.6b: 136 MiB, over the memory budget).
std::vector<float> load_vec(const TensorView& t, DType compute) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  to_f32(t.dtype, t.data, v.data(), v.size());
  round_through(compute, v.data(), v.data(), v.size());
  release_source_pages(t, 0, t.nbytes);
  return v;
}

// An optional fp32 vector as the pointer a kernel takes (null when the model has none).
const float* or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

}  // namespace

void Engine::Impl::load() {
  using R = TensorRole;
  auto& be = *backend;
  // Linears through the kernel selection (registry configs, kernel cache) when given.
  auto make_linear = [&](const TensorView& w) {
    return opt.kernels ? opt.kernels->make_linear(be, w, dtype) : be.make_linear(w, dtype);
  };
  // Block-quantized where the plan says so (llmport/quant_plan.hpp), else the compute dtype.
  auto make_projection = [&](const TensorView& w, TensorRole role) {
    const QuantType qt = planned_quant(role, w.shape, opt.quant, opt.quant_lm_head);
    if (qt == QuantType::None) return make_linear(w);
    std::optional<ActQuant> act = opt.quant_act;
    if (auto it = opt.quant_act_of_tensor.find(w.name); it != opt.quant_act_of_tensor.end()) act = it->second;
    auto lw = opt.kernels ? opt.kernels->make_quantized_linear(be, w, qt, act)
                          : be.make_quantized_linear(w, qt, act ? TileConfig{{kActTileKey, static_cast<int>(*act)}}
                                                                : TileConfig{});
    quant_acts[w.name] = act_of(lw->config);
    return lw;
  };
  embed = &weights.get(R::Embed);
  layers.resize(static_cast<std::size_t>(cfg.n_layers));
  for (int il = 0; il < cfg.n_layers; ++il) {
    Layer& L = layers[static_cast<std::size_t>(il)];
    L.wq = make_projection(weights.get(R::Wq, il), R::Wq);
    L.wk = make_projection(weights.get(R::Wk, il), R::Wk);
    L.wv = make_projection(weights.get(R::Wv, il), R::Wv);
    L.wo = make_projection(weights.get(R::Wo, il), R::Wo);
    L.w_gate = make_projection(weights.get(R::WGate, il), R::WGate);
    L.w_up = make_projection(weights.get(R::WUp, il), R::WUp);
    L.w_down = make_projection(weights.get(R::WDown, il), R::WDown);
    L.attn_norm = load_vec(weights.get(R::AttnNorm, il), dtype);
    L.ffn_norm = load_vec(weights.get(R::FfnNorm, il), dtype);
    if (cfg.qk_norm) {
      L.q_norm = load_vec(weights.get(R::QNorm, il), dtype);
      L.k_norm = load_vec(weights.get(R::KNorm, il), dtype);
    }
    if (cfg.qkv_bias) {
      L.bq = load_vec(weights.get(R::Bq, il), dtype);
      L.bk = load_vec(weights.get(R::Bk, il), dtype);
      L.bv = load_vec(weights.get(R::Bv, il), dtype);
    }
    if (cfg.o_bias) L.bo = load_vec(weights.get(R::Bo, il), dtype);
  }
  final_norm = load_vec(weights.get(R::FinalNorm), dtype);
  // Tied: logits = h . embed^T, even when a (differing) lm_head.weight is present (TRAPS #8).
  lm_head = make_projection(cfg.tie_word_embeddings ? *embed : weights.get(R::LmHead), R::LmHead);
  // Registry entries skipped as foreign and lookup misses: one stderr line each per run.
  if (opt.kernels) opt.kernels->announce();
  // The table is looked up in place, a row per new token: read in now, or each lookup on a
  // cold page cache is a disk read inside a decode step.
  if (!embeds_from_lm_head()) touch_source_pages(*embed);
  inv_freq = rope_inv_freq(cfg);
}

// Every linear weight (lm_head first): what a decode step streams.
std::vector<const LinearWeight*> Engine::Impl::linears() const {
  std::vector<const LinearWeight*> ws{lm_head.get()};
  for (const auto& L : layers)
    for (const auto* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      ws.push_back(w->get());
  return ws;
}

void Engine::Impl::ensure_rows(int n) {
  if (n <= rows) return;
  rows = n;
  const auto N = static_cast<std::size_t>(n);
  const auto emb = static_cast<std::size_t>(cfg.emb_dim);
  const auto hd = static_cast<std::size_t>(cfg.head_dim);
  x.resize(N * emb);
  h.resize(N * emb);
  o.resize(N * emb);
  q.resize(N * cfg.n_heads * hd);
  att.resize(N * cfg.n_heads * hd);
  k.resize(N * cfg.n_kv_heads * hd);
  v.resize(N * cfg.n_kv_heads * hd);
  gate.resize(N * cfg.hidden_dim);
  up.resize(N * cfg.hidden_dim);
}

void Engine::Impl::check_slot(int slot) const {
  if (slot < 0 || slot >= static_cast<int>(caches.size()))
    throw UsageError("slot " + std::to_string(slot) + " is outside 0.." +
                     std::to_string(caches.size() - 1));
}

// The rows of `items` (distinct slots), each at its slot's next positions. Throws UsageError
// before any work for a bad or repeated slot, an empty item or a context overflow.
Batch& Engine::Impl::make_batch(std::span<const BatchItem> items) {
  if (items.empty()) throw UsageError("forward: no sequences to process");
  Batch& b = batch;
  b.seqs.clear();
  b.tokens.clear();
  b.positions.clear();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const BatchItem& it = items[i];
    check_slot(it.slot);
    for (std::size_t j = 0; j < i; ++j)
      if (items[j].slot == it.slot)
        throw UsageError("forward_batch: slot " + std::to_string(it.slot) + " appears twice");
    const int ni = static_cast<int>(it.tokens.size());
    if (ni == 0) throw UsageError("forward: no tokens to process");
    const int p = pos[static_cast<std::size_t>(it.slot)];
    if (p + ni > max_seq)
      throw UsageError("context overflow: " + std::to_string(p) + " cached + " +
                       std::to_string(ni) + " new tokens exceed the KV-cache size of " +
                       std::to_string(max_seq) + " tokens");
    b.seqs.push_back({it.slot, b.rows(), ni, p});
    for (int t = 0; t < ni; ++t) {
      b.tokens.push_back(it.tokens[static_cast<std::size_t>(t)]);
      b.positions.push_back(p + t);
    }
  }
  return b;
}

// The decoder over one batch of rows (HF LlamaModel.forward + LlamaForCausalLM.lm_head).
// Returns logits [rows_out, vocab]: every row when all_logits (one sequence), else each
// sequence's last row, in sequence order.
std::vector<float> Engine::Impl::forward(const Batch& b, bool all_logits) {
  using R = OpRole;
  Backend& be = *top;
  const int n = b.rows(), emb = cfg.emb_dim, hd = cfg.head_dim;
  const int nh = cfg.n_heads, nkv = cfg.n_kv_heads, hidden = cfg.hidden_dim;
  const auto N = static_cast<std::size_t>(n);
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  const int* positions = b.positions.data();
  ensure_rows(n);
  embed_rows(b, be);  // x: [n, emb]
  for (int il = 0; il < cfg.n_layers; ++il) {
    const Layer& L = layers[static_cast<std::size_t>(il)];
    const auto at = [il](OpRole r) { return OpTag{il, r}; };
    be.rmsnorm(x.data(), L.attn_norm.data(), h.data(), n, emb, eps, at(R::AttnNorm));  // h: [n, emb]
    // q: [n, nh * hd]; k, v: [n, nkv * hd] (+ bias: Qwen2)
    const LinearCall qkv[3] = {{L.wq.get(), q.data(), or_null(L.bq), R::Q},
                               {L.wk.get(), k.data(), or_null(L.bk), R::K},
                               {L.wv.get(), v.data(), or_null(L.bv), R::V}};
    be.linear_group(qkv, h.data(), n, at(R::Qkv));
    if (cfg.qk_norm) {  // Qwen3: per-head RMSNorm on q and k before RoPE
      be.rmsnorm(q.data(), L.q_norm.data(), q.data(), n * nh, hd, eps, at(R::Q));  // [n * nh, hd]
      be.rmsnorm(k.data(), L.k_norm.data(), k.data(), n * nkv, hd, eps, at(R::K));
    }
    be.rope(q.data(), n, nh, hd, positions, inv_freq.data(), at(R::Q));  // [n, nh, hd]
    be.rope(k.data(), n, nkv, hd, positions, inv_freq.data(), at(R::K));  // [n, nkv, hd]
    attend(b, il, be);                                                    // att: [n, nh * hd]
    be.linear(*L.wo, att.data(), n, o.data(), or_null(L.bo), at(R::O));  // o: [n, emb]
    be.add(x.data(), o.data(), N * emb, at(R::AttnResidual));             // x += o
    be.rmsnorm(x.data(), L.ffn_norm.data(), h.data(), n, emb, eps, at(R::FfnNorm));
    // gate, up: [n, hidden]
    const LinearCall gate_up[2] = {{L.w_gate.get(), gate.data(), nullptr, R::GateUp},
                                   {L.w_up.get(), up.data(), nullptr, R::GateUp}};
    be.linear_group(gate_up, h.data(), n, at(R::GateUp));
    be.swiglu(gate.data(), up.data(), gate.data(), N * hidden, at(R::Swiglu));  // gate = silu(gate) * up
    be.linear(*L.w_down, gate.data(), n, o.data(), nullptr, at(R::Down));       // o: [n, emb]
    be.add(x.data(), o.data(), N * emb, at(R::FfnResidual));                    // x += o
  }
  std::vector<float> out = logits(b, all_logits, be);
  for (const Batch::Seq& s : b.seqs) pos[static_cast<std::size_t>(s.slot)] += s.n;
  return out;
}

// x[t] = embedding of token t, from the packed lm_head where embeds_from_lm_head (its file
// pages were dropped after packing), else from the checkpoint's table.
void Engine::Impl::embed_rows(const Batch& b, Backend& be) {
  const OpTag tag{-1, OpRole::Embedding};
  if (embeds_from_lm_head()) {
    check_token_ids(b.tokens.data(), b.rows(), cfg.vocab_size);
    be.gather_rows(*lm_head, b.tokens.data(), b.rows(), x.data(), tag);
  } else {
    be.embedding(*embed, dtype, b.tokens.data(), b.rows(), x.data(), tag);
  }
}

// Each sequence stores its new K/V rows in its own slot and attends over its own context.
void Engine::Impl::attend(const Batch& b, int il, Backend& be) {
  const int hd = cfg.head_dim, nh = cfg.n_heads, nkv = cfg.n_kv_heads;
  const std::size_t qdim = static_cast<std::size_t>(nh) * hd;
  const std::size_t kvdim = static_cast<std::size_t>(nkv) * hd;
  const OpTag tag{il, OpRole::Attention};
  for (const Batch::Seq& s : b.seqs) {
    KvCache& cache = *caches[static_cast<std::size_t>(s.slot)];
    const auto r = static_cast<std::size_t>(s.row0);
    be.kv_store({.k_cache = cache.k(il), .v_cache = cache.v(il), .kv_capacity = cache.capacity(),
                 .pos = s.pos0, .m = s.n, .n_kv_heads = nkv, .head_dim = hd,
                 .k = k.data() + r * kvdim, .v = v.data() + r * kvdim},
                tag);
    be.attention({.q = q.data() + r * qdim, .k_cache = cache.k(il), .v_cache = cache.v(il),
                  .kv_capacity = cache.capacity(), .start_pos = s.pos0, .m = s.n, .n_heads = nh,
                  .n_kv_heads = nkv, .head_dim = hd, .scale = static_cast<float>(cfg.attn_scale()),
                  .out = att.data() + r * qdim},
                 tag);
  }
}

// Final norm and lm_head over the rows whose logits are returned: one sequence's last row
// (or all rows), or each sequence's last row gathered so lm_head reads its weight once.
std::vector<float> Engine::Impl::logits(const Batch& b, bool all_logits, Backend& be) {
  const int n = b.rows(), emb = cfg.emb_dim;
  const float eps = static_cast<float>(cfg.rms_norm_eps);
  const auto E = static_cast<std::size_t>(emb);
  int first = 0, m = 0, out_first = 0;  // normed rows [first, first + m) of h; logits from out_first
  if (b.seqs.size() == 1) {
    first = (all_logits || norm_every_row) ? 0 : n - 1;
    m = n - first;
    out_first = all_logits ? 0 : n - 1;
    be.rmsnorm(x.data() + first * E, final_norm.data(), h.data() + first * E, m, emb, eps,
               {-1, OpRole::FinalNorm});
  } else {
    m = static_cast<int>(b.seqs.size());
    for (std::size_t i = 0; i < b.seqs.size(); ++i)  // o: [seqs, emb], each one's last row
      std::copy_n(x.data() + static_cast<std::size_t>(b.seqs[i].row0 + b.seqs[i].n - 1) * E, emb,
                  o.data() + i * E);
    be.rmsnorm(o.data(), final_norm.data(), h.data(), m, emb, eps, {-1, OpRole::FinalNorm});
  }
  const int rows_out = b.seqs.size() == 1 ? n - out_first : m;
  std::vector<float> out(static_cast<std::size_t>(rows_out) * cfg.vocab_size);  // [rows_out, vocab]
  be.linear(*lm_head, h.data() + static_cast<std::size_t>(out_first) * E, rows_out, out.data(),
            nullptr, {-1, OpRole::LmHead});
  return out;
}

}  // namespace llmport
