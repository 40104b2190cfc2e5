// config.json -> ModelConfig. Per-class defaults and deltas come from the architecture table
// (architecture.hpp); the field rules here are the ones every class shares.
#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <sstream>

#include "llmport/architecture.hpp"
#include "llmport/compat.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/model_config.hpp"
#include "llmport/model_path.hpp"
#include "model/activation.hpp"
#include "model/json_fields.hpp"

namespace llmport {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace detail;

namespace {

double positive_double(const json& j, const char* key, double dflt) {
  auto v = strict_double(j, key);
  if (!v) return dflt;
  if (!(*v > 0) || !std::isfinite(*v))
    throw ConfigError(std::string("field '") + key + "': " + json_excerpt(*field(j, key)) + " must be > 0");
  return *v;
}

// positive_double within (`above`, `below`): a value past them is no model's, and would run
// as silent garbage (an eps of 7.5 flattens every norm; a RoPE base <= 1 turns every
// frequency into >= 1 radian per position).
double positive_double_within(const json& j, const char* key, double dflt, double above, double below,
                              const char* why) {
  const double v = positive_double(j, key, dflt);
  const char* bound = !(v > above) ? " must be > " : !(v < below) ? " must be < " : nullptr;
  if (bound)
    throw ConfigError(std::string("field '") + key + "': " + json_excerpt(*field(j, key)) + bound +
                      json(!(v > above) ? above : below).dump() + " (" + why + ")");
  return v;
}
constexpr const char* kRopeBaseWhy = "the RoPE base: inv_freq = theta^(-2i/head_dim) must fall with i";
constexpr double kNoBound = std::numeric_limits<double>::infinity();

RopeScaling resolve_rope_scaling(const json& config, const Architecture& arch) {
  RopeScaling rs;
  const json* r = rope_scaling_of(config);
  if (!r) return rs;
  const char* key = field(config, "rope_scaling") ? "rope_scaling" : "rope_parameters";
  if (!r->is_object()) throw ConfigError(std::string("field '") + key + "': expected an object, got " + json_excerpt(*r));
  // transformers reads rope_scaling["rope_type"] (or legacy "type") and fails without one;
  // v5's rope_parameters is standardized with rope_type "default" when it has none.
  if (std::string(key) == "rope_scaling" && !field(*r, "rope_type") && !field(*r, "type"))
    throw ConfigError("field 'rope_scaling': has no rope_type (or type), got " + json_excerpt(*r));
  std::string type = rope_type_of(r);
  if (type.empty()) throw ConfigError(std::string("field '") + key + "': rope_type/type must be a string");
  const std::string unsupported =
      "rope_scaling type '" + type + "' is not supported (" + rope_type_list(arch) + ")";
  if (!rope_type_allowed(arch, type)) throw UnsupportedError(unsupported);
  rs.type = type;
  if (type == "none") return rs;
  auto need = [&](const char* f) {
    if (!field(*r, f)) throw ConfigError(std::string("field '") + key + "." + f + "' is missing (needed by " +
                                         type + " RoPE scaling)");
    auto v = lenient_double(*r, f);
    if (!v || !(*v > 0)) throw ConfigError(std::string("field '") + key + "." + f + "': expected a number > 0, got " +
                                           json_excerpt(*field(*r, f)));
    return *v;
  };
  if (type == "linear") {
    rs.factor = need("factor");
  } else if (type == "llama3") {
    rs.factor = need("factor");
    rs.low_freq_factor = need("low_freq_factor");
    rs.high_freq_factor = need("high_freq_factor");
    need("original_max_position_embeddings");
    rs.original_max_position_embeddings = static_cast<int>(json_integer(
        *field(*r, "original_max_position_embeddings"), std::string(key) + ".original_max_position_embeddings", 1,
        2147483647LL));
    if (rs.high_freq_factor <= rs.low_freq_factor)
      throw ConfigError(std::string("field '") + key + "': high_freq_factor must exceed low_freq_factor");
  } else {
    throw UnsupportedError(unsupported);  // a row lists a type this parser does not know
  }
  return rs;
}

std::optional<int> first_id(const json& j, const char* key) {
  auto ids = strict_ids(j, key);
  if (ids.empty()) return std::nullopt;
  return ids.front();
}

}  // namespace

fs::path find_config_json(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fs::path f = path / "config.json";
    if (fs::is_directory(f, ec)) throw ConfigError(f.string() + ": is a directory, expected the config.json file");
    if (!fs::is_regular_file(f, ec)) {
      // A deployment workspace is the natural thing to point at after a deploy: say what it is.
      if (fs::is_regular_file(path / "deployment.json", ec))
        throw ConfigError(path.string() + ": an llmport deployment, not a model (no config.json): use `make -C " +
                          path.string() + " run|verify|bench`, or give its model (\"model_dir\" in deployment.json)");
      // Something named config.json that is not a file (a FIFO, a device, a link to
      // nothing or a link loop) is not "no config.json": name what it is.
      const fs::file_status ls = fs::symlink_status(f, ec);
      if (fs::exists(ls)) {
        const fs::file_status st = fs::status(f, ec);
        const std::string what = fs::is_symlink(ls) && !fs::exists(st)
                                     ? "a symbolic link that resolves to nothing (" + ec.message() + ")"
                                     : "not a regular file (a FIFO, socket or device)";
        throw ConfigError(f.string() + ": is " + what + ", expected the config.json file");
      }
      throw ConfigError(path.string() + ": no config.json in this directory");
    }
    return f;
  }
  if (fs::is_regular_file(path, ec)) {
    check_model_path(path);
    return path;
  }
  throw ConfigError(path.string() + ": no such model directory or config.json file");
}

