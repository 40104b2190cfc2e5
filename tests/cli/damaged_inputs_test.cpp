// Damaged-input corpus (issue #17): every case builds one damaged input in a temp dir
// (config.json, safetensors, tokenizer files, chat messages, prompt files, command-line
// flags, output paths), runs the real `llmport` binary on it and requires exit 2, exactly
// one `error:` line on stderr naming the file or field, only printable UTF-8 on stderr (no
// raw bytes of the damaged file), no sanitizer report, and no hang. Nothing is committed
// as a binary: the cases are generated here from shared/models/stories260K.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "deploy/manifest.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr int kDeep = 100000;  // nesting depth of the "deep" cases

std::string deep_array(int depth) { return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']'); }

std::string deep_object(int depth) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s += std::string(static_cast<std::size_t>(depth), '}');
  return s;
}

/// A writable copy of stories260K's top-level files (config, weights, tokenizer files).
fs::path copy_stories(const fs::path& dst) {
  const fs::path src = shared_path("models/stories260K");
  fs::create_directories(dst);
  for (const auto& e : fs::directory_iterator(src))
    if (e.is_regular_file()) {
      fs::copy_file(e.path(), dst / e.path().filename(), fs::copy_options::overwrite_existing);
      fs::permissions(dst / e.path().filename(), fs::perms::owner_read | fs::perms::owner_write,
                      fs::perm_options::add);
    }
  return dst;
}

json read_json_file(const fs::path& f) { return json::parse(read_file(f)); }
void write_json_file(const fs::path& f, const json& j) { write_file(f, j.dump(1)); }

/// Edits config.json of a model copy.
void edit_config(const fs::path& dir, const std::function<void(json&)>& fn) {
  json c = read_json_file(dir / "config.json");
  fn(c);
  write_json_file(dir / "config.json", c);
}

/// Replaces `"key": <value>` text in a JSON file by `"key": raw` (for values json cannot hold).
void set_raw(const fs::path& file, const std::string& key, const std::string& raw) {
  json c = read_json_file(file);
  c[key] = "@@RAW@@";
  std::string s = c.dump(1);
  const auto p = s.find("\"@@RAW@@\"");
  s.replace(p, 9, raw);
  write_file(file, s);
}

struct Safetensors {
  std::string header;
  std::string data;
};

Safetensors read_st(const fs::path& f) {
  const std::string b = read_file(f);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(b[static_cast<std::size_t>(i)]);
  return {b.substr(8, n), b.substr(8 + n)};
}

void write_st(const fs::path& f, const std::string& header, const std::string& data, int64_t len = -1) {
  const uint64_t n = len >= 0 ? static_cast<uint64_t>(len) : header.size();
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  write_file(f, b + header + data);
}

/// Edits the safetensors header (as ordered JSON) of a model copy.
void edit_st(const fs::path& dir, const std::function<void(ordered_json&)>& fn) {
  auto st = read_st(dir / "model.safetensors");
  ordered_json h = ordered_json::parse(st.header);
  fn(h);
  write_st(dir / "model.safetensors", h.dump(), st.data);
}

/// Replaces the first occurrence of `from` in the safetensors header text.
void edit_st_text(const fs::path& dir, const std::string& from, const std::string& to) {
  auto st = read_st(dir / "model.safetensors");
  const auto p = st.header.find(from);
  ASSERT_NE(p, std::string::npos) << from;
  st.header.replace(p, from.size(), to);
  write_st(dir / "model.safetensors", st.header, st.data);
}

void edit_tokenizer(const fs::path& dir, const std::function<void(json&)>& fn) {
  json t = read_json_file(dir / "tokenizer.json");
  fn(t);
  write_json_file(dir / "tokenizer.json", t);
}

/// Only printable ASCII, tab/newline, and well-formed UTF-8 (no 0xff, no raw controls).
bool printable_utf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      ++i;
      continue;
    }
    std::size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

struct Case {
  std::string name;
  /// Builds the damaged input under `dir` (stories260K's files are in dir/m) and returns
  /// the llmport arguments.
  std::function<std::vector<std::string>(const fs::path& dir, const fs::path& model)> setup;
  std::string names;  ///< stderr must contain this (the file or field at fault)
  /// Optional check after the run (e.g. a user file is unchanged).
  std::function<void(const fs::path& dir)> after = nullptr;
};

std::vector<std::string> check_args(const fs::path& m) { return {"check", m.string()}; }
std::vector<std::string> run_args(const fs::path& m) {
  return {"run", m.string(), "--prompt-ids", "1,2,3", "-n", "2"};
}
std::vector<std::string> tokenize_args(const fs::path& m) { return {"tokenize", m.string(), "hello"}; }

