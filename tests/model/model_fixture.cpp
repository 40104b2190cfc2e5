#include "model/model_fixture.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "llmport/safetensors_writer.hpp"
#include "support/test_support.hpp"

namespace llmport::test {

namespace fs = std::filesystem;

RawSafetensors read_raw_safetensors(const fs::path& file) {
  const std::string bytes = read_file(file);
  if (bytes.size() < 8) throw std::runtime_error("short file " + file.string());
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  RawSafetensors st;
  st.header = nlohmann::ordered_json::parse(bytes.substr(8, n));
  st.data = bytes.substr(8 + n);
  return st;
}

void write_raw_safetensors(const fs::path& file, const std::string& header_text, const std::string& data,
                           int64_t header_len_override) {
  const uint64_t n = header_len_override >= 0 ? static_cast<uint64_t>(header_len_override) : header_text.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out += header_text;
  out += data;
  write_file(file, out);
}

void write_raw_safetensors(const fs::path& file, const RawSafetensors& st) {
  write_raw_safetensors(file, st.header.dump(), st.data);
}

void copy_model(const fs::path& src, const fs::path& dst) {
  fs::create_directories(dst);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors"})
    if (fs::exists(src / f)) fs::copy_file(src / f, dst / f, fs::copy_options::overwrite_existing);
}

std::vector<std::string> shard_model(const fs::path& dir, int n_shards) {
  RawSafetensors st = read_raw_safetensors(dir / "model.safetensors");
  std::vector<std::vector<TensorData>> shards(static_cast<std::size_t>(n_shards));
  nlohmann::json weight_map = nlohmann::json::object();
  std::vector<std::string> names;
  for (int i = 0; i < n_shards; ++i)
    names.push_back("model-0000" + std::to_string(i + 1) + "-of-0000" + std::to_string(n_shards) + ".safetensors");
  int k = 0;
  for (auto it = st.header.begin(); it != st.header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto& e = it.value();
    TensorData t;
    t.name = it.key();
    t.dtype = parse_dtype(e["dtype"].get<std::string>());
    t.shape = e["shape"].get<std::vector<int64_t>>();
    const auto b = e["data_offsets"][0].get<std::size_t>(), en = e["data_offsets"][1].get<std::size_t>();
    t.bytes.assign(st.data.begin() + static_cast<std::ptrdiff_t>(b), st.data.begin() + static_cast<std::ptrdiff_t>(en));
    weight_map[t.name] = names[static_cast<std::size_t>(k % n_shards)];
    shards[static_cast<std::size_t>(k % n_shards)].push_back(std::move(t));
    ++k;
  }
  for (int i = 0; i < n_shards; ++i) write_safetensors(dir / names[static_cast<std::size_t>(i)], shards[static_cast<std::size_t>(i)]);
  write_json(dir / "model.safetensors.index.json", {{"metadata", {{"total_size", st.data.size()}}}, {"weight_map", weight_map}});
  fs::remove(dir / "model.safetensors");
  return names;
}

nlohmann::json read_json(const fs::path& file) { return nlohmann::json::parse(read_file(file)); }

void write_json(const fs::path& file, const nlohmann::json& j) { write_file(file, j.dump(2)); }

std::vector<fs::path> shared_model_dirs() {
  std::vector<fs::path> dirs{shared_path("models/stories260K")};
  for (const auto& e : fs::directory_iterator(shared_path("models/synthetic")))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin() + 1, dirs.end());
  if (dirs.size() < 2) ADD_FAILURE() << "no synthetic models found";
  return dirs;
}

}  // namespace llmport::test
