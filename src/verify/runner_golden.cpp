// Replays a record file's sequence: the reference along its own trajectory.
#include "llmport/error.hpp"
#include "llmport/runner.hpp"
#include "verify/format.hpp"

namespace llmport {

GoldenRunner::GoldenRunner(std::shared_ptr<const RecordFile> file, int sequence_index) : file_(std::move(file)) {
  if (sequence_index < 0 || sequence_index >= static_cast<int>(file_->sequences.size()))
    throw UsageError(file_->path.string() + ": no sequence " + std::to_string(sequence_index));
  seq_ = &file_->sequences[static_cast<std::size_t>(sequence_index)];
}

RunnerInfo GoldenRunner::info() const {
  RunnerInfo i;
  i.kind = "golden";
  i.dtype = file_->compute_dtype;
  i.independent = file_->independent;
  i.source = file_->path.string() + (file_->producer.empty() ? "" : " (" + file_->producer + ")");
  return i;
}

PrefillRecord GoldenRunner::prefill(std::span<const int> prompt_ids, bool want_hidden) {
  if (std::vector<int>(prompt_ids.begin(), prompt_ids.end()) != seq_->prompt_ids)
    throw UsageError(file_->path.string() + ": sequence " + seq_->name + " has prompt ids " +
                     verify_detail::format_ids(seq_->prompt_ids) + ", asked for " +
                     verify_detail::format_ids(std::vector<int>(prompt_ids.begin(), prompt_ids.end())));
  if (seq_->steps.empty()) throw UsageError(file_->path.string() + ": sequence " + seq_->name + " has no steps");
  PrefillRecord rec;
  rec.last = seq_->steps[0];
  if (want_hidden) rec.hidden = seq_->hidden;
  next_step_ = 1;
  return rec;
}

StepRecord GoldenRunner::decode_step(int token, int pos) {
  if (next_step_ < 1) throw UsageError(file_->path.string() + ": decode_step before prefill");
  const int expect_pos = static_cast<int>(seq_->prompt_ids.size()) + next_step_ - 1;
  if (pos != expect_pos)
    throw UsageError("decode_step: position " + std::to_string(pos) + " is not the KV-cache length " +
                     std::to_string(expect_pos));
  if (next_step_ >= static_cast<int>(seq_->steps.size()))
    throw UsageError(file_->path.string() + ": sequence " + seq_->name + " has only " +
                     std::to_string(seq_->steps.size()) + " steps");
  const int recorded = seq_->steps[static_cast<std::size_t>(next_step_ - 1)].token;
  if (token != recorded)
    throw UsageError(file_->path.string() + ": sequence " + seq_->name + " step " + std::to_string(next_step_) +
                     ": the golden continues from token " + std::to_string(recorded) + ", not " +
                     std::to_string(token) + " (a golden can only replay its own trajectory)");
  return seq_->steps[static_cast<std::size_t>(next_step_++)];
}

}  // namespace llmport