std::vector<Case> cases() {
  std::vector<Case> c;
  auto cfg = [&](const std::string& name, std::function<void(json&)> fn, std::string names,
                 bool run = false) {
    c.push_back({"config/" + name,
                 [fn, run](const fs::path&, const fs::path& m) {
                   edit_config(m, fn);
                   return run ? run_args(m) : check_args(m);
                 },
                 names});
  };
  auto cfg_raw = [&](const std::string& name, std::string key, std::string raw, std::string names,
                     bool run = false) {
    c.push_back({"config/" + name,
                 [key, raw, run](const fs::path&, const fs::path& m) {
                   set_raw(m / "config.json", key, raw);
                   return run ? run_args(m) : check_args(m);
                 },
                 names});
  };
  auto cfg_text = [&](const std::string& name, std::string text, std::string names) {
    c.push_back({"config/" + name,
                 [text](const fs::path&, const fs::path& m) {
                   write_file(m / "config.json", text);
                   return check_args(m);
                 },
                 names});
  };

  // ---- config.json (check; run where the field is read only for an accepted model)
  cfg_text("deep_array", "{\"architectures\":[\"LlamaForCausalLM\"],\"x\":" + deep_array(kDeep) + "}", "config.json");
  cfg_text("deep_object", "{\"architectures\":[\"LlamaForCausalLM\"],\"x\":" + deep_object(kDeep) + "}",
           "config.json");
  cfg_raw("deep_text_config", "text_config", deep_object(kDeep), "config.json");
  cfg_raw("rope_theta_1e999", "rope_theta", "1e999", "config.json");
  cfg_raw("vocab_size_1e999", "vocab_size", "-1e999", "config.json");
  cfg_text("truncated", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\":", "config.json");
  cfg_text("empty", "", "config.json");
  cfg_text("raw_ff_byte", "{\"architectures\": [\"Llama\xff\xfe\"], \"x\": \"\x01\"", "config.json");
  cfg_text("invalid_utf8_string", "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"ll\xff\"}", "config.json");
  cfg_text("not_an_object", "[1, 2, 3]", "config.json");
  cfg("eos_2_pow_40", [](json& j) { j["eos_token_id"] = 1LL << 40; }, "eos_token_id", true);
  cfg("eos_list_2_pow_40", [](json& j) { j["eos_token_id"] = {2, 1LL << 40}; }, "eos_token_id", true);
  cfg("bos_2_pow_31", [](json& j) { j["bos_token_id"] = 1LL << 31; }, "bos_token_id", true);
  cfg("eos_beyond_vocab", [](json& j) { j["eos_token_id"] = 600; }, "eos_token_id", true);
  cfg("eos_negative", [](json& j) { j["eos_token_id"] = -1; }, "eos_token_id", true);
  cfg("eos_string", [](json& j) { j["eos_token_id"] = "two"; }, "eos_token_id", true);
  cfg("llama3_orig_mpe_1e300",
      [](json& j) {
        j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 1e300}};
      },
      "original_max_position_embeddings", true);
  cfg("llama3_orig_mpe_fraction",
      [](json& j) {
        j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192.5}};
      },
      "original_max_position_embeddings", true);
  cfg("num_layers_2e9", [](json& j) { j["num_hidden_layers"] = 2000000000; }, "model.safetensors", true);
  cfg("num_layers_2_pow_40", [](json& j) { j["num_hidden_layers"] = 1LL << 40; }, "num_hidden_layers", true);
  cfg("hidden_size_negative", [](json& j) { j["hidden_size"] = -64; }, "hidden_size", true);
  cfg("heads_zero", [](json& j) { j["num_attention_heads"] = 0; }, "num_attention_heads", true);
  cfg("intermediate_string", [](json& j) { j["intermediate_size"] = "172"; }, "intermediate_size", true);
  cfg("mpe_1e300", [](json& j) { j["max_position_embeddings"] = 1e300; }, "max_position_embeddings", true);
  cfg("rms_eps_negative", [](json& j) { j["rms_norm_eps"] = -1.0; }, "rms_norm_eps", true);
  // Values no model has, that ran as silent garbage ("Once Once Once", non-finite logits).
  cfg("rms_eps_7_5", [](json& j) { j["rms_norm_eps"] = 7.5; }, "rms_norm_eps", true);
  cfg("rope_theta_1e-300", [](json& j) { j["rope_theta"] = 1e-300; }, "rope_theta", true);
  cfg("rope_theta_1", [](json& j) { j["rope_theta"] = 1.0; }, "rope_theta", true);
  cfg("head_dim_odd", [](json& j) { j["head_dim"] = 7; }, "head_dim", true);
  cfg("tie_string", [](json& j) { j["tie_word_embeddings"] = "yes"; }, "tie_word_embeddings", true);
  c.push_back({"config/generation_config_eos_2_pow_40",
               [](const fs::path&, const fs::path& m) {
                 json g = read_json_file(m / "generation_config.json");
                 g["eos_token_id"] = (1LL << 32) + 2;
                 write_json_file(m / "generation_config.json", g);
                 return run_args(m);
               },
               "generation_config.json"});
  c.push_back({"config/generation_config_deep",
               [](const fs::path&, const fs::path& m) {
                 write_file(m / "generation_config.json", "{\"x\": " + deep_array(kDeep) + "}");
                 return run_args(m);
               },
               "generation_config.json"});
  c.push_back({"config/config_json_is_a_directory",
               [](const fs::path& d, const fs::path&) {
                 fs::create_directories(d / "dirmodel" / "config.json");
                 return check_args(d / "dirmodel");
               },
               "dirmodel"});

  // ---- safetensors (run loads the weights)
  auto st = [&](const std::string& name, std::function<void(const fs::path&)> fn, std::string names) {
    c.push_back({"safetensors/" + name,
                 [fn](const fs::path&, const fs::path& m) {
                   fn(m);
                   return run_args(m);
                 },
                 names});
  };
  st("deep_metadata", [](const fs::path& m) { edit_st_text(m, "{\"format\":\"pt\"}", "{\"format\":" + deep_array(kDeep) + "}"); },
     "model.safetensors");
  st("deep_shape", [](const fs::path& m) { edit_st_text(m, "\"shape\":[", "\"shape\":[" + deep_array(kDeep) + ","); },
     "model.safetensors");
  st("header_past_eof",
     [](const fs::path& m) {
       auto s = read_st(m / "model.safetensors");
       write_st(m / "model.safetensors", s.header, s.data, 1LL << 40);
     },
     "model.safetensors");
  st("four_bytes", [](const fs::path& m) { write_file(m / "model.safetensors", "abcd"); }, "model.safetensors");
  st("header_not_json",
     [](const fs::path& m) {
       auto s = read_st(m / "model.safetensors");
       write_st(m / "model.safetensors", std::string(s.header.size(), '\xff'), s.data);
     },
     "model.safetensors");
  st("offset_1e999", [](const fs::path& m) { edit_st_text(m, "\"data_offsets\":[0,", "\"data_offsets\":[1e999,"); },
     "model.safetensors");
  st("offset_2_pow_64", [](const fs::path& m) { edit_st_text(m, "\"data_offsets\":[0,", "\"data_offsets\":[18446744073709551616,"); },
     "model.safetensors");
  st("dtype_f64",
     [](const fs::path& m) {
       edit_st(m, [](ordered_json& h) { h["model.norm.weight"]["dtype"] = "F64"; });
     },
     "model.norm.weight");
  st("offsets_past_end",
     [](const fs::path& m) {
       edit_st(m, [](ordered_json& h) {
         auto& e = h["model.norm.weight"];
         e["data_offsets"] = {1ULL << 40, (1ULL << 40) + 256};
       });
     },
     "model.norm.weight");
  st("overlap",
     [](const fs::path& m) {
       edit_st(m, [](ordered_json& h) {
         h["model.norm.weight"]["data_offsets"] = h["model.layers.0.input_layernorm.weight"]["data_offsets"];
       });
     },
     "overlap");
  st("shape_vs_bytes",
     [](const fs::path& m) { edit_st(m, [](ordered_json& h) { h["model.norm.weight"]["shape"] = {65}; }); },
     "model.norm.weight");
  st("huge_shape",
     [](const fs::path& m) {
       edit_st(m, [](ordered_json& h) { h["model.norm.weight"]["shape"] = {1LL << 40, 1LL << 40}; });
     },
     "model.norm.weight");
  st("negative_dim",
     [](const fs::path& m) { edit_st(m, [](ordered_json& h) { h["model.norm.weight"]["shape"] = {-64}; }); },
     "model.norm.weight");
  st("missing_tensor", [](const fs::path& m) { edit_st(m, [](ordered_json& h) { h.erase("model.norm.weight"); }); },
     "model.norm.weight");
  st("unexpected_tensor",
     [](const fs::path& m) {
       edit_st(m, [](ordered_json& h) {
         auto e = h["model.norm.weight"];
         h["model.extra.weight"] = e;
         h["model.extra.weight"]["shape"] = {0};
         h["model.extra.weight"]["data_offsets"] = {0, 0};
       });
     },
     "model.extra.weight");
  st("wrong_shape",
     [](const fs::path& m) {
       edit_st(m, [](ordered_json& h) {
         h["model.norm.weight"]["shape"] = {32, 2};
       });
     },
     "model.norm.weight");
  st("raw_bytes_in_name",
     [](const fs::path& m) {
       edit_st_text(m, "\"model.norm.weight\"", "\"model.norm.weight\xff\xfe\x01\"");
     },
     "model.safetensors");
  st("is_a_directory",
     [](const fs::path& m) {
       fs::remove(m / "model.safetensors");
       fs::create_directories(m / "model.safetensors");
     },
     "model.safetensors");
  // A tensor name twice in the header: one entry would load, the other's bytes under no name.
  st("tensor_name_twice",
     [](const fs::path& m) {
       auto s = read_st(m / "model.safetensors");
       const auto b = s.header.find("\"model.norm.weight\":");
       ASSERT_NE(b, std::string::npos);
       const auto e = s.header.find('}', b);
       s.header.insert(b, s.header.substr(b, e + 1 - b) + ",");
       write_st(m / "model.safetensors", s.header, s.data);
     },
     "key \"model.norm.weight\" appears twice");
  // huggingface/safetensors refuses a data area its tensors do not cover exactly
  // (InvalidOffset, MetadataIncompleteBuffer); llmport loaded such files silently.
  st("data_appended",
     [](const fs::path& m) {
       auto s = read_st(m / "model.safetensors");
       write_st(m / "model.safetensors", s.header, s.data + std::string(16, '\0'));
     },
     "model.safetensors: the data area is");
  c.push_back({"safetensors/data_appended_header_check",  // `check` reads headers only
               [](const fs::path&, const fs::path& m) {
                 auto s = read_st(m / "model.safetensors");
                 write_st(m / "model.safetensors", s.header, s.data + std::string(16, '\0'));
                 return check_args(m);
               },
               "model.safetensors: the data area is"});
  st("data_gap_after_first_tensor",
     [](const fs::path& m) {
       // Every tensor after the lowest-placed one moves 64 bytes on: 64 bytes are no one's.
       auto s = read_st(m / "model.safetensors");
       ordered_json h = ordered_json::parse(s.header);
       std::size_t first_end = s.data.size();
       for (auto it = h.begin(); it != h.end(); ++it)
         if (it.key() != "__metadata__" && it.value()["data_offsets"][0].get<std::size_t>() == 0)
           first_end = it.value()["data_offsets"][1].get<std::size_t>();
       for (auto it = h.begin(); it != h.end(); ++it)
         if (it.key() != "__metadata__" && it.value()["data_offsets"][0].get<std::size_t>() >= first_end)
           for (auto& o : it.value()["data_offsets"]) o = o.get<std::size_t>() + 64;
       write_st(m / "model.safetensors", h.dump(),
                s.data.substr(0, first_end) + std::string(64, '\0') + s.data.substr(first_end));
     },
     "model.safetensors: bytes [");
  auto sharded = [](const fs::path& m, bool dup) {
    // Two shards: every tensor in shard 1 except model.norm.weight (shard 2); with `dup`,
    // shard 2 holds a second copy of model.layers.0.input_layernorm.weight.
    auto s = read_st(m / "model.safetensors");
    ordered_json h = ordered_json::parse(s.header);
    ordered_json h2 = ordered_json::object();
    std::string d2;
    auto move = [&](const std::string& name, bool erase) {
      auto e = h[name];
      const auto b = e["data_offsets"][0].get<std::size_t>(), en = e["data_offsets"][1].get<std::size_t>();
      e["data_offsets"] = {d2.size(), d2.size() + (en - b)};
      d2 += s.data.substr(b, en - b);
      h2[name] = e;
      if (erase) h.erase(name);
    };
    move("model.norm.weight", true);
    if (dup) move("model.layers.0.input_layernorm.weight", false);
    // Shard 1 is repacked so its tensors cover its data area (bytes no tensor claims are
    // an error of their own: data_appended, data_gap_after_embedding).
    std::string d1;
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      auto& e = it.value();
      const auto b = e["data_offsets"][0].get<std::size_t>(), en = e["data_offsets"][1].get<std::size_t>();
      e["data_offsets"] = {d1.size(), d1.size() + (en - b)};
      d1 += s.data.substr(b, en - b);
    }
    write_st(m / "model-00001-of-00002.safetensors", h.dump(), d1);
    write_st(m / "model-00002-of-00002.safetensors", h2.dump(), d2);
    fs::remove(m / "model.safetensors");
    json idx;
    idx["metadata"] = json::object();
    for (auto it = h.begin(); it != h.end(); ++it)
      if (it.key() != "__metadata__") idx["weight_map"][it.key()] = "model-00001-of-00002.safetensors";
    idx["weight_map"]["model.norm.weight"] = "model-00002-of-00002.safetensors";
    write_json_file(m / "model.safetensors.index.json", idx);
  };
  st("tensor_in_two_shards", [sharded](const fs::path& m) { sharded(m, true); },
     "model.layers.0.input_layernorm.weight");
  st("index_deep",
     [sharded](const fs::path& m) {
       sharded(m, false);
       set_raw(m / "model.safetensors.index.json", "metadata", deep_array(kDeep));
     },
     "model.safetensors.index.json");
  st("index_shard_escapes",
     [sharded](const fs::path& m) {
       sharded(m, false);
       json idx = read_json_file(m / "model.safetensors.index.json");
       idx["weight_map"]["model.norm.weight"] = "../model-00002-of-00002.safetensors";
       write_json_file(m / "model.safetensors.index.json", idx);
     },
     "model.safetensors.index.json");
  st("index_missing_shard",
     [sharded](const fs::path& m) {
       sharded(m, false);
       fs::remove(m / "model-00002-of-00002.safetensors");
     },
     "model-00002-of-00002.safetensors");

  // ---- tokenizer files (tokenize)
  auto tk = [&](const std::string& name, std::function<void(const fs::path&)> fn, std::string names) {
    c.push_back({"tokenizer/" + name,
                 [fn](const fs::path&, const fs::path& m) {
                   fn(m);
                   return tokenize_args(m);
                 },
                 names});
  };
  tk("deep_normalizer_chain",
     [](const fs::path& m) {
       std::string s;
       for (int i = 0; i < kDeep / 2; ++i) s += "{\"type\":\"Sequence\",\"normalizers\":[";
       s += "{\"type\":\"Lowercase\"}";
       for (int i = 0; i < kDeep / 2; ++i) s += "]}";
       set_raw(m / "tokenizer.json", "normalizer", s);
     },
     "tokenizer.json");
  tk("vocab_id_2_pow_30", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["vocab"]["hello"] = 1 << 30; }); },
     "tokenizer.json");
  tk("vocab_id_2_pow_26", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["vocab"]["hello"] = 1 << 26; }); },
     "hello");
  tk("vocab_id_2_pow_40",
     [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["vocab"]["hello"] = 1LL << 40; }); },
     "tokenizer.json");
  tk("vocab_id_negative", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["vocab"]["hello"] = -3; }); },
     "hello");
  tk("vocab_id_string", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["vocab"]["hello"] = "3"; }); },
     "hello");
  tk("added_id_2_pow_32_plus_5",
     [](const fs::path& m) {
       edit_tokenizer(m, [](json& t) { t["added_tokens"].push_back({{"id", (1LL << 32) + 5}, {"content", "<x>"}}); });
     },
     "added_tokens");
  tk("added_id_int_max",
     [](const fs::path& m) {
       edit_tokenizer(m, [](json& t) { t["added_tokens"].push_back({{"id", 2147483647}, {"content", "<x>"}}); });
     },
     "added_tokens");
  tk("added_id_2_pow_26",
     [](const fs::path& m) {
       edit_tokenizer(m, [](json& t) { t["added_tokens"].push_back({{"id", 1 << 26}, {"content", "<x>"}}); });
     },
     "added_tokens");
  tk("merge_number", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["merges"].insert(t["model"]["merges"].begin(), 5); }); },
     "merge #0");
  tk("merge_pair_with_number",
     [](const fs::path& m) {
       edit_tokenizer(m, [](json& t) { t["model"]["merges"].insert(t["model"]["merges"].begin(), json::array({"h", "e", 5})); });
     },
     "merge #0");
  tk("vocab_id_null", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["vocab"]["hello"] = nullptr; }); },
     "model.vocab['hello']");
  tk("merges_object", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["merges"] = json::object(); }); },
     "model.merges must be an array");
  tk("byte_fallback_string", [](const fs::path& m) { edit_tokenizer(m, [](json& t) { t["model"]["byte_fallback"] = "yes"; }); },
     "model.byte_fallback");
  tk("tokenizer_config_not_object", [](const fs::path& m) { write_file(m / "tokenizer_config.json", "[]"); },
     "tokenizer_config.json: not a JSON object");
  tk("truncated", [](const fs::path& m) { write_file(m / "tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 1"); },
     "tokenizer.json");
  tk("number_1e999", [](const fs::path& m) { set_raw(m / "tokenizer.json", "version", "1e999"); }, "tokenizer.json");
  tk("bad_regex",
     [](const fs::path& m) {
       edit_tokenizer(m, [](json& t) {
         t["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
       });
     },
     "tokenizer.json");
  tk("raw_ff_in_vocab_key",
     [](const fs::path& m) {
       std::string s = read_file(m / "tokenizer.json");
       const auto p = s.find("\"vocab\"");
       s.insert(s.find('{', p) + 1, "\"\xff\xfe\x01\": \"bad\", ");
       write_file(m / "tokenizer.json", s);
     },
     "tokenizer.json");
  tk("tokenizer_config_fifo",
     [](const fs::path& m) {
       fs::remove(m / "tokenizer_config.json");
       ASSERT_EQ(::mkfifo((m / "tokenizer_config.json").c_str(), 0644), 0);
     },
     "tokenizer_config.json");
  tk("tokenizer_config_directory",
     [](const fs::path& m) {
       fs::remove(m / "tokenizer_config.json");
       fs::create_directories(m / "tokenizer_config.json");
     },
     "tokenizer_config.json");
  tk("tokenizer_config_deep",
     [](const fs::path& m) { write_file(m / "tokenizer_config.json", "{\"x\":" + deep_object(kDeep) + "}"); },
     "tokenizer_config.json");
  tk("special_tokens_map_malformed",
     [](const fs::path& m) {
       json tc = read_json_file(m / "tokenizer_config.json");
       tc.erase("bos_token");
       write_json_file(m / "tokenizer_config.json", tc);
       write_file(m / "special_tokens_map.json", "{\"bos_token\": ");
     },
     "special_tokens_map.json");
  tk("tokenizer_json_directory",
     [](const fs::path& m) {
       fs::remove(m / "tokenizer.json");
       fs::create_directories(m / "tokenizer.json");
     },
     "tokenizer.json");

  // ---- chat templates and their inputs (chat-template)
  auto ct = [&](const std::string& name, std::function<std::vector<std::string>(const fs::path&, const fs::path&)> fn,
                std::string names) { c.push_back({"template/" + name, fn, names}); };
  auto with_template = [](const fs::path& m) {
    json tc = read_json_file(m / "tokenizer_config.json");
    tc["chat_template"] = "{% for m in messages %}{{ m['content'] }}{% endfor %}";
    write_json_file(m / "tokenizer_config.json", tc);
  };
  ct("messages_deep",
     [with_template](const fs::path& d, const fs::path& m) {
       with_template(m);
       write_file(d / "msgs.json", "[{\"role\":\"user\",\"content\":" + deep_array(kDeep) + "}]");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string()};
     },
     "msgs.json");
  ct("messages_malformed",
     [with_template](const fs::path& d, const fs::path& m) {
       with_template(m);
       write_file(d / "msgs.json", "[{\"role\": \"user\", \"content\": \"hi\xff\"");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string()};
     },
     "msgs.json");
  ct("messages_not_array",
     [with_template](const fs::path& d, const fs::path& m) {
       with_template(m);
       write_file(d / "msgs.json", "{\"role\": \"user\"}");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string()};
     },
     "msgs.json");
  ct("var_deep",
     [with_template](const fs::path& d, const fs::path& m) {
       with_template(m);
       write_file(d / "msgs.json", "[{\"role\": \"user\", \"content\": \"hi\"}]");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string(),
                                       "--var", "x=" + deep_array(20000)};  // an argument is at most 128 KiB
     },
     "--var");
  ct("chat_template_number",
     [](const fs::path& d, const fs::path& m) {
       json tc = read_json_file(m / "tokenizer_config.json");
       tc["chat_template"] = 5;
       write_json_file(m / "tokenizer_config.json", tc);
       write_file(d / "msgs.json", "[{\"role\": \"user\", \"content\": \"hi\"}]");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string()};
     },
     "tokenizer_config.json: field 'chat_template'");
  ct("template_file_syntax_error",
     [](const fs::path& d, const fs::path& m) {
       write_file(d / "t.jinja", "{% for m in messages %}{{ m.content }");
       write_file(d / "msgs.json", "[{\"role\": \"user\", \"content\": \"hi\"}]");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string(),
                                       "--template", (d / "t.jinja").string()};
     },
     "t.jinja: chat template line 1: unexpected '}'");
  ct("tokenizer_config_template_raises",
     [](const fs::path& d, const fs::path& m) {
       json tc = read_json_file(m / "tokenizer_config.json");
       tc["chat_template"] = "{{ raise_exception('roles must alternate') }}";
       write_json_file(m / "tokenizer_config.json", tc);
       write_file(d / "msgs.json", "[{\"role\": \"user\", \"content\": \"hi\"}]");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string()};
     },
     "tokenizer_config.json: chat template line 1: raise_exception: roles must alternate");
  // The model's own template, rendered by `run` (an instruct prompt): named by file and field.
  ct("run_tokenizer_config_template_syntax_error",
     [](const fs::path&, const fs::path& m) {
       json tc = read_json_file(m / "tokenizer_config.json");
       tc["chat_template"] = "{% for m in messages %}{{ m.content }";
       write_json_file(m / "tokenizer_config.json", tc);
       return std::vector<std::string>{"run", m.string(), "--prompt", "hi", "-n", "1"};
     },
     "tokenizer_config.json: chat_template: chat template line 1: unexpected '}'");
  ct("tokenizer_config_template_not_json",
     [](const fs::path& d, const fs::path& m) {
       write_file(m / "tokenizer_config.json", "{\"chat_template\": \"{{ x }}");
       write_file(d / "msgs.json", "[{\"role\": \"user\", \"content\": \"hi\"}]");
       return std::vector<std::string>{"chat-template", m.string(), "--messages", (d / "msgs.json").string()};
     },
     "tokenizer_config.json");

  // ---- a damaged tokenizer or golden under check and deploy: exit 2 before a workspace
  // exists (deploy used to create one and report phase 0 BLOCKED, exit 1; check said ACCEPT)
  auto no_workspace = [](const fs::path& d) { EXPECT_FALSE(fs::exists(d / "ws" / "x")) << "a workspace was created"; };
  auto deploy_args = [](const fs::path& d, const fs::path& m, const std::string& reference) {
    std::vector<std::string> a = {"deploy", m.string(), "--workspace", (d / "ws").string(), "--name", "x"};
    if (!reference.empty()) a.insert(a.end(), {"--reference", reference});
    return a;
  };
  c.push_back({"tokenizer/malformed_check",
               [](const fs::path&, const fs::path& m) {
                 write_file(m / "tokenizer.json", "{\"model\":");
                 return check_args(m);
               },
               "tokenizer.json"});
  c.push_back({"tokenizer/malformed_deploy",
               [deploy_args](const fs::path& d, const fs::path& m) {
                 write_file(m / "tokenizer.json", "{\"model\":");
                 return deploy_args(d, m, "");
               },
               "tokenizer.json", no_workspace});
  c.push_back({"reference/golden_malformed_deploy",
               [deploy_args](const fs::path& d, const fs::path& m) {
                 write_file(d / "g.json", "{\"logits\": [");
                 return deploy_args(d, m, "golden:" + (d / "g.json").string());
               },
               "g.json", no_workspace});
  c.push_back({"reference/golden_not_a_golden_deploy",
               [deploy_args](const fs::path& d, const fs::path& m) {
                 return deploy_args(d, m, "golden:" + (m / "config.json").string());
               },
               "config.json", no_workspace});

  // ---- prompt files (verify --prompts, deploy --prompts)
  auto pr = [&](const std::string& name, std::string text, std::string names, bool deploy = false) {
    c.push_back({"prompts/" + name + (deploy ? "_deploy" : "_verify"),
                 [text, deploy](const fs::path& d, const fs::path& m) {
                   write_file(d / "prompts.json", text);
                   if (deploy)
                     return std::vector<std::string>{"deploy", m.string(), "--prompts", (d / "prompts.json").string(),
                                                     "--workspace", (d / "ws").string(), "--name", "x"};
                   return std::vector<std::string>{"verify", m.string(), "--prompts", (d / "prompts.json").string()};
                 },
                 names,
                 [deploy](const fs::path& d) {
                   if (deploy) {
                     EXPECT_FALSE(fs::exists(d / "ws" / "x")) << "a workspace was created";
                   }
                 }});
  };
  for (bool deploy : {false, true}) {
    pr("ids_2_pow_32", "[{\"prompt_ids\": [4294967301, 4294967302, 4294967303]}]", "prompt_ids", deploy);
    pr("ids_negative", "[{\"prompt_ids\": [1, -2]}]", "prompt_ids", deploy);
    pr("ids_beyond_vocab", "[{\"prompt_ids\": [1, 600]}]", "600", deploy);
    pr("malformed", "[{\"prompt_ids\": [1, 2", "prompts.json", deploy);
    pr("deep", "[" + deep_array(kDeep) + "]", "prompts.json", deploy);
    pr("empty_list", "[]", "prompts.json", deploy);
    pr("a_golden", "{\"model\": \"m\", \"cases\": []}", "--reference golden:FILE", deploy);
  }
  c.push_back({"prompts/fifo_verify",
               [](const fs::path& d, const fs::path& m) {
                 EXPECT_EQ(::mkfifo((d / "prompts.json").c_str(), 0644), 0);
                 return std::vector<std::string>{"verify", m.string(), "--prompts", (d / "prompts.json").string()};
               },
               "prompts.json"});

  // ---- command-line flags
  auto flag = [&](const std::string& name, std::function<std::vector<std::string>(const fs::path&)> args,
                  std::string names) {
    c.push_back({"flags/" + name, [args](const fs::path&, const fs::path& m) { return args(m); }, names});
  };
  flag("run_n_int_max", [](const fs::path& m) {
    return std::vector<std::string>{"run", m.string(), "--prompt-ids", "1,2", "-n", "2147483647"};
  }, "--n-tokens");
  flag("run_prompt_ids_2_pow_32", [](const fs::path& m) {
    return std::vector<std::string>{"run", m.string(), "--prompt-ids", "4294967301,4294967302", "-n", "1"};
  }, "--prompt-ids");
  flag("run_prompt_ids_beyond_vocab", [](const fs::path& m) {
    return std::vector<std::string>{"run", m.string(), "--prompt-ids", "1,512", "-n", "1"};
  }, "512");
  flag("run_prompt_ids_garbage", [](const fs::path& m) {
    return std::vector<std::string>{"run", m.string(), "--prompt-ids", "1,x\xff", "-n", "1"};
  }, "--prompt-ids");
  flag("run_prompt_longer_than_context", [](const fs::path& m) {
    std::string ids = "1";
    for (int i = 0; i < 512; ++i) ids += ",5";
    return std::vector<std::string>{"run", m.string(), "--prompt-ids", ids, "-n", "1"};
  }, "context");
  flag("detokenize_2_pow_40", [](const fs::path& m) {
    return std::vector<std::string>{"detokenize", m.string(), "1099511627776"};
  }, "1099511627776");
  flag("diagnosis_ids_2_pow_32", [](const fs::path& m) {
    return std::vector<std::string>{"diagnosis", m.string(), "--prompt-ids", "--prompt", "4294967301"};
  }, "--prompt-ids");
  flag("kernels_validate_huge_dims", [](const fs::path& m) {
    edit_config(m, [](json& j) {
      j["hidden_size"] = 1 << 30;
      j["num_attention_heads"] = 1;
      j["num_key_value_heads"] = 1;
      j.erase("head_dim");
      j["intermediate_size"] = 1 << 30;
    });
    return std::vector<std::string>{"kernels", "validate", m.string(), "--dtype", "fp32"};
  }, "config.json");
  flag("kernels_validate_head_product_overflow", [](const fs::path& m) {
    edit_config(m, [](json& j) {
      j["num_attention_heads"] = 65536;
      j["num_key_value_heads"] = 65536;
      j["head_dim"] = 65536;
    });
    return std::vector<std::string>{"kernels", "validate", m.string(), "--dtype", "fp32"};
  }, "head_dim");
  flag("max_seq_huge", [](const fs::path& m) {
    return std::vector<std::string>{"run", m.string(), "--prompt-ids", "1", "--max-seq", "99999999999"};
  }, "--max-seq");

  // ---- a deployment directory whose deployment.json lacks or mistypes what serve reads:
  // a record as deploy writes it (stories260K, fp32), one field damaged
  auto manifest = [&](const std::string& name, std::function<std::string(json)> damage, std::string names) {
    c.push_back({"deployment/" + name,
                 [damage](const fs::path& d, const fs::path&) {
                   llmport::deploy::Manifest m;
                   m.name = "dep";
                   m.model_dir = shared_path("models/stories260K");
                   m.target = "cpu";
                   m.dtype = "fp32";
                   m.reference.kind = "oracle";
                   write_file(d / "dep" / "deployment.json", damage(m.to_json()));
                   return std::vector<std::string>{"serve", (d / "dep").string(), "--port", "0"};
                 },
                 names});
  };
  auto set = [](std::vector<std::string> path, json value) {
    return [path, value](json j) {
      json* at = &j;
      for (const auto& k : path) at = &(*at)[k];
      *at = value;
      return j.dump(2);
    };
  };
  manifest("serve_empty_object", [](json) { return std::string("{}"); },
           "deployment.json: format is not llmport-deployment/1");
  manifest("serve_path_not_text", set({"model", "path"}, 7),
           "deployment.json: not a valid deployment record: model.path: expected a string");
  manifest("serve_threads_text", set({"threads"}, "two"),
           "deployment.json: not a valid deployment record: threads: expected an integer");
  manifest("serve_not_json", [](json) { return std::string("{\"model\":"); }, "deployment.json: malformed JSON");
  manifest("serve_dtype_unknown", set({"dtype"}, "fp8"), "deployment.json: not a valid deployment record: dtype: unknown dtype 'fp8'");
  manifest("serve_model_path_gone", set({"model", "path"}, "/nonexistent/model"),
           "deployment.json: model.path: /nonexistent/model is not a directory");
  // Beyond the CLI's limit (4 x the hardware threads): named here, not by the engine once the
  // server listens (where a load error could leave the listener running: a hang).
  manifest("serve_threads_beyond_the_machine", set({"threads"}, 100000), "deployment.json: threads: expected an integer in [0, ");

  // ---- output paths (an existing user file is kept)
  auto keep = [](const fs::path& f) {
    return [f](const fs::path& d) { EXPECT_EQ(read_file(d / f), "user data\n") << f << " was overwritten"; };
  };
  c.push_back({"output/diagnosis_svg_existing",
               [](const fs::path& d, const fs::path& m) {
                 write_file(d / "plot.svg", "user data\n");
                 return std::vector<std::string>{"diagnosis", m.string(), "--prompt-ids", "--prompt", "1,2,3",
                                                 "--svg", (d / "plot.svg").string()};
               },
               "plot.svg", keep("plot.svg")});
  c.push_back({"output/diagnosis_out_existing",
               [](const fs::path& d, const fs::path& m) {
                 write_file(d / "out" / "diagnosis.json", "user data\n");
                 return std::vector<std::string>{"diagnosis", m.string(), "--prompt-ids", "--prompt", "1,2,3",
                                                 "--out", (d / "out").string()};
               },
               "diagnosis.json", keep("out/diagnosis.json")});
  c.push_back({"output/diagnosis_svg_is_directory",
               [](const fs::path& d, const fs::path& m) {
                 fs::create_directories(d / "plot.svg");
                 return std::vector<std::string>{"diagnosis", m.string(), "--prompt-ids", "--prompt", "1,2,3",
                                                 "--svg", (d / "plot.svg").string()};
               },
               "plot.svg"});
  c.push_back({"output/diagnosis_out_is_file",
               [](const fs::path& d, const fs::path& m) {
                 write_file(d / "out", "user data\n");
                 return std::vector<std::string>{"diagnosis", m.string(), "--prompt-ids", "--prompt", "1,2,3",
                                                 "--out", (d / "out").string()};
               },
               "out", keep("out")});
  c.push_back({"output/kernels_registry_user_markdown",
               [](const fs::path& d, const fs::path& m) {
                 write_file(d / "reg" / "supported_kernels.md", "user data\n");
                 return std::vector<std::string>{"kernels", "validate", m.string(), "--registry",
                                                 (d / "reg").string()};
               },
               "supported_kernels.md", keep("reg/supported_kernels.md")});
  c.push_back({"output/synth_out_nonempty",
               [](const fs::path& d, const fs::path&) {
                 write_file(d / "syn" / "notes.txt", "user data\n");
                 return std::vector<std::string>{"synth", "--preset", "tiny-llama", "--out", (d / "syn").string()};
               },
               "syn", keep("syn/notes.txt")});
  c.push_back({"output/deploy_workspace_not_a_deployment",
               [](const fs::path& d, const fs::path& m) {
                 write_file(d / "ws" / "x" / "README.md", "user data\n");
                 return std::vector<std::string>{"deploy", m.string(), "--workspace", (d / "ws").string(), "--name",
                                                 "x"};
               },
               "ws/x", keep("ws/x/README.md")});
  return c;
}

