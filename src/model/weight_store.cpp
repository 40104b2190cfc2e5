// WeightStore: the model's safetensors files, mapped and checked strictly against the
// tensor set the config implies (TRAPS #1, #5, #6, #8, #9).
#include <algorithm>
#include <cstring>
#include <set>

#include "llmport/architecture.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"

namespace llmport {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string o = "[";
  for (std::size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

bool ends_with(const std::string& s, std::string_view suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

/// Reads model.safetensors.index.json's weight_map: tensor name -> shard file name.
std::map<std::string, std::string> read_weight_map(const fs::path& index) {
  json j;
  try {
    // A tensor listed twice names two shards; which one loads would be a guess.
    j = parse_json_text(read_text_file(index), index.string(), JsonKeys::distinct);
  } catch (const ConfigError& e) {
    throw WeightsError(e.what());
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw WeightsError(index.string() + ": no \"weight_map\" object");
  std::map<std::string, std::string> m;
  for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
    if (!it.value().is_string()) throw WeightsError(index.string() + ": " + it.key() + ": shard name is not a string");
    const std::string shard = it.value().get<std::string>();
    // Shards live next to the index; a path component would read files outside the model.
    if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
      throw WeightsError(index.string() + ": " + it.key() + ": invalid shard file name '" + shard + "'");
    m[it.key()] = shard;
  }
  if (m.empty()) throw WeightsError(index.string() + ": weight_map is empty");
  return m;
}

// True when weight file `p` (model.safetensors, the index or a shard) is there. A path that
// exists but is no regular file (a directory, a socket) is a WeightsError naming it, not an
// absent file: taken as absent, `check` accepted such a model and `run` said "no
// model.safetensors (found model.safetensors)".
bool weight_file_present(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (!fs::exists(st)) {
    // A link whose target is gone (an HF cache snapshot whose blob was never fetched or
    // was deleted) is a damaged model, not an absent file.
    std::error_code lec;
    if (fs::is_symlink(fs::symlink_status(p, lec)))
      throw WeightsError(p.string() + ": is a symbolic link to " + fs::read_symlink(p, lec).string() +
                         ", which does not exist (an interrupted download?)");
    return false;
  }
  if (!fs::is_regular_file(st))
    throw WeightsError(p.string() + ": is a " + (fs::is_directory(st) ? "directory" : "special file") +
                       ", not a weights file");
  return true;
}

}  // namespace

std::vector<fs::path> weight_files(const fs::path& dir) {
  std::vector<fs::path> files;
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";
  if (weight_file_present(single)) {
    files.push_back(single);
  } else if (weight_file_present(index)) {
    std::set<std::string> shards;
    for (const auto& [name, shard] : read_weight_map(index)) shards.insert(shard);
    for (const std::string& shard : shards)
      if (weight_file_present(dir / shard)) files.push_back(dir / shard);
  }
  return files;
}

std::vector<fs::path> check_safetensors_headers(const fs::path& dir) {
  const std::vector<fs::path> files = weight_files(dir);
  for (const fs::path& f : files) {
    const SafetensorsFile validated(f);  // validated on open: mapped, its weight bytes not read
  }
  return files;
}

WeightStore WeightStore::open(const fs::path& dir_or_file, const ModelConfig& cfg) {
  std::error_code ec;
  const fs::path dir = fs::is_directory(dir_or_file, ec) ? dir_or_file : dir_or_file.parent_path();
  WeightStore ws;
  std::map<std::string, const TensorView*> available;  // every tensor the model files hold
  const fs::path single = dir / "model.safetensors";
  const fs::path index = dir / "model.safetensors.index.json";
  fs::path origin;  // file named in "missing tensor" errors
  if (weight_file_present(single)) {
    origin = single;
    ws.files_.push_back(std::make_shared<SafetensorsFile>(single));
    for (const auto& [name, v] : ws.files_.back()->tensors()) available[name] = &v;
  } else if (weight_file_present(index)) {
    origin = index;
    const auto weight_map = read_weight_map(index);
    std::map<std::string, std::shared_ptr<SafetensorsFile>> shards;
    for (const auto& [name, shard] : weight_map) {
      auto& sf = shards[shard];
      if (!sf) {
        const fs::path p = dir / shard;
        if (!weight_file_present(p))
          throw WeightsError(p.string() + ": missing shard (named by model.safetensors.index.json for " + name + ")");
        sf = std::make_shared<SafetensorsFile>(p);
        ws.files_.push_back(sf);
      }
      auto it = sf->tensors().find(name);
      if (it == sf->tensors().end())
        throw WeightsError(sf->path().string() + ": " + name +
                           ": listed in model.safetensors.index.json but not in this shard");
      available[name] = &it->second;
    }
    for (const auto& [shard, sf] : shards)
      for (const auto& [name, v] : sf->tensors()) {
        auto wm = weight_map.find(name);
        if (wm == weight_map.end())
          throw WeightsError(sf->path().string() + ": " + name + ": not listed in model.safetensors.index.json");
        // A second copy in another shard: which one the model means is ambiguous.
        if (wm->second != shard)
          throw WeightsError(sf->path().string() + ": " + name + ": stored in two shards (" + shard + " and " +
                             wm->second + ", which model.safetensors.index.json names)");
      }
  } else {
    std::string found;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const auto ext = e.path().extension().string();
      if (ext == ".safetensors" || ext == ".bin" || ext == ".gguf" || ext == ".pth")
        found += (found.empty() ? "" : ", ") + e.path().filename().string();
    }
    throw WeightsError(dir.string() + ": no model.safetensors or model.safetensors.index.json" +
                       (found.empty() ? std::string() : " (found " + found + ")"));
  }

  // Every layer needs at least 9 tensors, so a layer count beyond what the files hold cannot
  // be satisfied: check only up to the first layer that cannot exist (its tensors are
  // reported missing) instead of listing billions of expected tensors.
  ModelConfig bounded = cfg;
  if (static_cast<std::size_t>(cfg.n_layers) > available.size())
    bounded.n_layers = static_cast<int>(available.size()) + 1;
  std::set<std::string> consumed;
  for (const TensorSpec& spec : expected_tensors(bounded)) {
    auto it = available.find(spec.name);
    if (it == available.end()) {
      if (spec.role == TensorRole::LmHead)
        throw WeightsError(origin.string() + ": lm_head.weight: missing, and tie_word_embeddings is false");
      throw WeightsError(origin.string() + ": " + spec.name + ": missing tensor (" + std::string(role_name(spec.role)) +
                         (spec.layer >= 0 ? ", layer " + std::to_string(spec.layer) : std::string()) + ")");
    }
    const TensorView* v = it->second;
    if (v->shape != spec.shape)
      throw ShapeError(v->file.string() + ": " + spec.name + ": shape " + shape_str(v->shape) + ", expected " +
                       shape_str(spec.shape) + " = " + role_shape_formula(spec.role) + " from config.json");
    consumed.insert(spec.name);
    ws.by_name_[spec.name] = v;
    ws.by_role_[{static_cast<int>(spec.role), spec.layer}] = v;
  }

  std::vector<std::string> unexpected;
  for (const auto& [name, v] : available) {
    if (consumed.count(name) || ends_with(name, ".rotary_emb.inv_freq")) continue;
    if (name == "lm_head.weight" && cfg.tie_word_embeddings) {
      // TRAPS #8: a tied model computes logits from the embedding; a stored lm_head that
      // differs is reported, never used.
      const TensorView* emb = ws.by_name_.at("model.embed_tokens.weight");
      if (v->shape != emb->shape || v->dtype != emb->dtype || std::memcmp(v->data, emb->data, v->nbytes) != 0)
        ws.warnings_.push_back(v->file.string() +
                               ": lm_head.weight differs from model.embed_tokens.weight in a model with "
                               "tie_word_embeddings true; using the embedding (transformers v5 does not tie "
                               "weights the checkpoint stores apart, and computes the logits from lm_head.weight)");
      continue;
    }
    unexpected.push_back(name);
  }
  if (!unexpected.empty()) {
    const TensorView* v = available.at(unexpected.front());
    throw WeightsError(v->file.string() + ": " + unexpected.front() + ": tensor not consumed by " + cfg.architecture +
                       " with this config.json" +
                       (unexpected.size() > 1 ? " (and " + std::to_string(unexpected.size() - 1) + " more)" : ""));
  }
  for (const auto& f : ws.files_)
    if (f->unclaimed_bytes()) throw WeightsError(*f->unclaimed_bytes());
  return ws;
}

const TensorView& WeightStore::get(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) throw WeightsError("tensor " + name + " is not part of the loaded model");
  return *it->second;
}