json read_json_file(const fs::path& file) {
  return parse_json_text(read_text_file(file), file.string());
}

GenerationConfig parse_generation_config(const json& g) {
  GenerationConfig gc;
  if (!g.is_object()) throw ConfigError("generation_config is not a JSON object");
  gc.present = true;
  gc.eos_token_ids = strict_ids(g, "eos_token_id");
  gc.bos_token_id = first_id(g, "bos_token_id");
  gc.do_sample = strict_bool(g, "do_sample");
  gc.temperature = strict_double(g, "temperature");
  gc.top_p = strict_double(g, "top_p");
  gc.min_p = strict_double(g, "min_p");
  gc.repetition_penalty = strict_double(g, "repetition_penalty");
  auto opt_int = [&](const char* k) -> std::optional<int> {
    auto v = strict_int(g, k, false, 0, "generation_config");
    return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
  };
  gc.top_k = opt_int("top_k");
  gc.max_length = opt_int("max_length");
  gc.max_new_tokens = opt_int("max_new_tokens");
  return gc;
}

namespace {
// transformers v4 reads the top-level rope_theta and rope_scaling. v5 reads rope_scaling when
// it holds something, else rope_parameters, and that dict's own rope_theta before the top
// level (PreTrainedConfig.convert_rope_params_to_dict: `rope_scaling or rope_parameters`,
// then setdefault("rope_theta", ...)). A config written for one version alone reads the
// same in both, or is v5's own (rope_parameters and no v4 key); one whose two readings
// differ cannot say which the model was trained with, so it is refused.
void check_rope_layouts_agree(const json& config, double default_theta) {
  const json* rp = field(config, "rope_parameters");
  const json* rs = field(config, "rope_scaling");
  const bool v4_keys = config.contains("rope_theta") || config.contains("rope_scaling");
  const bool inner_theta = rs && rs->is_object() && rs->contains("rope_theta");
  if (!(rp && v4_keys) && !inner_theta) return;
  const bool rs_used = rs && rs->is_object() && !rs->empty();
  const json* v5 = rs_used ? rs : (rp && rp->is_object() ? rp : nullptr);
  const std::string v5_key = rs_used ? "rope_scaling" : "rope_parameters";
  const auto refuse = [&](const std::string& what5, const json& val5, const std::string& what4, const json& val4) {
    throw ConfigError("field '" + what5 + "': " + json_excerpt(val5) + " disagrees with '" + what4 + "' " +
                      json_excerpt(val4) + " (transformers v5 reads " + v5_key +
                      ", v4 the top-level rope_theta and rope_scaling)");
  };
  const json theta4 = field(config, "rope_theta") ? *field(config, "rope_theta") : json(default_theta);
  if (const json* t5 = v5 ? field(*v5, "rope_theta") : nullptr)
    if (!t5->is_number() || !theta4.is_number() || t5->get<double>() != theta4.get<double>())
      refuse(v5_key + ".rope_theta", *t5, field(config, "rope_theta") ? "rope_theta" : "rope_theta (default)", theta4);
  const std::string type4 = rope_type_of(rs && rs->is_object() ? rs : nullptr), type5 = rope_type_of(v5);
  if (type4 != type5) refuse(v5_key + ".rope_type", json(type5), "rope_scaling.rope_type", json(type4));
}
}  // namespace