class DamagedInput : public ::testing::TestWithParam<Case> {};

TEST_P(DamagedInput, ExitTwoWithOneErrorLineNamingTheInput) {
  const Case& tc = GetParam();
  TempDir tmp;
  const fs::path m = copy_stories(tmp.path() / "m");
  std::vector<std::string> args;
  ASSERT_NO_FATAL_FAILURE(args = tc.setup(tmp.path(), m));
  const RunResult r = run_llmport(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  int error_lines = 0;
  std::size_t pos = 0;
  while (pos < r.err.size()) {
    const auto nl = r.err.find('\n', pos);
    const std::string line = r.err.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    if (line.rfind("error:", 0) == 0) ++error_lines;
    pos = nl == std::string::npos ? r.err.size() : nl + 1;
  }
  EXPECT_EQ(error_lines, 1) << r.err;
  EXPECT_NE(r.err.find(tc.names), std::string::npos) << "stderr does not name '" << tc.names << "': " << r.err;
  EXPECT_TRUE(printable_utf8(r.err)) << "raw bytes on stderr: " << r.err;
  EXPECT_LT(r.err.size(), 2000u) << r.err;
  EXPECT_EQ(r.err.find("Sanitizer"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("runtime error:"), std::string::npos) << r.err;
  if (tc.after) tc.after(tmp.path());
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string s = info.param.name;
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Corpus, DamagedInput, ::testing::ValuesIn(cases()), case_name);

TEST(DamagedInputCorpus, HasAtLeastSixtyCasesOverEveryKind) {
  const auto all = cases();
  EXPECT_GE(all.size(), 60u);
  for (const char* kind : {"config/", "safetensors/", "tokenizer/", "template/", "prompts/", "flags/", "output/"}) {
    int n = 0;
    for (const auto& c : all) n += c.name.rfind(kind, 0) == 0 ? 1 : 0;
    EXPECT_GE(n, 4) << kind;
  }
}

}  // namespace
}  // namespace llmport::test
