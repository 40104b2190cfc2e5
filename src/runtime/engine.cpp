// The one decoder forward pass (HF modeling_llama.py / modeling_qwen2.py /
// modeling_qwen3.py / modeling_mistral.py): every family difference is a ModelConfig field.
//   x = embed(ids)
//   per layer: h = rmsnorm(x); q,k,v = h W^T (+ bias); [q/k per-head rmsnorm]; RoPE(q, k);
//              x += o_proj(attention(q, K, V)); x += down(silu(gate(h2)) * up(h2)),
//              h2 = rmsnorm(x)
//   logits = rmsnorm(x) lm_head^T (lm_head = embedding when tied)
#include <algorithm>
#include <cmath>
#include <string>

#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/registry.hpp"
#include "runtime/kv_cache.hpp"
#include "runtime/profiler.hpp"

namespace llmport {
namespace {

// Weight vector (norm weight or bias) widened to fp32 after rounding through `compute`.
std::vector<float> load_vec(const TensorView& t, DType compute) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  to_f32(t.dtype, t.data, v.data(), v.size());
  round_through(compute, v.data(), v.data(), v.size());
  return v;
}

// The RopeInterleaved fault: pairs (2i, 2i+1) (GPT-J / llama2.c layout) instead of
// rotate-half. x: [m, n_heads, head_dim].
void rope_interleaved(float* x, int m, int n_heads, int head_dim, const int* positions,
                      const float* inv_freq) {
  for (int t = 0; t < m; ++t)
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (static_cast<std::size_t>(t) * n_heads + h) * head_dim;
      for (int i = 0; i < head_dim / 2; ++i) {
        const float angle = static_cast<float>(positions[t]) * inv_freq[i];
        const float c = std::cos(angle), s = std::sin(angle);
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * c - b * s;
        v[2 * i + 1] = b * c + a * s;
      }
    }
}

struct Layer {
  std::unique_ptr<LinearWeight> wq, wk, wv, wo, w_gate, w_up, w_down;
  std::vector<float> attn_norm, ffn_norm;  // [emb_dim]
  std::vector<float> q_norm, k_norm;       // [head_dim] (qk_norm only)
  std::vector<float> bq;                   // [n_heads * head_dim] (qkv_bias only)
  std::vector<float> bk, bv;               // [n_kv_heads * head_dim] (qkv_bias only)
  std::vector<float> bo;                   // [emb_dim] (o_bias only: Llama/Qwen3 attention_bias)
};

}  // namespace

DType checkpoint_dtype(const ModelConfig& cfg, const WeightStore& weights) {
  if (!cfg.torch_dtype.empty()) {
    try {
      return parse_dtype(cfg.torch_dtype);
    } catch (const UsageError&) {
      // An unusual torch_dtype string: fall back to what the file actually stores.
    }
  }
  return weights.stored_dtype();
}

struct Engine::Impl {
  ModelConfig cfg;
  const WeightStore& weights;
  EngineOptions opt;
  DType dtype;
  std::unique_ptr<Backend> backend;
  std::vector<Layer> layers;
  const TensorView* embed = nullptr;
  std::vector<float> final_norm;        // [emb_dim]
  std::unique_ptr<LinearWeight> lm_head;  // [vocab, emb_dim]
  std::vector<float> inv_freq;          // [head_dim / 2]
  std::vector<float> inv_freq_fault;    // [head_dim / 2] (WrongRopeTheta only)
  int max_seq = 0;
  std::vector<std::unique_ptr<KvCache>> caches;  // [n_slots]
  std::vector<int> pos;                          // [n_slots] positions held per slot
  ProbeFn probe;
  Profiler prof;

  // Scratch, grown to the largest n_tokens seen (decode reuses it: no per-token allocation).
  int rows = 0;
  std::vector<int> ids;        // [n] token ids of every item, concatenated
  std::vector<int> positions;  // [n]
  std::vector<float> x;        // [n, emb_dim] residual stream
  std::vector<float> h;        // [n, emb_dim] normed
  std::vector<float> q;        // [n, n_heads, head_dim]
  std::vector<float> k, v;     // [n, n_kv_heads, head_dim]
  std::vector<float> att;      // [n, n_heads, head_dim]
  std::vector<float> o;        // [n, emb_dim]
  std::vector<float> gate, up;  // [n, hidden_dim]

