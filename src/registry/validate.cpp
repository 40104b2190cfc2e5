// `kernels validate` / deploy phase 1: every (kernel, shape, tile config) the engine
// dispatches vs the fp32 reference kernels fed the same inputs, every output element,
// tolerances from tolerance(op, dtype, k) (llmport/tolerance.hpp).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

#include "llmport/error.hpp"
#include "llmport/op_harness.hpp"
#include "llmport/quant_plan.hpp"
#include "llmport/registry.hpp"
#include "llmport/tolerance.hpp"
#include "registry/kernel_check.hpp"

namespace llmport {

namespace {

/// a * b as an int, or UsageError naming the product (64-bit math: no overflow).
int checked_mul(long long a, long long b, const char* what) {
  const long long r = a * b;
  if (r > 2147483647LL)
    throw UsageError(std::string("kernels validate: ") + what + " = " + std::to_string(a) + " x " +
                     std::to_string(b) + " does not fit a 32-bit dimension (config.json sizes too large)");
  return static_cast<int>(r);
}

/// Bytes of the buffers a kernel check allocates (inputs, outputs, the reference copy), roughly.
long double check_bytes(const std::string& kernel, const KernelShape& s) {
  auto g = [&](const char* k) { return static_cast<long double>(s.count(k) ? s.at(k) : 1); };
  if (kernel == "gemm") return 4.0L * 3 * (g("n") * g("k") + g("m") * g("k") + g("m") * g("n"));
  if (kernel == "gemv") return 4.0L * 3 * (g("n") * g("k") + g("k") + g("n"));
  long double n = 1;
  for (const auto& [k, v] : s) n *= static_cast<long double>(v);
  return 4.0L * 4 * n;
}

// Every check allocates its buffers: a shape that needs more than the machine's memory is
// refused before the first allocation.
void check_fits_memory(const ModelConfig& cfg, int prefill_m) {
  const long double mem = static_cast<long double>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
  for (const auto& [kernel, shape] : model_kernel_shapes(cfg, prefill_m))
    if (mem > 0 && check_bytes(kernel, shape) > mem / 2)
      throw UsageError("kernels validate: " + kernel + " " + shape_string(shape) + " needs about " +
                       std::to_string(static_cast<long long>(check_bytes(kernel, shape) / 1e9L)) +
                       " GB, more than half of this machine's " + std::to_string(static_cast<long long>(mem / 1e9L)) +
                       " GB (config.json sizes too large)");
}

}  // namespace

std::vector<std::pair<std::string, KernelShape>> model_kernel_shapes(const ModelConfig& cfg,
                                                                     int prefill_m) {
  const int P = std::max(1, prefill_m);
  const int hd = cfg.head_dim, nh = cfg.n_heads, nkv = cfg.n_kv_heads, e = cfg.emb_dim;
  const int q_dim = checked_mul(nh, hd, "num_attention_heads * head_dim");
  const int kv_dim = checked_mul(nkv, hd, "num_key_value_heads * head_dim");
  checked_mul(P, nh, "prefill rows * num_attention_heads");
  checked_mul(P, cfg.hidden_dim, "prefill rows * intermediate_size");
  checked_mul(P, e, "prefill rows * hidden_size");
  std::vector<std::pair<std::string, KernelShape>> out;
  std::set<std::pair<int, int>> linears = {{q_dim, e}, {kv_dim, e}, {e, q_dim},
                                           {cfg.hidden_dim, e}, {e, cfg.hidden_dim},
                                           {cfg.vocab_size, e}};
  for (const auto& [n, k] : linears) {
    out.push_back({"gemm", {{"m", P}, {"n", n}, {"k", k}}});
    out.push_back({"gemv", {{"n", n}, {"k", k}}});
  }
  for (int m : {P, 1}) {
    out.push_back({"rmsnorm", {{"m", m}, {"dim", e}}});
    if (cfg.qk_norm) out.push_back({"rmsnorm", {{"m", m * nh}, {"dim", hd}}});
    out.push_back({"rope", {{"m", m}, {"n_heads", nh}, {"head_dim", hd}}});
    if (nkv != nh) out.push_back({"rope", {{"m", m}, {"n_heads", nkv}, {"head_dim", hd}}});
    out.push_back({"swiglu", {{"n", m * cfg.hidden_dim}}});
    out.push_back({"add", {{"n", m * e}}});
  }
  out.push_back({"attention_prefill", {{"m", P}, {"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}}});
  out.push_back({"attention_decode", {{"ctx", P}, {"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}}});
  return out;
}

namespace {

// The cases of one model: what the engine dispatches, in the order of the report. Linear
// and gather cases get their tile config per backend (case_for).
class ModelCases {
 public:
  ModelCases(const ModelConfig& cfg, DType dtype, int prefill_m, QuantType quant, QuantType lm_head)
      : cfg_(cfg), dt_(dtype), quant_(quant), lm_head_(lm_head) {
    P_ = std::max(1, prefill_m);
    // A second prefill m: small and odd (tails of the mr/mc blocking); P itself when tiny.
    m2_ = P_ > 8 ? 7 : std::max(1, P_ - (P_ % 2 == 0 ? 1 : 0));
    if (m2_ == P_ && P_ > 2) m2_ = P_ - 2;
  }

  std::vector<OpCase> build() {
    const int hd = cfg_.head_dim, nh = cfg_.n_heads, nkv = cfg_.n_kv_heads, e = cfg_.emb_dim;
    const int hid = cfg_.hidden_dim;
    // Weights (n, k, seed): q 11, k 12, v 13, o 14, gate 15, up 16, down 17, lm_head 18.
    // Block-quantized by the one rule (llmport/quant_plan.hpp) when the model is; lm_head
    // only with --quantize-lm-head (its own format).
    using R = TensorRole;
    const Lin wq{nh * hd, e, 11, q_of(R::Wq, e)}, wo{e, nh * hd, 14, q_of(R::Wo, nh * hd)},
        wg{hid, e, 15, q_of(R::WGate, e)}, wd{e, hid, 17, q_of(R::WDown, hid)},
        wl{cfg_.vocab_size, e, 18, head_quant()};
    const Lin wk{nkv * hd, e, 12, q_of(R::Wk, e)};
    std::vector<int> ms = {P_};
    if (m2_ != P_) ms.push_back(m2_);
    ms.push_back(1);
    // Single linears (o_proj with its bias when the model has one, down, lm_head).
    for (int m : ms) {
      linear("o_proj", wo, m, cfg_.o_bias);
      linear("down_proj", wd, m, false);
      // lm_head: the engine runs it on the rows whose logits it returns; a prefill of
      // every row only when the product stays small (bounded cost of the scalar reference).
      if (m == 1 || m == m2_ || static_cast<double>(m) * wl.n * wl.k <= 64e6) linear("lm_head", wl, m, false);
      // The fused groups as the engine calls them (one linear_group per layer each).
      group("linear_group_qkv", {wq.n, nkv * hd, nkv * hd}, e, 11, m, cfg_.qkv_bias, wq.quant);
      group("linear_group_gate_up", {hid, hid}, e, 15, m, false, wg.quant);
    }
    // Each q/k/v/gate/up shape also on its own (gemm/gemv, e.g. a sweep's measurements).
    for (const Lin* l : {&wq, &wk, &wg})
      for (int m : ms) linear("", *l, m, false);
    // The token embeddings as Engine::embed_rows reads them: rows of the packed lm_head when
    // tied and lm_head is in the base dtype, else the original table (Backend::embedding),
    // so a quantized lm_head never rounds an embedding.
    if (gathers_from_lm_head()) gather(wl);
    else embedding(e);
    for (int m : {P_, 1}) {
      add({OpKind::RmsNorm, dt_, {{"m", m}, {"dim", e}}}, 21);
      if (cfg_.qk_norm) add({OpKind::RmsNorm, dt_, {{"m", m * nh}, {"dim", hd}}}, 22);
      rope(m, nh, hd, m == 1 ? P_ : 0);
      if (nkv != nh) rope(m, nkv, hd, m == 1 ? P_ : 0);
      add({OpKind::Swiglu, dt_, {{"n", m * hid}}}, 51);
      add({OpKind::Add, dt_, {{"n", m * e}}}, 51);
    }
    // Attention: prefill from position 0 and after a cached prefix; decode at two contexts.
    attention(P_, 0, nh, nkv, hd);
    if (P_ > 2) attention(m2_ < P_ ? m2_ : 1, P_ - (m2_ < P_ ? m2_ : 1), nh, nkv, hd);
    attention(1, P_ - 1, nh, nkv, hd);
    attention(1, P_ + P_ / 2 + 1, nh, nkv, hd);
    return std::move(cases_);
  }

  /// The op kinds the engine runs for this model (each needs a case on every backend).
  std::vector<OpKind> needed() const {
    std::vector<OpKind> k = {OpKind::Gemm,    OpKind::Gemv,   OpKind::LinearGroup,      OpKind::RmsNorm,
                             OpKind::Rope,    OpKind::Swiglu, OpKind::Add,              OpKind::AttentionPrefill,
                             OpKind::AttentionDecode};
    k.push_back(gathers_from_lm_head() ? OpKind::GatherRows : OpKind::Embedding);
    return k;
  }

  /// lm_head's block format by the plan's rule (None: the base dtype).
  QuantType head_quant() const {
    return planned_quant(TensorRole::LmHead, {cfg_.vocab_size, cfg_.emb_dim}, quant_, lm_head_);
  }

 private:
  struct Lin {
    int n, k;
    uint32_t seed;
    QuantType quant;
  };

  QuantType q_of(TensorRole role, int k) const {
    return planned_quant(role, {1, k}, quant_, QuantType::None);
  }

  // Engine::Impl::embed_rows' choice: gather_rows off the packed lm_head only when tied and
  // lm_head keeps the base dtype's panels.
  bool gathers_from_lm_head() const { return cfg_.tie_word_embeddings && head_quant() == QuantType::None; }

  void add(OpCase c, uint32_t seed) {
    c.seed = seed;
    cases_.push_back(std::move(c));
  }

  void linear(const std::string& path, const Lin& l, int m, bool bias) {
    OpCase c{m == 1 ? OpKind::Gemv : OpKind::Gemm, l.quant != QuantType::None ? DType::F32 : dt_};
    c.quant = l.quant;
    c.shape = m == 1 ? OpShape{{"n", l.n}, {"k", l.k}} : OpShape{{"m", m}, {"n", l.n}, {"k", l.k}};
    c.bias = bias;
    c.path = path;
    add(std::move(c), l.seed);
  }

  void group(const std::string& label, const std::vector<int>& ns, int k, uint32_t seed, int m, bool bias,
             QuantType q) {
    OpCase c{OpKind::LinearGroup, q != QuantType::None ? DType::F32 : dt_, {{"m", m}, {"k", k}}};
    c.quant = q;
    for (std::size_t i = 0; i < ns.size(); ++i) c.shape["n" + std::to_string(i)] = ns[i];
    c.bias = bias;
    c.label = label;
    add(std::move(c), seed);
  }

  // The tied lm_head's rows as embeddings: every panel boundary and random ids, each row in
  // full, against the reference's copy of the same rounded values.
  void gather(const Lin& l) {
    add({OpKind::GatherRows, dt_, {{"m", rows_of_table(l.n)}, {"n", l.n}, {"k", l.k}}}, l.seed);
  }

  // The embedding table's rows through the compute dtype: the same ids (both ends, panel
  // boundaries, random) as the gather, each row in full.
  void embedding(int dim) {
    const int vocab = cfg_.vocab_size;
    add({OpKind::Embedding, dt_, {{"m", rows_of_table(vocab)}, {"vocab", vocab}, {"dim", dim}}}, 19);
  }

  // Rows looked up from an n-row table: the harness's fixed ids (both ends and up to 22
  // panel boundaries) and at least the prefill's rows.
  int rows_of_table(int n) const {
    int base = 2;
    for (int r = 15; r < n && base < 24; r += 16) ++base;
    return std::max(base, std::min(P_, 4096));
  }

  void rope(int m, int n_heads, int hd, int start) {
    OpCase c{OpKind::Rope, dt_, {{"m", m}, {"n_heads", n_heads}, {"head_dim", hd}, {"pos0", start}}};
    c.rope_theta = cfg_.rope_theta > 0 ? cfg_.rope_theta : 10000.0;
    add(std::move(c), 41 + static_cast<uint32_t>(n_heads));
  }

  void attention(int m, int start, int nh, int nkv, int hd) {
    OpCase c{m == 1 ? OpKind::AttentionDecode : OpKind::AttentionPrefill, dt_,
             {{"n_heads", nh}, {"n_kv_heads", nkv}, {"head_dim", hd}, {"ctx", start + m}}};
    if (m > 1) c.shape["m"] = m;
    add(std::move(c), 61);
  }

  const ModelConfig& cfg_;
  DType dt_;
  QuantType quant_, lm_head_;
  int P_ = 1, m2_ = 1;
  std::vector<OpCase> cases_;
};

// The case as `be` runs it: linears and the gather with the config the engine would pick.
OpCase case_for(const OpCase& c, Backend& be, KernelSelection* sel, int prefill_m) {
  OpCase out = c;
  if (c.kind != OpKind::Gemm && c.kind != OpKind::Gemv && c.kind != OpKind::LinearGroup &&
      c.kind != OpKind::GatherRows)
    return out;
  const int k = c.shape.at("k");
  auto config = [&](int n) {
    if (c.quant != QuantType::None)
      return sel ? sel->quantized_linear_config(be, n, k, c.quant)
                 : be.default_tiles(OpDesc{OpKind::Gemv, DType::F32, {{"n", n}, {"k", k}}, kQuantBlock, c.quant});
    return sel ? sel->linear_config(be, n, k, c.dtype)
               : be.default_tiles(OpDesc{OpKind::Gemm, c.dtype, {{"m", prefill_m}, {"n", n}, {"k", k}}});
  };
  if (c.kind != OpKind::LinearGroup) {
    out.tiles = config(c.shape.at("n"));
    return out;
  }
  // Every weight of a group has its own config, as in the engine (the row shows the first).
  for (int i = 0; c.shape.count("n" + std::to_string(i)); ++i)
    out.member_tiles.push_back(config(c.shape.at("n" + std::to_string(i))));
  out.tiles = out.member_tiles.front();
  return out;
}

ValidationRow row_of(const OpCase& c, OpKind kind, const OpResult& r, const Backend& be) {
  ValidationRow row;
  row.kernel = c.label.empty() ? std::string(op_name(kind)) : c.label;
  row.path = c.path;
  row.isa = be.isa();
  row.shape = c.shape;
  if (c.bias) row.shape["bias"] = 1;
  row.quant = c.quant;
  row.config = r.config;
  row.k = static_cast<int>(r.k);
  row.max_abs_err = r.check.max_abs_err;
  row.max_rel_err = r.check.max_rel_err;
  row.mean_rel_l1 = r.check.mean_rel_l1;
  row.tolerance = r.check.tolerance;
  row.ratio = r.check.ratio;
  row.pass = r.pass();
  row.n_checked = r.check.n_checked;
  return row;
}

}  // namespace

std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype,
                                            std::span<Backend* const> backends,
                                            KernelSelection* sel, int prefill_m, QuantType quant,
                                            QuantType quant_lm_head) {
  check_fits_memory(cfg, prefill_m);
  ModelCases model(cfg, dtype, prefill_m, quant, quant_lm_head);
  const std::vector<OpCase> cases = model.build();
  const std::vector<OpKind> needed = model.needed();
  // Per case, every backend: the harness runs the reference once per case.
  OpHarness harness;
  std::vector<ValidationRow> rows;
  for (const OpCase& c : cases)
    for (Backend* be : backends) {
      const OpCase mine = case_for(c, *be, sel, prefill_m);
      rows.push_back(row_of(mine, mine.kind, harness.run(*be, mine), *be));
    }
  // A kind the engine needs and the backend claims, with no case: a failing row. Quantized
  // cases are needed only where the plan quantizes a matrix (no width a multiple of the
  // block: every linear stays in the base dtype, and only its cases run).
  const QuantType runs_quant =
      quant != QuantType::None && plan_quantization(cfg, dtype, quant, quant_lm_head).n_quantized > 0
          ? quant
          : QuantType::None;
  for (Backend* be : backends)
    for (OpKind kind : uncovered_kinds(*be, cases, needed, dtype, runs_quant)) {
      ValidationRow row;
      row.kernel = std::string(op_name(kind)) + ": no case";
      row.isa = be->isa();
      rows.push_back(row);
    }
  return rows;
}

std::vector<ValidationRow> validate_kernels(const ModelConfig& cfg, DType dtype, Backend& backend,
                                            KernelSelection* sel, int prefill_m, QuantType quant,
                                            QuantType quant_lm_head) {
  Backend* one[1] = {&backend};
  return validate_kernels(cfg, dtype, std::span<Backend* const>(one, 1), sel, prefill_m, quant, quant_lm_head);
}

std::string validation_row_string(const ValidationRow& r) {
  std::string cfg;
  for (const auto& [k, v] : r.config) cfg += (cfg.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return fmt::format("{}{} ({}) {} [{}]: max err/scale {:.3g}, tolerance {:.3g} (k={}), ratio {:.3g}, "
                     "max abs err {:.3g}, {} elements",
                     r.kernel, r.path.empty() ? "" : " " + r.path, r.isa, shape_string(r.shape),
                     cfg.empty() ? "-" : cfg, r.max_rel_err, r.tolerance, r.k, r.ratio, r.max_abs_err,
                     r.n_checked);
}

void record_validation(const std::vector<ValidationRow>& rows, DType dtype, const std::string& isa,
                       KernelRegistry& registry, const std::string& model_name, int threads) {
  const std::string base_dt(dtype_name(dtype));
  static const std::set<std::string> recorded = {"gemm", "gemv", "rmsnorm", "rope", "swiglu", "add",
                                                 "attention_prefill", "attention_decode"};
  const MachineFingerprint here = MachineFingerprint::current(threads);
  for (const auto& row : rows) {
    // Quantized rows are entries of their format ("q4_0"), the others of the base dtype.
    const std::string dt = row.quant != QuantType::None ? std::string(quant_name(row.quant)) : base_dt;
    // Registry entries are per (kernel, shape) of this backend's ISA; rows of the fused
    // paths, the gather and other ISA levels are in the phase report only.
    if (!recorded.count(row.kernel) || !row.path.empty() || (!row.isa.empty() && row.isa != isa) ||
        row.shape.count("bias") || row.shape.count("pos0"))
      continue;
    RegistryEntry e;
    if (const auto* old = registry.find(row.kernel, dt, isa, row.shape, here)) e = *old;
    e.kernel = row.kernel;
    e.dtype = dt;
    e.isa = isa;
    e.shape = row.shape;
    bool have = false;
    for (auto& c : e.candidates)
      if (c.config == row.config) {
        c.mean_rel_l1 = row.mean_rel_l1;
        c.max_abs_err = row.max_abs_err;
        c.pass = row.pass;
        have = true;
      }
    if (!have) {
      Candidate c;
      c.config = row.config;
      c.mean_rel_l1 = row.mean_rel_l1;
      c.max_abs_err = row.max_abs_err;
      c.pass = row.pass;
      e.candidates.push_back(c);
    }
    if (e.best.empty() || e.best == row.config) {
      e.heuristic = e.best.empty() ? true : e.heuristic;
      e.best = row.config;
    }
    e.validated = row.pass && e.best == row.config;
    e.used_by = {model_name};
    if (e.provenance.fingerprint.empty()) e.provenance = Provenance::current(threads);
    registry.record(e);
  }
}

}  // namespace llmport