ModelConfig resolve_model_config(const json& config, const json* generation_config) {
  if (!config.is_object()) throw ConfigError("config is not a JSON object");
  ModelConfig cfg;
  cfg.architecture = architecture_of(config);
  // resolve_model_config does not judge scope (check_compat does): a class outside the table
  // resolves with the first row's rules, Llama's, the base every row is a delta of.
  const Architecture* found = find_architecture(cfg.architecture);
  const Architecture& arch = found ? *found : architectures().front();
  cfg.model_type = lenient_string(config, "model_type").value_or("");
  const std::string who = cfg.architecture.empty() ? std::string("the model") : cfg.architecture;
  auto as_int = [](std::optional<long long> v) { return static_cast<int>(*v); };

  cfg.n_layers = as_int(strict_int(config, "num_hidden_layers", true, 1, who));
  cfg.emb_dim = as_int(strict_int(config, "hidden_size", true, 1, who));
  cfg.n_heads = as_int(strict_int(config, "num_attention_heads", true, 1, who));
  auto kv = strict_int(config, "num_key_value_heads", false, 1, who);
  cfg.n_kv_heads = kv ? as_int(kv) : cfg.n_heads;
  if (cfg.n_heads % cfg.n_kv_heads != 0)
    throw ConfigError("num_attention_heads " + std::to_string(cfg.n_heads) + " is not a multiple of num_key_value_heads " +
                      std::to_string(cfg.n_kv_heads));
  // An explicit head_dim wins even when it differs from hidden_size / num_attention_heads
  // (Mistral-Nemo, Qwen3): TRAPS #1.
  if (auto hd = strict_int(config, "head_dim", false, 1, who)) {
    cfg.head_dim = as_int(hd);
  } else {
    if (cfg.emb_dim % cfg.n_heads != 0)
      throw ConfigError("hidden_size " + std::to_string(cfg.emb_dim) + " is not divisible by num_attention_heads " +
                        std::to_string(cfg.n_heads) + " and no head_dim is given");
    cfg.head_dim = cfg.emb_dim / cfg.n_heads;
  }
  // The engine's row widths are ints: the products must fit (64-bit math here).
  if (static_cast<long long>(cfg.n_heads) * cfg.head_dim > 2147483647LL)
    throw ConfigError("num_attention_heads " + std::to_string(cfg.n_heads) + " x head_dim " +
                      std::to_string(cfg.head_dim) + " does not fit a 32-bit dimension");
  if (auto problem = head_dim_problem(cfg.head_dim)) throw ConfigError(*problem);
  cfg.hidden_dim = as_int(strict_int(config, "intermediate_size", true, 1, who));
  cfg.vocab_size = as_int(strict_int(config, "vocab_size", true, 1, who));
  auto mpe = strict_int(config, "max_position_embeddings", false, 1, who);
  cfg.max_position_embeddings = mpe ? as_int(mpe) : arch.default_max_position_embeddings;

  check_rope_layouts_agree(config, arch.default_rope_theta);
  cfg.rope_theta = positive_double_within(config, "rope_theta", arch.default_rope_theta, 1.0, kNoBound, kRopeBaseWhy);
  if (!field(config, "rope_theta"))
    if (const json* rp = field(config, "rope_parameters"); rp && rp->is_object())
      cfg.rope_theta = positive_double_within(*rp, "rope_theta", arch.default_rope_theta, 1.0, kNoBound, kRopeBaseWhy);
  cfg.rope_scaling = resolve_rope_scaling(config, arch);
  cfg.rms_norm_eps = positive_double_within(config, "rms_norm_eps", 1e-6, 0.0, 1.0,
                                            "a variance floor: models use 1e-5 or 1e-6, and 1 or more flattens every norm");

  if (const json* act = field(config, "hidden_act")) {
    if (!act->is_string()) throw ConfigError("field 'hidden_act': expected a string, got " + json_excerpt(*act));
    if (!activation_matches(act->get<std::string>(), arch.hidden_act))
      throw UnsupportedError("hidden_act '" + act->get<std::string>() + "' is not supported (" +
                             std::string(arch.hidden_act) + " only)");
  }
  cfg.tie_word_embeddings = strict_bool(config, "tie_word_embeddings").value_or(arch.tie_word_embeddings_default);
  const AttentionDeltas deltas = attention_deltas(arch, strict_bool(config, "attention_bias").value_or(false));
  cfg.qkv_bias = deltas.qkv_bias;
  cfg.o_bias = deltas.o_bias;
  cfg.qk_norm = deltas.qk_norm;

  cfg.bos_token_id = first_id(config, "bos_token_id");
  cfg.eos_token_ids = strict_ids(config, "eos_token_id");
  // Every configured token id must name a row of the embedding (an id past the vocabulary
  // would never be produced: a stop id that can never stop, a bos that cannot be looked up).
  auto in_vocab = [&](const std::vector<int>& ids, const std::string& key) {
    for (int id : ids)
      if (id >= cfg.vocab_size)
        throw ConfigError("field '" + key + "': token id " + std::to_string(id) + " is beyond vocab_size " +
                          std::to_string(cfg.vocab_size));
  };
  if (cfg.bos_token_id) in_vocab({*cfg.bos_token_id}, "bos_token_id");
  in_vocab(cfg.eos_token_ids, "eos_token_id");
  cfg.torch_dtype = torch_dtype_of(config);
  cfg.max_seq = cfg.max_position_embeddings;
  if (generation_config) {
    try {
      cfg.generation = parse_generation_config(*generation_config);
      if (cfg.generation.bos_token_id) in_vocab({*cfg.generation.bos_token_id}, "bos_token_id");
      in_vocab(cfg.generation.eos_token_ids, "eos_token_id");
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("generation_config.json: ") + e.what());
    }
  }
  return cfg;
}