  Impl(const ModelConfig& c, const WeightStore& w, const EngineOptions& o_)
      : cfg(c), weights(w), opt(o_) {
    dtype = opt.dtype ? *opt.dtype : checkpoint_dtype(cfg, weights);
    backend = make_backend(opt.backend, opt.threads);
    if (opt.threads > 0) backend->set_threads(opt.threads);
    const int ctx = cfg.max_seq > 0 ? cfg.max_seq : cfg.max_position_embeddings;
    if (opt.max_seq > 0 && ctx > 0 && opt.max_seq > ctx)
      throw UsageError("KV-cache size " + std::to_string(opt.max_seq) +
                       " exceeds the model context of " + std::to_string(ctx) + " tokens");
    max_seq = opt.max_seq > 0 ? opt.max_seq : std::min(ctx > 0 ? ctx : EngineOptions::kDefaultMaxSeq,
                                                        EngineOptions::kDefaultMaxSeq);
    check_fault();
    load();
    if (opt.n_slots < 1)
      throw UsageError("n_slots must be at least 1 (got " + std::to_string(opt.n_slots) + ")");
    // One spare position so the KvOffByOne fault can write a position late without overflow.
    for (int i = 0; i < opt.n_slots; ++i)
      caches.push_back(
          std::make_unique<KvCache>(cfg.n_layers, cfg.n_kv_heads, max_seq + 1, cfg.head_dim));
    pos.assign(static_cast<std::size_t>(opt.n_slots), 0);
    if (opt.batch_invariant) backend->set_batch_invariant(true);
  }

  void check_fault() const {
    using K = FaultInjection::Kind;
    const auto& f = opt.fault;
    const bool layer_fault = f.kind == K::RopeInterleaved || f.kind == K::DropQkvBias ||
                             f.kind == K::SkipQkNorm || f.kind == K::WrongRopeTheta;
    if (layer_fault && (f.layer < 0 || f.layer >= cfg.n_layers))
      throw UsageError("fault layer " + std::to_string(f.layer) + " is outside 0.." +
                       std::to_string(cfg.n_layers - 1));
  }

