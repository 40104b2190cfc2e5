// Writes llmport-records/1: JSON for ids, top-k and logsumexp; a safetensors side file
// for full logits and hidden states (too large for JSON).
#include <fstream>

#include <nlohmann/json.hpp>

#include "llmport/error.hpp"
#include "llmport/records.hpp"
#include "llmport/safetensors_writer.hpp"

namespace llmport {

void write_record_file(const std::filesystem::path& file, const RecordFile& rf) {
  namespace fs = std::filesystem;
  nlohmann::ordered_json j;
  j["format"] = "llmport-records/1";
  j["model"] = rf.model;
  if (rf.architectures.size() == 1) j["architecture"] = rf.architectures.front();
  if (rf.architectures.size() > 1) j["architectures"] = rf.architectures;
  j["producer"] = rf.producer;
  j["compute_dtype"] = rf.compute_dtype;
  j["independent"] = rf.independent;
  if (!rf.versions.empty()) j["versions"] = rf.versions;
  j["n_steps"] = rf.n_steps;
  std::vector<TensorData> side;
  nlohmann::ordered_json seqs = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < rf.sequences.size(); ++i) {
    const RecordSequence& seq = rf.sequences[i];
    const std::string p = "seq" + std::to_string(i) + ".";
    nlohmann::ordered_json s;
    s["name"] = seq.name;
    s["prompt"] = seq.prompt ? nlohmann::ordered_json(*seq.prompt) : nlohmann::ordered_json(nullptr);
    s["prompt_rendering"] = seq.prompt_rendering;
    s["prompt_ids"] = seq.prompt_ids;
    s["tokens"] = seq.tokens();
    if (seq.full_text) s["full_text"] = *seq.full_text;
    if (seq.completion_text) s["completion_text"] = *seq.completion_text;
    if (!seq.prompt_pieces.empty()) s["prompt_tokens"] = seq.prompt_pieces;
    if (!seq.generated_pieces.empty()) s["generated_tokens"] = seq.generated_pieces;
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    // Full logits where a step holds them (a golden's often only at the prompt's last
    // position): rows of the side tensor, with their steps listed unless that is every step.
    std::vector<int> logit_steps;
    std::size_t vocab = 0;
    for (const auto& st : seq.steps) {
      nlohmann::ordered_json e;
      std::vector<int> ids;
      std::vector<float> logits;
      for (const auto& t : st.top) {
        ids.push_back(t.id);
        logits.push_back(t.logit);
      }
      e["ids"] = ids;
      e["logits"] = logits;
      if (st.logsumexp) e["logsumexp"] = *st.logsumexp;
      steps.push_back(e);
      if (vocab == 0) vocab = st.logits.size();
      if (st.logits.empty()) continue;
      // One side tensor [rows, vocab] per sequence: a step of another width has no row.
      if (st.logits.size() != vocab)
        throw ConfigError(file.string() + ": sequence " + seq.name + " step " + std::to_string(steps.size() - 1) +
                          ": full logits of width " + std::to_string(st.logits.size()) + ", its other steps' " +
                          std::to_string(vocab));
      logit_steps.push_back(static_cast<int>(steps.size()) - 1);
    }
    s["steps"] = steps;
    if (!logit_steps.empty()) {
      if (logit_steps.size() != seq.steps.size()) s["logits_steps"] = logit_steps;
      std::vector<float> flat;  // [rows, vocab]
      for (const int k : logit_steps) {
        const auto& l = seq.steps[static_cast<std::size_t>(k)].logits;
        flat.insert(flat.end(), l.begin(), l.end());
      }
      side.push_back(make_tensor(p + "logits", DType::F32,
                                 {static_cast<int64_t>(logit_steps.size()), static_cast<int64_t>(vocab)}, flat));
    }
    const HiddenStates& h = seq.hidden;
    if (!h.empty() && h.n_rows() > 0) {
      s["hidden_positions"] = h.positions;
      const int64_t rows = h.n_rows(), dim = h.emb_dim;
      if (!h.embedding.empty()) side.push_back(make_tensor(p + "embedding", DType::F32, {rows, dim}, h.embedding));
      if (!h.layer_out.empty()) {
        std::vector<float> flat;  // [n_layers, n_rows, emb_dim]
        for (const auto& l : h.layer_out) flat.insert(flat.end(), l.begin(), l.end());
        side.push_back(make_tensor(p + "layer_out", DType::F32,
                                   {static_cast<int64_t>(h.layer_out.size()), rows, dim}, flat));
      }
      if (!h.final_norm.empty()) side.push_back(make_tensor(p + "final_norm", DType::F32, {rows, dim}, h.final_norm));
    }
    seqs.push_back(s);
  }
  j["sequences"] = seqs;
  if (!side.empty()) {
    fs::path side_path = file;
    side_path.replace_extension(".safetensors");
    j["side_file"] = side_path.filename().string();
    write_safetensors(side_path, side, {{"format", "llmport-records/1"}});
  }
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) throw ConfigError(file.string() + ": cannot open for writing");
  out << j.dump(1) << "\n";
  if (!out) throw ConfigError(file.string() + ": write failed");
}

}  // namespace llmport