namespace {

/// The rest of loading once the gate accepted `j` (read from `file`): generation_config.json,
/// strict resolution with errors naming the file, the --max-seq / sliding-window context.
ModelConfig resolve_accepted(const json& j, const fs::path& file, const CompatResult& compat,
                             std::optional<int> max_seq) {
  const fs::path dir = file.parent_path();
  std::optional<json> gen;
  const fs::path gen_file = dir / "generation_config.json";
  if (std::error_code ec; fs::is_regular_file(gen_file, ec)) {
    gen = read_json_file(gen_file);
    if (!gen->is_object()) throw ConfigError(gen_file.string() + ": not a JSON object");
  } else if (fs::exists(fs::symlink_status(gen_file, ec))) {
    // Optional, but one that is there and unreadable (a directory, a link to nothing) would
    // silently drop the model's eos ids and sampling defaults.
    throw ConfigError(gen_file.string() + ": is not a readable file (a directory, a link to nothing or a "
                                          "special file); remove it or restore the file");
  }
  ModelConfig cfg;
  try {
    cfg = resolve_model_config(j, gen ? &*gen : nullptr);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(file.string() + ": " + e.what());
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    if (what.rfind("generation_config.json: ", 0) == 0)
      throw ConfigError(gen_file.string() + ": " + what.substr(24));
    throw ConfigError(file.string() + ": " + what);
  }
  cfg.dir = dir;
  if (compat.context_cap) {
    if (auto w = sliding_window_of(j, find_architecture(cfg.architecture)); w && *w <= 2147483647LL)
      cfg.sliding_window = static_cast<int>(*w);
    cfg.max_seq = std::min(*compat.context_cap, cfg.max_position_embeddings);
  } else if (max_seq) {
    if (*max_seq > cfg.max_position_embeddings)
      throw UsageError("--max-seq " + std::to_string(*max_seq) + " exceeds max_position_embeddings " +
                       std::to_string(cfg.max_position_embeddings) + " of " + file.string());
    cfg.max_seq = *max_seq;
  }
  return cfg;
}

}  // namespace

