#pragma once
// Weight loading: memory-mapped safetensors (single file or sharded through
// model.safetensors.index.json), validated before use, checked against the tensor set
// the config implies (the tensor-role table of architecture.hpp).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llmport/architecture.hpp"
#include "llmport/dtype.hpp"
#include "llmport/model_config.hpp"
#include "llmport/tensor.hpp"

namespace llmport {

/// One mapped safetensors file, validated on open (header length inside the file, JSON
/// well formed, dtype known, shape x dtype size == byte range, ranges inside the data
/// area and not overlapping). Throws WeightsError "<file>: <tensor>: <problem>".
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::filesystem::path& file);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::filesystem::path& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The safetensors format packs the tensors back to back from data offset 0 to the end of
  /// the file (huggingface/safetensors refuses anything else: InvalidOffset,
  /// MetadataIncompleteBuffer). When bytes belong to no tensor (a header that lost an entry,
  /// data appended, two files concatenated), the one-line problem naming the file, the byte
  /// range and its neighbouring tensors; nullopt when the tensors cover the data area. Not
  /// thrown on open, so WeightStore::open names a missing tensor first (the likelier cause)
  /// and throws this only for a file whose tensor set is otherwise complete.
  const std::optional<std::string>& unclaimed_bytes() const { return unclaimed_; }

 private:
  std::filesystem::path path_;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
  std::optional<std::string> unclaimed_;
};

/// The safetensors files a model is loaded from, as transformers chooses them:
/// `dir`/model.safetensors when present (it wins over an index beside it), else each shard
/// named by `dir`/model.safetensors.index.json that is present; empty when neither is.
/// WeightStore::open, check_safetensors_headers and deploy's weight hashes all read this
/// set. Throws WeightsError for an unreadable index or a dangling link.
std::vector<std::filesystem::path> weight_files(const std::filesystem::path& dir);

/// The header check of `check` (no weight bytes read): opens, through SafetensorsFile,
/// `dir`/model.safetensors, else each shard named by `dir`/model.safetensors.index.json that
/// is present (a config-only Hugging Face snapshot holds none), so a truncated file or a bad
/// header is a WeightsError "<file>: <tensor>: data_offsets [...] run past the end of the
/// data area (N bytes; file truncated?)". Which tensors the model needs is not checked here
/// (WeightStore::open / check --weights do that). Returns the files checked (none: no
/// weights in `dir`). Throws WeightsError for an unreadable index.
std::vector<std::filesystem::path> check_safetensors_headers(const std::filesystem::path& dir);

/// All weights of one model, strictly checked against expected_tensors(cfg): a missing
/// tensor, a wrong shape, or a tensor the model does not consume is a WeightsError/
/// ShapeError naming file and tensor. Known leftovers (`*.rotary_emb.inv_freq`; a tied
/// model's `lm_head.weight`, which only warns when it differs from the embedding) pass.
/// With the tensor set complete, a file whose data area holds bytes no tensor claims
/// (SafetensorsFile::unclaimed_bytes) is a WeightsError naming the file.
class WeightStore {
 public:
  /// Opens `dir` (model.safetensors or model.safetensors.index.json + the shards it names;
  /// only those files are read).
  static WeightStore open(const std::filesystem::path& dir, const ModelConfig& cfg);
  /// Tensor by HF name. Throws WeightsError when absent.
  const TensorView& get(const std::string& name) const;
  /// Tensor by role and layer (layer -1 for global tensors). LmHead in a tied model
  /// returns the embedding [vocab_size, emb_dim]. Throws WeightsError when absent.
  const TensorView& get(TensorRole role, int layer = -1) const;
  bool has(const std::string& name) const;
  /// Warnings collected while loading (e.g. tied lm_head differing from the embedding).
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// Files actually mapped.
  std::vector<std::filesystem::path> files() const;
  /// Dominant stored dtype of the matrices (for --dtype defaulting).
  DType stored_dtype() const;
  /// Total bytes of the tensors the model consumes.
  std::size_t total_bytes() const;

 private:
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> by_name_;
  std::map<std::pair<int, int>, const TensorView*> by_role_;  // (role, layer)
  std::vector<std::string> warnings_;
};

}  // namespace llmport