  void load() {
    using R = TensorRole;
    auto& be = *backend;
    // Linears through the kernel selection (registry configs, kernel cache) when given.
    auto make_linear = [&](const TensorView& w) {
      return opt.kernels ? opt.kernels->make_linear(be, w, dtype) : be.make_linear(w, dtype);
    };
    embed = &weights.get(R::Embed);
    layers.resize(static_cast<std::size_t>(cfg.n_layers));
    for (int il = 0; il < cfg.n_layers; ++il) {
      Layer& L = layers[static_cast<std::size_t>(il)];
      L.wq = make_linear(weights.get(R::Wq, il));
      L.wk = make_linear(weights.get(R::Wk, il));
      L.wv = make_linear(weights.get(R::Wv, il));
      L.wo = make_linear(weights.get(R::Wo, il));
      L.w_gate = make_linear(weights.get(R::WGate, il));
      L.w_up = make_linear(weights.get(R::WUp, il));
      L.w_down = make_linear(weights.get(R::WDown, il));
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
    lm_head = make_linear(cfg.tie_word_embeddings ? *embed : weights.get(R::LmHead));
    // Registry entries skipped as foreign and lookup misses: one stderr line each per run.
    if (opt.kernels) opt.kernels->announce();
    inv_freq = rope_inv_freq(cfg);
    if (opt.fault.kind == FaultInjection::Kind::WrongRopeTheta) {
      ModelConfig wrong = cfg;
      wrong.rope_theta *= opt.fault.value > 0 ? opt.fault.value : 2.0;
      inv_freq_fault = rope_inv_freq(wrong);
    }
  }

  // Every linear weight (lm_head first): what a decode step streams.
  std::vector<const LinearWeight*> linears() const {
    std::vector<const LinearWeight*> ws{lm_head.get()};
    for (const auto& L : layers)
      for (const auto* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
        ws.push_back(w->get());
    return ws;
  }

  void ensure_rows(int n) {
    if (n <= rows) return;
    rows = n;
    const auto N = static_cast<std::size_t>(n);
    const auto emb = static_cast<std::size_t>(cfg.emb_dim);
    const auto hd = static_cast<std::size_t>(cfg.head_dim);
    positions.resize(N);
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

  void emit(const char* name, int il, const float* data, int n, int dim) const {
    if (probe) probe(name, il, data, n, dim);
  }

  void check_slot(int slot) const {
    if (slot < 0 || slot >= static_cast<int>(caches.size()))
      throw UsageError("slot " + std::to_string(slot) + " is outside 0.." +
                       std::to_string(caches.size() - 1));
  }

  // One forward over `items` (distinct slots). Returns the logits of every row when
  // all_logits (one item only), else of each item's last row: [items, vocab].
  std::vector<float> forward(std::span<const BatchItem> items, bool all_logits) {
    using K = FaultInjection::Kind;
    if (items.empty()) throw UsageError("forward: no sequences to process");
    int n = 0;
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
      n += ni;
    }
    ensure_rows(n);
    ids.resize(static_cast<std::size_t>(n));
    {
      int r = 0;
      for (const BatchItem& it : items) {
        const int p = pos[static_cast<std::size_t>(it.slot)];
        for (std::size_t t = 0; t < it.tokens.size(); ++t, ++r) {
          ids[static_cast<std::size_t>(r)] = it.tokens[t];
          positions[static_cast<std::size_t>(r)] = p + static_cast<int>(t);
        }
      }
    }
    const std::span<const int> tokens(ids);
    auto& be = *backend;
    const auto& f = opt.fault;
    const int emb = cfg.emb_dim, hd = cfg.head_dim, nh = cfg.n_heads, nkv = cfg.n_kv_heads;
    const int qdim = nh * hd, kvdim = nkv * hd;
    const auto N = static_cast<std::size_t>(n);
    const float eps = static_cast<float>(cfg.rms_norm_eps);
    const float scale = static_cast<float>(cfg.attn_scale());

    {
      Profiler::Scope s(prof, "embedding");
      if (cfg.tie_word_embeddings) {
        // The packed lm_head IS the table: no second [vocab, emb_dim] copy in memory (the
        // file pages were dropped after packing; reading them back would page them in).
        check_token_ids(tokens.data(), n, cfg.vocab_size);
        be.gather_rows(*lm_head, tokens.data(), n, x.data());
      } else {
        embedding_lookup(*embed, dtype, tokens.data(), n, x.data());
      }
    }
    emit("embedding", -1, x.data(), n, emb);

    for (int il = 0; il < cfg.n_layers; ++il) {
      Layer& L = layers[static_cast<std::size_t>(il)];
      const bool here = f.layer == il;
      {
        Profiler::Scope s(prof, "rmsnorm");
        be.rmsnorm(x.data(), L.attn_norm.data(), h.data(), n, emb, eps);
      }
      emit("attn_norm", il, h.data(), n, emb);
      {
        Profiler::Scope s(prof, "linear_qkv");
        const bool bias = cfg.qkv_bias && !(f.kind == K::DropQkvBias && here);
        const LinearCall qkv[3] = {{L.wq.get(), q.data(), bias ? L.bq.data() : nullptr},
                                   {L.wk.get(), k.data(), bias ? L.bk.data() : nullptr},
                                   {L.wv.get(), v.data(), bias ? L.bv.data() : nullptr}};
        be.linear_group(qkv, h.data(), n);
      }
      // Qwen3: per-head RMSNorm on q and k BEFORE RoPE (modeling_qwen3.py).
      if (cfg.qk_norm && !(f.kind == K::SkipQkNorm && here)) {
        Profiler::Scope s(prof, "qk_norm");
        be.rmsnorm(q.data(), L.q_norm.data(), q.data(), n * nh, hd, eps);
        be.rmsnorm(k.data(), L.k_norm.data(), k.data(), n * nkv, hd, eps);
      }
      {
        Profiler::Scope s(prof, "rope");
        const float* freq =
            (f.kind == K::WrongRopeTheta && here) ? inv_freq_fault.data() : inv_freq.data();
        if (f.kind == K::RopeInterleaved && here) {
          rope_interleaved(q.data(), n, nh, hd, positions.data(), freq);
          rope_interleaved(k.data(), n, nkv, hd, positions.data(), freq);
        } else {
          be.rope(q.data(), n, nh, hd, positions.data(), freq);
          be.rope(k.data(), n, nkv, hd, positions.data(), freq);
        }
      }
      emit("q", il, q.data(), n, qdim);
      emit("k", il, k.data(), n, kvdim);
      emit("v", il, v.data(), n, kvdim);
      {
        Profiler::Scope s(prof, "attention");
        // Each sequence attends over its own slot at its own context.
        std::size_t r = 0;
        for (const BatchItem& it : items) {
          KvCache& cache = *caches[static_cast<std::size_t>(it.slot)];
          const int p = pos[static_cast<std::size_t>(it.slot)];
          const int ni = static_cast<int>(it.tokens.size());
          const int write_pos = (f.kind == K::KvOffByOne && ni == 1 && p > 0) ? p + 1 : p;
          cache.write(il, write_pos, ni, k.data() + r * kvdim, v.data() + r * kvdim);
          AttentionArgs aa;
          aa.q = q.data() + r * qdim;
          aa.k_cache = cache.k(il);
          aa.v_cache = cache.v(il);
          aa.kv_capacity = cache.capacity();
          aa.start_pos = p;
          aa.m = ni;
          aa.n_heads = nh;
          aa.n_kv_heads = nkv;
          aa.head_dim = hd;
          aa.scale = scale;
          aa.out = att.data() + r * qdim;
          be.attention(aa);
          r += static_cast<std::size_t>(ni);
        }
      }
      {
        Profiler::Scope s(prof, "linear_o");
        be.linear(*L.wo, att.data(), n, o.data(), L.bo.empty() ? nullptr : L.bo.data());
      }
      emit("attn_out", il, o.data(), n, emb);
      {
        Profiler::Scope s(prof, "add");
        be.add(x.data(), o.data(), N * emb);
      }
      {
        Profiler::Scope s(prof, "rmsnorm");
        be.rmsnorm(x.data(), L.ffn_norm.data(), h.data(), n, emb, eps);
      }
      emit("ffn_norm", il, h.data(), n, emb);
      {
        Profiler::Scope s(prof, "linear_gate_up");
        const LinearCall gate_up[2] = {{L.w_gate.get(), gate.data(), nullptr},
                                       {L.w_up.get(), up.data(), nullptr}};
        be.linear_group(gate_up, h.data(), n);
      }
      {
        Profiler::Scope s(prof, "swiglu");
        be.swiglu(gate.data(), up.data(), gate.data(), N * cfg.hidden_dim);
      }
      {
        Profiler::Scope s(prof, "linear_down");
        be.linear(*L.w_down, gate.data(), n, o.data());
      }
      emit("ffn_out", il, o.data(), n, emb);
      {
        Profiler::Scope s(prof, "add");
        be.add(x.data(), o.data(), N * emb);
      }
      emit("layer_out", il, x.data(), n, emb);
    }

    std::vector<float> logits;
    if (items.size() == 1) {
      // Only the rows whose logits are wanted go through the norm and lm_head, unless a
      // probe wants the final normed hidden of every position.
      const int first = (all_logits || probe) ? 0 : n - 1;
      const int m = n - first;
      const std::size_t off = static_cast<std::size_t>(first) * emb;
      {
        Profiler::Scope s(prof, "rmsnorm");
        be.rmsnorm(x.data() + off, final_norm.data(), h.data() + off, m, emb, eps);
      }
      emit("final_norm", -1, h.data() + off, m, emb);
      const int out_first = all_logits ? 0 : n - 1;
      const int out_rows = n - out_first;
      logits.resize(static_cast<std::size_t>(out_rows) * cfg.vocab_size);  // [rows, vocab]
      Profiler::Scope s(prof, "lm_head");
      be.linear(*lm_head, h.data() + static_cast<std::size_t>(out_first) * emb, out_rows,
                logits.data());
    } else {
      // Each item's last row, gathered: the norm and lm_head run once over them.
      const int m = static_cast<int>(items.size());
      std::size_t r = 0;
      for (std::size_t i = 0; i < items.size(); ++i) {
        r += items[i].tokens.size();
        std::copy_n(x.data() + (r - 1) * emb, emb, o.data() + i * emb);
      }
      {
        Profiler::Scope s(prof, "rmsnorm");
        be.rmsnorm(o.data(), final_norm.data(), h.data(), m, emb, eps);
      }
      emit("final_norm", -1, h.data(), m, emb);
      logits.resize(static_cast<std::size_t>(m) * cfg.vocab_size);  // [items, vocab]
      Profiler::Scope s(prof, "lm_head");
      be.linear(*lm_head, h.data(), m, logits.data());
    }
    if (f.kind == K::LogitScale) {
      const float sc = static_cast<float>(f.value > 0 ? f.value : 1.25);
      for (float& l : logits) l *= sc;
    }
    for (const BatchItem& it : items)
      pos[static_cast<std::size_t>(it.slot)] += static_cast<int>(it.tokens.size());
    return logits;
  }
};

Engine::Engine(const ModelConfig& cfg, const WeightStore& weights, const EngineOptions& opt)
    : impl_(std::make_unique<Impl>(cfg, weights, opt)) {}
Engine::~Engine() = default;

std::vector<float> Engine::forward(std::span<const int> tokens, bool all_logits) {
  const BatchItem one{0, tokens};
  return impl_->forward(std::span<const BatchItem>(&one, 1), all_logits);
}
std::vector<float> Engine::forward_batch(std::span<const BatchItem> items) {
  return impl_->forward(items, false);
}
int Engine::n_slots() const { return static_cast<int>(impl_->caches.size()); }
int Engine::slot_pos(int slot) const {
  impl_->check_slot(slot);
  return impl_->pos[static_cast<std::size_t>(slot)];
}
void Engine::reset_slot(int slot) {
  impl_->check_slot(slot);
  impl_->pos[static_cast<std::size_t>(slot)] = 0;
  if (impl_->opt.fault.kind == FaultInjection::Kind::KvOffByOne)
    impl_->caches[static_cast<std::size_t>(slot)]->zero();
}
std::vector<float> Engine::prefill(std::span<const int> tokens) {
  reset();
  return forward(tokens);
}
std::vector<float> Engine::decode_step(int token) {
  const int t[1] = {token};
  return forward(std::span<const int>(t, 1));
}
void Engine::reset() {
  // With the KvOffByOne fault a stale entry would be read; keep the fault deterministic.
  reset_slot(0);
}
void Engine::truncate(int n) {
  if (n < 0) throw UsageError("truncate: negative position " + std::to_string(n));
  impl_->pos[0] = std::min(impl_->pos[0], n);
}
int Engine::pos() const { return impl_->pos[0]; }
int Engine::max_seq() const { return impl_->max_seq; }
void Engine::set_probe(ProbeFn fn) { impl_->probe = std::move(fn); }
void Engine::set_profiling(bool on) {
  impl_->prof.enable(on);
  if (on) impl_->prof.clear();
}
std::vector<OpProfile> Engine::profile() const { return impl_->prof.report(); }
const ModelConfig& Engine::config() const { return impl_->cfg; }
DType Engine::dtype() const { return impl_->dtype; }
Backend& Engine::backend() { return *impl_->backend; }
std::size_t Engine::weight_bytes() const {
  std::size_t b = 0;
  for (const LinearWeight* w : impl_->linears()) b += w->bytes();
  return b;
}
std::size_t Engine::kv_cache_bytes() const {
  std::size_t b = 0;
  for (const auto& c : impl_->caches) b += c->bytes();
  return b;
}
double Engine::weight_read_gbps(int passes) {
  return impl_->backend->read_bandwidth_gbps(impl_->linears(), passes);
}

}  // namespace llmport