ConfigCheck check_model_config(const fs::path& path, std::optional<int> max_seq) {
  ConfigCheck out;
  out.file = find_config_json(path);
  const json j = read_json_file(out.file);
  if (!j.is_object()) throw ConfigError(out.file.string() + ": not a JSON object");
  // A JSON file that names no architecture and no model shape (a tokenizer.json or a golden
  // renamed, given as MODEL) is not a config the gate could REJECT (exit 3): bad input.
  static const char* const kConfigKeys[] = {"architectures", "model_type", "hidden_size", "num_hidden_layers",
                                            "n_embd", "n_layer", "d_model"};
  if (std::none_of(std::begin(kConfigKeys), std::end(kConfigKeys), [&](const char* k) { return j.contains(k); }))
    throw ConfigError(out.file.string() +
                      ": not a model config (none of architectures, model_type, hidden_size, num_hidden_layers)");
  if (max_seq && *max_seq <= 0) throw UsageError("--max-seq " + std::to_string(*max_seq) + " must be > 0");
  try {
    out.gate = check_compat(j, max_seq);
  } catch (const ConfigError& e) {
    throw ConfigError(out.file.string() + ": " + e.what());
  }
  if (out.gate.accepted) out.config = resolve_accepted(j, out.file, out.gate, max_seq);
  return out;
}

ModelConfig load_model_config(const fs::path& path, std::optional<int> max_seq) {
  ConfigCheck checked = check_model_config(path, max_seq);
  if (!checked.gate.accepted) throw UnsupportedError(checked.file.string() + ": " + checked.gate.message);
  return std::move(*checked.config);
}

std::vector<int> ModelConfig::stop_ids() const {
  std::vector<int> ids = eos_token_ids;
  ids.insert(ids.end(), generation.eos_token_ids.begin(), generation.eos_token_ids.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

double ModelConfig::attn_scale() const { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }

json ModelConfig::to_json() const {
  json j = json::object();
  j["architecture"] = architecture;
  j["model_type"] = model_type;
  j["n_layers"] = n_layers;
  j["emb_dim"] = emb_dim;
  j["n_heads"] = n_heads;
  j["n_kv_heads"] = n_kv_heads;
  j["head_dim"] = head_dim;
  j["hidden_dim"] = hidden_dim;
  j["vocab_size"] = vocab_size;
  j["rope_theta"] = rope_theta;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["qkv_bias"] = qkv_bias;
  j["o_bias"] = o_bias;
  j["qk_norm"] = qk_norm;
  j["rope_scaling_type"] = rope_scaling.type == "none" ? json(nullptr) : json(rope_scaling.type);
  if (rope_scaling.type == "linear") {
    j["rope_scaling"] = {{"type", "linear"}, {"factor", rope_scaling.factor}};
  } else if (rope_scaling.type == "llama3") {
    j["rope_scaling"] = {{"type", "llama3"},
                         {"factor", rope_scaling.factor},
                         {"low_freq_factor", rope_scaling.low_freq_factor},
                         {"high_freq_factor", rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", rope_scaling.original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["rms_norm_eps"] = rms_norm_eps;
  j["max_position_embeddings"] = max_position_embeddings;
  j["max_seq"] = max_seq;
  j["sliding_window"] = sliding_window ? json(*sliding_window) : json(nullptr);
  j["bos_token_id"] = bos_token_id ? json(*bos_token_id) : json(nullptr);
  j["eos_token_ids"] = eos_token_ids;
  j["stop_ids"] = stop_ids();
  j["torch_dtype"] = torch_dtype.empty() ? json(nullptr) : json(torch_dtype);
  if (generation.present) {
    json g = json::object();
    g["eos_token_ids"] = generation.eos_token_ids;
    auto put = [&](const char* k, const auto& v) { g[k] = v ? json(*v) : json(nullptr); };
    put("bos_token_id", generation.bos_token_id);
    put("do_sample", generation.do_sample);
    put("temperature", generation.temperature);
    put("top_k", generation.top_k);
    put("top_p", generation.top_p);
    put("min_p", generation.min_p);
    put("repetition_penalty", generation.repetition_penalty);
    put("max_length", generation.max_length);
    put("max_new_tokens", generation.max_new_tokens);
    j["generation"] = g;
  }
  return j;
}

}  // namespace llmport