const TensorView& WeightStore::get(TensorRole role, int layer) const {
  auto it = by_role_.find({static_cast<int>(role), layer});
  if (it == by_role_.end() && role == TensorRole::LmHead)
    it = by_role_.find({static_cast<int>(TensorRole::Embed), -1});  // tied embeddings
  if (it == by_role_.end())
    throw WeightsError("no tensor with role " + std::string(role_name(role)) +
                       (layer >= 0 ? " in layer " + std::to_string(layer) : std::string()));
  return *it->second;
}

bool WeightStore::has(const std::string& name) const { return by_name_.count(name) != 0; }

std::vector<fs::path> WeightStore::files() const {
  std::vector<fs::path> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

DType WeightStore::stored_dtype() const {
  std::map<DType, std::size_t> bytes;
  for (const auto& [key, v] : by_role_) {
    const auto r = static_cast<TensorRole>(key.first);
    if (r == TensorRole::Wq || r == TensorRole::Wk || r == TensorRole::Wv || r == TensorRole::Wo ||
        r == TensorRole::WGate || r == TensorRole::WUp || r == TensorRole::WDown)
      bytes[v->dtype] += v->nbytes;
  }
  DType best = DType::F32;
  std::size_t most = 0;
  for (const auto& [dt, n] : bytes)
    if (n > most) most = n, best = dt;
  return best;
}

std::size_t WeightStore::total_bytes() const {
  std::size_t n = 0;
  for (const auto& [name, v] : by_name_) n += v->nbytes;
  return n;
}

}  // namespace llmport
