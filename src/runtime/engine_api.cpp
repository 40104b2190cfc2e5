// Engine's construction and public methods: options resolved, slots kept, calls delegated to
// the forward pass (engine.cpp).
#include <algorithm>
#include <optional>
#include <string>

#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "runtime/engine_impl.hpp"

namespace llmport {

namespace {
// The config's torch_dtype when it names one llmport knows; an unusual string (or none)
// leaves the choice to what the file actually stores.
std::optional<DType> stated_dtype(const ModelConfig& cfg) {
  if (cfg.torch_dtype.empty()) return std::nullopt;
  try {
    return parse_dtype(cfg.torch_dtype);
  } catch (const UsageError&) {
    return std::nullopt;
  }
}
}  // namespace

DType checkpoint_dtype(const ModelConfig& cfg, const WeightStore& weights) {
  if (const auto d = stated_dtype(cfg)) return *d;
  return weights.stored_dtype();
}

DType checkpoint_dtype(const ModelConfig& cfg, const std::filesystem::path& model_dir, DType if_unreadable) {
  if (const auto d = stated_dtype(cfg)) return *d;
  try {
    return WeightStore::open(model_dir, cfg).stored_dtype();
  } catch (const Error&) {
    return if_unreadable;
  }
}

Engine::Impl::Impl(const ModelConfig& c, const WeightStore& w, const EngineOptions& o_)
    : cfg(c), weights(w), opt(o_) {
  dtype = opt.dtype ? *opt.dtype : checkpoint_dtype(cfg, weights);
  backend = opt.backend_level.empty() ? make_backend(opt.backend, opt.threads)
                                      : make_backend_at(opt.backend, opt.backend_level, opt.threads);
  if (opt.threads > 0) backend->set_threads(opt.threads);
  // Before the weights are made: batch-invariant mode also keeps the ISA-flag default
  // tile configs (no kernel probe), so its numerics are the same on every machine.
  if (opt.batch_invariant) backend->set_batch_invariant(true);
  const int ctx = cfg.max_seq > 0 ? cfg.max_seq : cfg.max_position_embeddings;
  if (opt.max_seq > 0 && ctx > 0 && opt.max_seq > ctx)
    throw UsageError("KV-cache size " + std::to_string(opt.max_seq) +
                     " exceeds the model context of " + std::to_string(ctx) + " tokens");
  max_seq = opt.max_seq > 0 ? opt.max_seq
                            : std::min(ctx > 0 ? ctx : EngineOptions::kDefaultMaxSeq,
                                       EngineOptions::kDefaultMaxSeq);
  stack_decorators();  // checks the options' decorators before the weights are packed
  load();
  if (opt.n_slots < 1)
    throw UsageError("n_slots must be at least 1 (got " + std::to_string(opt.n_slots) + ")");
  // One spare position past the context: a decorator may store K/V one position late.
  for (int i = 0; i < opt.n_slots; ++i)
    caches.push_back(
        std::make_unique<KvCache>(cfg.n_layers, cfg.n_kv_heads, max_seq + 1, cfg.head_dim));
  pos.assign(static_cast<std::size_t>(opt.n_slots), 0);
}

Engine::Engine(const ModelConfig& cfg, const WeightStore& weights, const EngineOptions& opt)
    : impl_(std::make_unique<Impl>(cfg, weights, opt)) {}
Engine::~Engine() = default;

std::vector<float> Engine::forward(std::span<const int> tokens, bool all_logits) {
  const BatchItem one{0, tokens};
  return impl_->forward(impl_->make_batch(std::span<const BatchItem>(&one, 1)), all_logits);
}
std::vector<float> Engine::forward_batch(std::span<const BatchItem> items) {
  return impl_->forward(impl_->make_batch(items), false);
}
int Engine::n_slots() const { return static_cast<int>(impl_->caches.size()); }
int Engine::slot_pos(int slot) const {
  impl_->check_slot(slot);
  return impl_->pos[static_cast<std::size_t>(slot)];
}
void Engine::reset_slot(int slot) {
  impl_->check_slot(slot);
  impl_->pos[static_cast<std::size_t>(slot)] = 0;
}
std::vector<float> Engine::prefill(std::span<const int> tokens) {
  reset();
  return forward(tokens);
}
std::vector<float> Engine::decode_step(int token) {
  const int t[1] = {token};
  return forward(std::span<const int>(t, 1));
}
void Engine::reset() { reset_slot(0); }
void Engine::truncate(int n) {
  if (n < 0) throw UsageError("truncate: negative position " + std::to_string(n));
  impl_->pos[0] = std::min(impl_->pos[0], n);
}
int Engine::pos() const { return impl_->pos[0]; }
int Engine::max_seq() const { return impl_->max_seq; }
const ModelConfig& Engine::config() const { return impl_->cfg; }
DType Engine::dtype() const { return impl_->dtype; }
QuantType Engine::quant() const { return impl_->opt.quant; }
QuantType Engine::quant_lm_head() const { return impl_->opt.quant_lm_head; }
const std::map<std::string, ActQuant>& Engine::quant_acts() const { return impl_->quant_acts; }

void set_dtype_flag(EngineOptions& opt, std::string_view value) {
  const QuantType q = parse_quant(value);
  if (q != QuantType::None) {
    opt.quant = q;
    return;
  }
  try {
    opt.dtype = parse_dtype(value);
  } catch (const UsageError&) {
    throw UsageError("unknown dtype '" + std::string(value) + "' (expected bf16, fp16, fp32, q8_0 or q4_0)");
  }
  opt.quant = QuantType::None;
}

std::string precision_name(DType dtype, QuantType quant) {
  return quant != QuantType::None ? std::string(quant_name(quant)) : std::string(dtype_name(dtype));
}
Backend& Engine::backend() { return *impl_->backend; }
std::size_t Engine::weight_bytes() const {
  std::size_t b = 0;
  for (const LinearWeight* w : impl_->linears()) b += w->bytes();
  return b;
}
std::size_t Engine::embedding_table_bytes() const {
  return impl_->embeds_from_lm_head() ? 0 : impl_->embed->nbytes;
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
