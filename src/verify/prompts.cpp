// Prompt files: the built-in base/instruct sets (data/prompts) and --prompts FILE.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "llmport/data_dir.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/verify.hpp"
#include "verify/json_field.hpp"

namespace llmport {

namespace {
// Keys that would change what runs if verify read them, and that it does not read: refused
// naming the key (n_steps of 0 or 100000 ran 32 steps; "chat": false on a prompt rendered
// the template). Other keys are descriptions ("kind", "description") and stay free.
void refuse_unread(const verify_detail::JsonField& f, bool root) {
  static const char* const kUnread[] = {"n_steps", "steps", "max_new_tokens", "max_tokens", "n_tokens",
                                        "max_length", "n_predict", "messages", "prompt_rendering",
                                        "rendering", "chat_template", "system", "system_prompt",
                                        "system_message", "add_bos", "add_special_tokens", "temperature",
                                        "top_p", "top_k", "min_p", "repetition_penalty", "stop", "seed"};
  for (const auto& [key, value] : f.raw().items()) {
    (void)value;
    std::string lower = key;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool unread = std::any_of(std::begin(kUnread), std::end(kUnread), [&](const char* k) { return lower == k; });
    if (unread || (lower == "chat" && key != "chat"))
      f.at(key).fail(std::string("is not read by verify (the step count is --quick/--full's or the golden's; "
                                 "rendering is the file's \"chat\"; sampling is greedy): remove it"));
  }
  if (!root && f.has("chat"))
    f.at("chat").fail("rendering is chosen for the whole file: put \"chat\" at its root");
  if (!root && f.has("text") && f.has("prompt"))
    f.at("prompt").fail("given beside \"text\": one prompt text per entry");
}
}  // namespace

std::vector<PromptSpec> read_prompt_file(const std::filesystem::path& file, std::optional<bool>* chat) {
  const nlohmann::json j = parse_json_text(read_text_file(file), file.string());
  verify_detail::JsonField root(j, file, "");
  // A golden given as --prompts would only say "prompts: missing"; name what it is.
  if (j.is_object() && !root.has("prompts") && (root.has("cases") || root.has("sequences")))
    root.fail("holds no \"prompts\" but golden records (\"cases\"/\"sequences\"): a golden is given as "
              "--reference golden:FILE, and runs its own prompts");
  if (j.is_object()) {
    refuse_unread(root, true);
    if (root.has("chat")) {
      if (!root.at("chat").raw().is_boolean()) root.at("chat").fail("expected true or false");
      if (chat) *chat = root.at("chat").raw().get<bool>();
    }
  }
  verify_detail::JsonField list = j.is_object() ? root.at("prompts") : root;
  std::vector<PromptSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto f = list.at(i);
    PromptSpec p;
    p.name = "prompt" + std::to_string(i);
    if (f.raw().is_string()) {
      p.text = f.str();
    } else if (f.raw().is_object()) {
      refuse_unread(f, false);
      if (f.has("name")) p.name = f.at("name").str();
      if (f.has("text")) p.text = f.at("text").str();
      else if (f.has("prompt")) p.text = f.at("prompt").str();
      if (f.has("prompt_ids")) p.ids = f.at("prompt_ids").ints();
      if (!p.text && !p.ids) f.fail("needs \"text\" (or \"prompt\") or \"prompt_ids\"");
      if (p.ids && p.ids->empty()) f.at("prompt_ids").fail("empty");
      if (p.ids)
        for (std::size_t k = 0; k < p.ids->size(); ++k)
          if ((*p.ids)[k] < 0) f.at("prompt_ids").at(k).fail("negative token id");
    } else {
      f.fail("expected a string or an object");
    }
    out.push_back(std::move(p));
  }
  if (out.empty()) list.fail("no prompts");
  return out;
}

std::vector<PromptSpec> builtin_id_prompts(int vocab_size, int context, int n_steps) {
  if (vocab_size <= 0) throw UsageError("builtin_id_prompts: vocab_size must be > 0");
  // Lengths cover a 1-token prefill and prompts longer than 16 (several GEMM row tiles);
  // the first one (deploy's phase-0/2 prompt, the Makefile default) has many positions.
  static constexpr int kLengths[] = {20, 1, 8, 33, 3, 12, 48, 5};
  const int cap = std::max(1, context - n_steps);
  uint64_t state = kIdPromptSeed;
  auto next = [&state] {  // splitmix64: the same ids on every platform
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  std::vector<PromptSpec> out;
  for (int len : kLengths) {
    PromptSpec p;
    const int n = std::min(len, cap);
    p.name = "ids" + std::to_string(out.size()) + "_len" + std::to_string(n);
    std::vector<int> ids(static_cast<std::size_t>(n));  // [n]
    for (int& id : ids) id = static_cast<int>(next() % static_cast<uint64_t>(vocab_size));
    p.ids = std::move(ids);
    out.push_back(std::move(p));
  }
  return out;
}

std::filesystem::path prompt_set_dir() {
  return data_dir() / "prompts";
}

}  // namespace llmport
