#pragma once
// Engine::Impl, shared by the forward pass (engine.cpp) and the decorator stack that
// instruments it (engine_decorators.cpp): the model's packed weights, the KV-cache slots,
// the scratch buffers of one batch, and the backend the forward pass calls.
#include <memory>
#include <span>
#include <vector>

#include "llmport/engine.hpp"
#include "runtime/kv_cache.hpp"
#include "runtime/profiler.hpp"

namespace llmport {

/// One layer's weights as the backend holds them; vectors are fp32 after rounding through
/// the compute dtype, empty when the architecture has no such tensor.
struct Layer {
  std::unique_ptr<LinearWeight> wq, wk, wv, wo, w_gate, w_up, w_down;
  std::vector<float> attn_norm, ffn_norm;  // [emb_dim]
  std::vector<float> q_norm, k_norm;       // [head_dim] (qk_norm only)
  std::vector<float> bq;                   // [n_heads * head_dim] (qkv_bias only)
  std::vector<float> bk, bv;               // [n_kv_heads * head_dim] (qkv_bias only)
  std::vector<float> bo;                   // [emb_dim] (o_bias only: Llama/Qwen3 attention_bias)
};

/// One forward's rows: every sequence's new tokens, concatenated, each with its position.
struct Batch {
  /// One sequence's rows [row0, row0 + n) at positions pos0.. in KV slot `slot`.
  struct Seq {
    int slot = 0;
    int row0 = 0;
    int n = 0;
    int pos0 = 0;
  };
  std::vector<Seq> seqs;
  std::vector<int> tokens;     // [rows]
  std::vector<int> positions;  // [rows]
  int rows() const { return static_cast<int>(tokens.size()); }
};

struct Engine::Impl {
  ModelConfig cfg;
  const WeightStore& weights;
  EngineOptions opt;
  DType dtype;
  std::unique_ptr<Backend> backend;  // the real backend
  // Decorators stacked over `backend` (innermost first); `top` is what forward() calls.
  std::vector<std::unique_ptr<Backend>> decorators;
  Backend* top = nullptr;
  std::vector<Layer> layers;
  const TensorView* embed = nullptr;
  std::vector<float> final_norm;          // [emb_dim]
  std::unique_ptr<LinearWeight> lm_head;  // [vocab, emb_dim]
  std::map<std::string, ActQuant> quant_acts;  // Engine::quant_acts()
  std::vector<float> inv_freq;            // [head_dim / 2]
  int max_seq = 0;
  std::vector<std::unique_ptr<KvCache>> caches;  // [n_slots]
  std::vector<int> pos;                          // [n_slots] positions held per slot
  ProbeFn probe;
  Profiler prof;
  // The final norm runs over every row, not only those whose logits are returned (a probe
  // reports the final hidden state of every position).
  bool norm_every_row = false;

  // Scratch, grown to the largest batch seen (decode reuses it: no per-token allocation).
  int rows = 0;
  Batch batch;                  // the rows of the current forward
  std::vector<float> x;         // [rows, emb_dim] residual stream
  std::vector<float> h;         // [rows, emb_dim] normed
  std::vector<float> q;         // [rows, n_heads * head_dim]
  std::vector<float> k, v;      // [rows, n_kv_heads * head_dim]
  std::vector<float> att;       // [rows, n_heads * head_dim]
  std::vector<float> o;         // [rows, emb_dim]
  std::vector<float> gate, up;  // [rows, hidden_dim]

  Impl(const ModelConfig& c, const WeightStore& w, const EngineOptions& o_);
  void load();
  /// Rebuilds `decorators` and `top` from the options and the current instrumentation.
  void stack_decorators();
  std::vector<const LinearWeight*> linears() const;
  void ensure_rows(int n);
  void check_slot(int slot) const;
  /// Fills `batch` (cleared first; its capacity is kept, so a decode step allocates nothing).
  Batch& make_batch(std::span<const BatchItem> items);
  std::vector<float> forward(const Batch& b, bool all_logits);
  void embed_rows(const Batch& b, Backend& be);
  // Tied models gather embeddings from the packed lm_head (no second [vocab, emb_dim] table
  // in memory), unless lm_head is quantized: embeddings then stay exact, from the table.
  bool embeds_from_lm_head() const { return cfg.tie_word_embeddings && lm_head->quant == QuantType::None; }
  void attend(const Batch& b, int il, Backend& be);
  std::vector<float> logits(const Batch& b, bool all_logits, Backend& be);
};

}  // namespace llmport
