// Reads record files: llmport-records/1 (+ safetensors side file), the stories260K golden
// and the synthetic golden, each as it is, into one RecordFile.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/records.hpp"
#include "llmport/weights.hpp"
#include "verify/format.hpp"
#include "verify/json_field.hpp"
#include "llmport/verify.hpp"
#include "verify/print_digits.hpp"
#include "verify/record_checks.hpp"

namespace llmport {
namespace {
namespace fs = std::filesystem;
using verify_detail::JsonField;

std::string opt_str(const JsonField& f, const std::string& key) {
  return f.has(key) && f.raw().at(key).is_string() ? f.at(key).str() : std::string();
}

// The HF classes a file states, wherever the formats put them: `architecture` or
// `architectures`, a string or a list of strings, at the root or in the `reference` object.
// Anything else there is malformed (a statement that cannot be read is not no statement).
void read_architectures(const JsonField& root, RecordFile& rf) {
  auto read = [&](const JsonField& where) {
    for (const char* key : {"architecture", "architectures"}) {
      if (!where.raw().is_object() || !where.raw().contains(key)) continue;  // null is no class name
      const JsonField f = where.at(key);
      if (f.raw().is_string()) {
        rf.architectures.push_back(f.str());
        continue;
      }
      if (!f.raw().is_array() || f.size() == 0) f.fail("expected a class name or a list of them");
      for (std::size_t i = 0; i < f.size(); ++i) rf.architectures.push_back(f.at(i).str());
    }
  };
  read(root);
  if (root.has("reference") && root.raw().at("reference").is_object()) read(root.at("reference"));
}

// A statement of independence (absent = not stated, which leaves the verdict to the producer
// and content rules of assess_provenance). Only ever lowers it: one false anywhere wins.
void read_independent(const JsonField& where, RecordFile& rf) {
  if (!where.has("independent")) return;
  if (!where.raw().at("independent").is_boolean()) where.at("independent").fail("expected true or false");
  if (!where.raw().at("independent").get<bool>()) rf.independent = false;
}

// Who produced the file, in whichever format's place it says so: root "producer", root
// "reference" as a string, or the reference object's "tool"/"producer"; the "independent"
// flag at the root or in the reference object; the precision in root "compute_dtype" or the
// reference object's. Every format reads every place, so a claim cannot hide in a field
// another format uses; several statements are joined with "; " (the producer rules and
// kl_bound_for see them all).
// Any other metadata string that names llmport as a word (mentions_llmport): under a key of
// its own ("generator", "Producer", "generator.name"), on a case, in a note, in "model"
// unless it is a path. Not read: the format tag, a model path, a file, a URL or a case (a
// user's model path may well contain "llmport"), and the texts a golden records (prompts,
// decoded tokens, completions).
bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}
bool is_content_key(const std::string& key, bool in_array) {
  std::string k = key;
  for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k == "format" || k == "text" || k == "completion" || k == "url" || k == "path" ||
      k == "file" || k == "dir" || (in_array && (k == "name" || k == "title")))
    return true;
  // Prompt texts ("prompt", "prompts", "system_prompt"), not every key that says prompt:
  // {"prompt_source": "copied from llmport run"} is a producer statement.
  if (k == "prompts" || ends_with(k, "prompt") || ends_with(k, "_prompts")) return true;
  for (const char* tail : {"_text", "_path", "_file", "_dir", "_url", "token", "tokens"})
    if (ends_with(k, tail)) return true;
  return false;
}
using OrderedJson = nlohmann::ordered_json;

void note_mention(const std::string& v, std::vector<std::string>& out) {
  if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
}

// Strings without spaces side by side (array elements, or an object's values in file order)
// read as one word, as they show: ["llm", "port"] is "llmport". A run is broken by anything
// else (a sentence, a number, a content key), so notes like ["an LLM", "port of ..."] stay two.
class FragmentRun {
 public:
  explicit FragmentRun(std::vector<std::string>& out) : out_(out) {}
  ~FragmentRun() { flush(); }
  FragmentRun(const FragmentRun&) = delete;
  FragmentRun& operator=(const FragmentRun&) = delete;
  void add(const OrderedJson& v) {
    const bool fragment = v.is_string() && !v.get_ref<const std::string&>().empty() &&
                          std::none_of(v.get_ref<const std::string&>().begin(), v.get_ref<const std::string&>().end(),
                                       [](unsigned char c) { return std::isspace(c); });
    if (!fragment) return flush();
    joined_ += v.get<std::string>();
    ++n_;
  }
  void flush() {
    if (n_ > 1 && mentions_llmport(joined_)) note_mention(joined_, out_);
    joined_.clear();
    n_ = 0;
  }

 private:
  std::vector<std::string>& out_;
  std::string joined_;
  int n_ = 0;
};

// A key names its value's owner: {"versions": {"llmport": "0.3"}} says llmport made the file.
// A key that is a path (a file's sha keyed by its name) is not read, like a path value.
bool key_mentions_llmport(const std::string& key) {
  return key.find('/') == std::string::npos && key.find('\\') == std::string::npos && mentions_llmport(key);
}

// What names the model is read like any note ("stories260K as run by llmport" says who ran
// it) unless it is a path or a hub id: a user's model directory may well contain "llmport".
bool is_model_path(const std::string& key, const OrderedJson& v) {
  std::string k = key;
  for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k != "model") return false;
  if (!v.is_string()) return true;
  const std::string& s = v.get_ref<const std::string&>();
  return s.find('/') != std::string::npos || s.find('\\') != std::string::npos;
}

void collect_llmport_mentions(const OrderedJson& j, bool in_array, std::vector<std::string>& out) {
  if (j.is_string()) {
    if (mentions_llmport(j.get_ref<const std::string&>())) note_mention(j.get<std::string>(), out);
  } else if (j.is_object()) {
    FragmentRun run(out);
    for (const auto& [k, v] : j.items()) {
      if (key_mentions_llmport(k)) note_mention(k, out);
      if (is_model_path(k, v)) {
        run.flush();
        continue;
      }
      if (is_content_key(k, in_array)) {
        run.flush();
        continue;
      }
      run.add(v);
      collect_llmport_mentions(v, false, out);
    }
  } else if (j.is_array()) {
    FragmentRun run(out);
    for (const auto& v : j) {
      run.add(v);
      if (v.is_structured() || v.is_string()) collect_llmport_mentions(v, true, out);
    }
  }
}

void read_provenance(const JsonField& root, const OrderedJson& ordered, RecordFile& rf) {
  std::vector<std::string> producers, dtypes;
  auto add = [](std::vector<std::string>& to, const JsonField& f, const std::string& key) {
    if (!f.has(key)) return;
    const std::string v = f.at(key).str();
    if (std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
  };
  rf.independent = true;
  read_independent(root, rf);
  add(producers, root, "producer");
  // The precision a reference states, under any of the names producers use for it (not
  // "weights_dtype": the synthetic goldens compute in float32 from bf16 weights).
  static const char* const kDtypeKeys[] = {"compute_dtype", "dtype", "torch_dtype", "precision"};
  for (const char* key : kDtypeKeys) add(dtypes, root, key);
  if (root.has("reference")) {
    const JsonField r = root.at("reference");
    if (r.raw().is_object()) {
      add(producers, r, "tool");
      add(producers, r, "producer");
      for (const char* key : kDtypeKeys) add(dtypes, r, key);
      read_independent(r, rf);
    } else {
      add(producers, root, "reference");
    }
  }
  // A statement about one sequence counts as one about the file: a case computed in bf16
  // held to the fp32 bound was a plain PASS, its own noise unaccounted.
  for (const char* list : {"cases", "sequences"}) {
    if (!root.has(list) || !root.at(list).raw().is_array()) continue;
    const JsonField l = root.at(list);
    for (std::size_t i = 0; i < l.size(); ++i) {
      const JsonField c = l.at(i);
      if (!c.raw().is_object()) continue;
      add(producers, c, "producer");
      for (const char* key : kDtypeKeys) add(dtypes, c, key);
    }
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : "; ") + x;
    return out;
  };
  collect_llmport_mentions(ordered, false, producers);
  rf.producer = join(producers);
  rf.compute_dtype = join(dtypes);
}

// {"python": "3.11.2", "torch": ..., "transformers": ...} as the producing program reported.
void read_versions(const JsonField& root, RecordFile& rf) {
  if (!root.has("versions")) return;
  const JsonField v = root.at("versions");
  if (!v.raw().is_object()) v.fail("expected an object of version strings");
  for (const auto& [k, val] : v.raw().items())
    rf.versions[k] = val.is_string() ? val.get<std::string>() : val.dump();
}

// A top-k list as the gates read it: distinct ids, logits sorted descending (ties in any
// order). A list that repeats an id or is out of order was not produced by a top-k.
void check_top(const JsonField& f, const std::vector<TopEntry>& top) {
  for (std::size_t i = 0; i < top.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (top[j].id == top[i].id) f.at(i).fail("token id " + std::to_string(top[i].id) + " appears twice");
    if (i > 0 && top[i].logit > top[i - 1].logit) f.at(i).fail("logits are not sorted in descending order");
  }
}

// Top-k entries from parallel arrays (ids, logits), checked sorted-compatible lengths.
std::vector<TopEntry> top_from_arrays(const JsonField& ids_f, const JsonField& logits_f) {
  auto ids = ids_f.ints();
  auto logits = logits_f.floats();
  if (ids.empty()) ids_f.fail("empty top-k list");
  if (ids.size() != logits.size())
    logits_f.fail("has " + std::to_string(logits.size()) + " entries, ids has " +
                  std::to_string(ids.size()));
  std::vector<TopEntry> top(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) ids_f.at(i).fail("negative token id");
    top[i] = {ids[i], logits[i]};
  }
  check_top(ids_f, top);
  return top;
}

// The width most of a sequence's hidden-state records have (ties: the first recorded):
// the one that is cut or padded is then the one named, not every record after it.
int common_width(const HiddenStates& h) {
  std::vector<std::size_t> sizes;
  if (!h.embedding.empty()) sizes.push_back(h.embedding.size());
  for (const auto& l : h.layer_out) sizes.push_back(l.size());
  if (!h.final_norm.empty()) sizes.push_back(h.final_norm.size());
  std::size_t best = 0;
  std::ptrdiff_t best_n = 0;
  for (std::size_t s : sizes)
    if (const auto n = std::count(sizes.begin(), sizes.end(), s); n > best_n) {
      best = s;
      best_n = n;
    }
  return static_cast<int>(best);
}

void check_vector(const JsonField& f, const std::vector<float>& v, int emb_dim) {
  if (emb_dim > 0 && static_cast<int>(v.size()) != emb_dim)
    f.fail("has " + std::to_string(v.size()) + " values, expected emb_dim " + std::to_string(emb_dim));
}

// A step that contradicts itself (record_checks.hpp) is malformed: named by its field.
// The step's print resolution is set first: the checks allow for the digits it was printed with.
void check_step(const JsonField& f, StepRecord& st, const verify_detail::SequenceDigits& digits) {
  verify_detail::set_print_half_units(st, digits);
  const std::string why = verify_detail::step_inconsistency(st);
  if (!why.empty()) f.fail(why);
}

// The greedy steps of one sequence: `tokens` (the chosen ids) beside `steps` (each a top-k
// of ids and logits, optionally logsumexp), both n_steps long (`count_name` names that
// count in the error), each step checked consistent with its token.
std::vector<StepRecord> read_steps(const JsonField& tokens_f, const JsonField& steps_f, int n_steps,
                                   const std::string& count_name) {
  const auto tokens = tokens_f.ints();
  if (static_cast<int>(tokens.size()) != n_steps)
    tokens_f.fail("has " + std::to_string(tokens.size()) + " tokens, " + count_name + " is " + std::to_string(n_steps));
  if (static_cast<int>(steps_f.size()) != n_steps)
    steps_f.fail("has " + std::to_string(steps_f.size()) + " steps, " + count_name + " is " + std::to_string(n_steps));
  std::vector<StepRecord> steps;
  for (std::size_t s = 0; s < steps_f.size(); ++s) {
    const JsonField ef = steps_f.at(s);
    StepRecord st;
    st.top = top_from_arrays(ef.at("ids"), ef.at("logits"));
    st.token = tokens[s];
    if (ef.has("logsumexp")) st.logsumexp = ef.at("logsumexp").float32();
    steps.push_back(std::move(st));
  }
  return steps;
}

// How far a printed top-1 margin may lie from its step's top logits: each logit and the
// margin off by up to the logits' half unit (the margin may be printed with fewer digits
// than the logits, hence 1e-3 of it), and float32 rounding of the subtraction.
double margin_slack(const StepRecord& st) {
  const double l0 = st.top[0].logit, l1 = st.top[1].logit;
  return 3 * std::max(st.top_half_unit(0), st.top_half_unit(1)) + 1e-3 * std::abs(l0 - l1) + 1e-6 * (std::abs(l0) + std::abs(l1)) + 1e-6;
}

// The stories golden's fields derived from others (its step index, the position the step's
// logits were computed at, the top-1 margin and the case's smallest one): verify uses none
// of them, so a value that contradicts what it derives from is said in `out` (an edited or
// foreign file), not refused: a golden whose top lists were edited and its margins not is
// still judged by its top lists. `last` is len(prompt_ids) - 1.
void check_derived_fields(const JsonField& cf, const JsonField& steps, const std::vector<StepRecord>& recs,
                          int last, std::vector<std::string>& out) {
  const auto said = [&](const JsonField& f, const std::string& why) { out.push_back(f.message(why)); };
  std::optional<double> min_margin;
  double slack = 0;
  for (std::size_t s = 0; s < recs.size(); ++s) {
    const JsonField sf = steps.at(s);
    const int step = static_cast<int>(s);
    if (sf.has("step") && sf.at("step").integer() != step)
      said(sf.at("step"), "is not the step's index " + std::to_string(step));
    if (sf.has("position") && sf.at("position").integer() != last + step)
      said(sf.at("position"), "is not len(prompt_ids) - 1 + step = " + std::to_string(last + step));
    if (recs[s].top.size() < 2) continue;
    const double margin = static_cast<double>(recs[s].top[0].logit) - recs[s].top[1].logit;
    const double step_slack = margin_slack(recs[s]);
    slack = std::max(slack, step_slack);
    min_margin = std::min(min_margin.value_or(margin), margin);
    if (!sf.has("top1_minus_top2")) continue;
    const double printed = sf.at("top1_minus_top2").number();
    if (!(std::abs(printed - margin) <= step_slack))
      said(sf.at("top1_minus_top2"), "is not top5[0].logit - top5[1].logit = " + verify_detail::fmt_g(margin, 9));
  }
  if (cf.has("min_top1_margin") && min_margin &&
      !(std::abs(cf.at("min_top1_margin").number() - *min_margin) <= slack))
    said(cf.at("min_top1_margin"), "is not the smallest step margin top5[0].logit - top5[1].logit = " +
                                       verify_detail::fmt_g(*min_margin, 9));
}

// ------------------------------------------------------------------ stories260K golden
// The texts a reference printed beside its ids (RecordSequence::full_text and friends).
// They are compared where they overlap the ids (a golden cut to fewer steps keeps its longer
// texts); a list that is not an array of strings is not read.
void read_texts(const JsonField& cf, RecordSequence& seq) {
  if (cf.has("full_text")) seq.full_text = cf.at("full_text").str();
  if (cf.has("completion_text")) seq.completion_text = cf.at("completion_text").str();
  const auto strings = [&](const char* key) {
    std::vector<std::string> out;
    const JsonField f = cf.at(key);
    for (std::size_t i = 0; i < f.size(); ++i) out.push_back(f.at(i).str());
    return out;
  };
  if (cf.has("prompt_tokens") && cf.at("prompt_tokens").raw().is_array()) seq.prompt_pieces = strings("prompt_tokens");
  if (cf.has("generated_tokens") && cf.at("generated_tokens").raw().is_array())
    seq.generated_pieces = strings("generated_tokens");
}

RecordFile read_stories(const nlohmann::json& j, const OrderedJson& ordered, const fs::path& file) {
  JsonField root(j, file, "");
  RecordFile rf;
  rf.format = "stories-golden";
  rf.path = file;
  rf.model = opt_str(root, "model");
  read_architectures(root, rf);
  read_provenance(root, ordered, rf);
  if (rf.compute_dtype.empty()) rf.compute_dtype = "float32";  // the format's numpy forward
  const JsonField cases = root.at("cases");
  if (cases.size() == 0) cases.fail("no cases");
  rf.n_steps = root.has("steps") ? root.at("steps").integer() : -1;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const JsonField cf = cases.at(c);
    RecordSequence seq;
    seq.name = cf.has("name") ? cf.at("name").str() : "case" + std::to_string(c);
    if (cf.has("prompt")) seq.prompt = cf.at("prompt").str();
    seq.prompt_rendering = "raw";
    seq.prompt_ids = cf.at("prompt_ids").ints();
    if (seq.prompt_ids.empty()) cf.at("prompt_ids").fail("empty");
    const auto gen = cf.at("generated_ids").ints();
    const JsonField steps = cf.at("steps");
    const int n_steps = cf.has("n_steps") ? cf.at("n_steps").integer() : static_cast<int>(gen.size());
    if (static_cast<int>(gen.size()) != n_steps)
      cf.at("generated_ids").fail("has " + std::to_string(gen.size()) + " ids, n_steps is " +
                                  std::to_string(n_steps));
    if (static_cast<int>(steps.size()) != n_steps)
      steps.fail("has " + std::to_string(steps.size()) + " steps, n_steps is " + std::to_string(n_steps));
    if (rf.n_steps < 0) rf.n_steps = n_steps;
    if (n_steps != rf.n_steps)
      cf.at("n_steps").fail("differs from the file's step count " + std::to_string(rf.n_steps));
    for (std::size_t s = 0; s < steps.size(); ++s) {
      const JsonField sf = steps.at(s);
      const JsonField t5 = sf.at("top5");
      StepRecord st;
      for (std::size_t e = 0; e < t5.size(); ++e) {
        const JsonField ef = t5.at(e);
        const int id = ef.at("id").integer();
        if (id < 0) ef.at("id").fail("negative token id");
        st.top.push_back({id, static_cast<float>(ef.at("logit").float32())});
      }
      if (st.top.empty()) t5.fail("empty top-5 list");
      check_top(t5, st.top);
      st.token = gen[s];
      if (sf.has("token_id") && sf.at("token_id").integer() != gen[s])
        sf.at("token_id").fail("differs from generated_ids[" + std::to_string(s) + "]");
      if (sf.has("logsumexp")) st.logsumexp = sf.at("logsumexp").float32();
      seq.steps.push_back(std::move(st));
    }
    if (cf.has("prompt_last_logits") && !seq.steps.empty())
      seq.steps[0].logits = cf.at("prompt_last_logits").floats();
    read_texts(cf, seq);
    const auto digits = verify_detail::scan_print_digits(cf.raw());
    for (std::size_t s = 0; s < seq.steps.size(); ++s) check_step(steps.at(s), seq.steps[s], digits);
    check_derived_fields(cf, steps, seq.steps, static_cast<int>(seq.prompt_ids.size()) - 1,
                         rf.unused_field_contradictions);
    if (cf.has("hidden_states_last_position")) {
      const JsonField hf = cf.at("hidden_states_last_position");
      const int last = static_cast<int>(seq.prompt_ids.size()) - 1;
      if (cf.has("prompt_last_position") && cf.at("prompt_last_position").integer() != last)
        cf.at("prompt_last_position").fail("is not len(prompt_ids) - 1 = " + std::to_string(last));
      seq.hidden.positions = {last};
      if (hf.has("embedding")) seq.hidden.embedding = hf.at("embedding").floats();
      const JsonField lo = hf.at("layer_outputs");
      for (std::size_t l = 0; l < lo.size(); ++l) seq.hidden.layer_out.push_back(lo.at(l).floats());
      if (hf.has("final_norm")) seq.hidden.final_norm = hf.at("final_norm").floats();
      seq.hidden.emb_dim = common_width(seq.hidden);
      for (std::size_t l = 0; l < lo.size(); ++l) check_vector(lo.at(l), seq.hidden.layer_out[l], seq.hidden.emb_dim);
      if (hf.has("embedding")) check_vector(hf.at("embedding"), seq.hidden.embedding, seq.hidden.emb_dim);
      if (hf.has("final_norm")) check_vector(hf.at("final_norm"), seq.hidden.final_norm, seq.hidden.emb_dim);
    }
    rf.sequences.push_back(std::move(seq));
  }
  return rf;
}

// ------------------------------------------------------------------ synthetic golden
RecordFile read_synthetic(const nlohmann::json& j, const OrderedJson& ordered, const fs::path& file) {
  JsonField root(j, file, "");
  RecordFile rf;
  rf.format = root.at("format").str();
  rf.path = file;
  rf.model = opt_str(root, "model");
  read_architectures(root, rf);
  read_provenance(root, ordered, rf);
  rf.n_steps = root.at("max_new_tokens").integer();
  if (rf.n_steps <= 0) root.at("max_new_tokens").fail("must be > 0");
  const JsonField seqs = root.at("sequences");
  if (seqs.size() == 0) seqs.fail("no sequences");
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const JsonField sf = seqs.at(i);
    RecordSequence seq;
    seq.prompt_ids = sf.at("input_ids").ints();
    if (seq.prompt_ids.empty()) sf.at("input_ids").fail("empty");
    seq.name = sf.has("name") ? sf.at("name").str()
                              : "seq" + std::to_string(i) + "_len" + std::to_string(seq.prompt_ids.size());
    seq.prompt_rendering = "ids";
    const JsonField g = sf.at("greedy");
    const JsonField st5 = g.at("steps_top5");
    seq.steps = read_steps(g.at("tokens"), st5, rf.n_steps, "max_new_tokens");
    if (sf.has("last_logits")) seq.steps[0].logits = sf.at("last_logits").floats();
    const auto digits = verify_detail::scan_print_digits(sf.raw());
    for (std::size_t s = 0; s < seq.steps.size(); ++s) check_step(st5.at(s), seq.steps[s], digits);
    if (sf.has("layer_hidden_last")) {
      const JsonField lh = sf.at("layer_hidden_last");
      seq.hidden.positions = {static_cast<int>(seq.prompt_ids.size()) - 1};
      for (std::size_t l = 0; l < lh.size(); ++l) seq.hidden.layer_out.push_back(lh.at(l).floats());
      if (sf.has("embedding_last")) seq.hidden.embedding = sf.at("embedding_last").floats();
      if (sf.has("final_norm_hidden_last")) seq.hidden.final_norm = sf.at("final_norm_hidden_last").floats();
      seq.hidden.emb_dim = common_width(seq.hidden);
      for (std::size_t l = 0; l < lh.size(); ++l) check_vector(lh.at(l), seq.hidden.layer_out[l], seq.hidden.emb_dim);
      if (sf.has("embedding_last")) check_vector(sf.at("embedding_last"), seq.hidden.embedding, seq.hidden.emb_dim);
      if (sf.has("final_norm_hidden_last"))
        check_vector(sf.at("final_norm_hidden_last"), seq.hidden.final_norm, seq.hidden.emb_dim);
    }
    rf.sequences.push_back(std::move(seq));
  }
  return rf;
}

// ------------------------------------------------------------------ llmport-records/1
std::vector<float> side_tensor(const SafetensorsFile& sf, const std::string& name,
                               std::vector<int64_t>* shape) {
  auto it = sf.tensors().find(name);
  if (it == sf.tensors().end()) return {};
  const TensorView& t = it->second;
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  to_f32(t.dtype, t.data, v.data(), v.size());
  *shape = t.shape;
  return v;
}

// Full logits stored in 16 bits hold no more than that precision, whatever the reference
// computed in: rounded to fp16 at logits ~16 they move the full KL by ~1e-5, five times the
// fp32 bound. The storage joins the stated precision ("float32; fp16 (side-file logits)"),
// so the bound is the one that precision supports (kl_bound_for).
void note_logits_storage(const SafetensorsFile& sf, const std::string& name, RecordFile& rf) {
  const auto it = sf.tensors().find(name);
  if (it == sf.tensors().end() || it->second.dtype == DType::F32) return;
  const std::string note = std::string(dtype_name(it->second.dtype)) + " (side-file logits)";
  if (rf.compute_dtype.find(note) != std::string::npos) return;
  rf.compute_dtype += (rf.compute_dtype.empty() ? "" : "; ") + note;
}

// The steps whose full logits a sequence's side tensor holds, one row each: its
// "logits_steps" (strictly increasing step indices), else every step.
std::vector<int> read_logits_steps(const JsonField& sf, std::size_t n_steps) {
  std::vector<int> rows;
  if (!sf.has("logits_steps")) {
    for (std::size_t s = 0; s < n_steps; ++s) rows.push_back(static_cast<int>(s));
    return rows;
  }
  const JsonField f = sf.at("logits_steps");
  rows = f.ints();
  if (rows.empty()) f.fail("empty (leave it out when no step has full logits)");
  for (std::size_t r = 0; r < rows.size(); ++r)
    if (rows[r] < 0 || static_cast<std::size_t>(rows[r]) >= n_steps || (r > 0 && rows[r] <= rows[r - 1]))
      f.fail("expected strictly increasing step indices in [0, " + std::to_string(n_steps) + "), got " +
             std::to_string(rows[r]) + " at " + std::to_string(r));
  return rows;
}

void load_side(const fs::path& side, const JsonField& where, RecordFile& rf,
               const std::vector<std::vector<int>>& logits_steps) {
  if (!fs::exists(side)) where.fail("side file " + side.string() + " not found");
  SafetensorsFile sf(side);
  for (std::size_t i = 0; i < rf.sequences.size(); ++i) {
    RecordSequence& seq = rf.sequences[i];
    const std::string p = "seq" + std::to_string(i) + ".";
    std::vector<int64_t> shape;
    note_logits_storage(sf, p + "logits", rf);
    auto logits = side_tensor(sf, p + "logits", &shape);
    const std::vector<int>& rows = logits_steps[i];
    if (!logits.empty()) {
      if (shape.size() != 2 || shape[0] != static_cast<int64_t>(rows.size()))
        throw ConfigError(side.string() + ": " + p + "logits: expected shape [" +
                          (rows.size() == seq.steps.size() ? "n_steps=" : "rows of logits_steps=") +
                          std::to_string(rows.size()) + ", vocab]");
      const auto vocab = static_cast<std::size_t>(shape[1]);
      for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto s = static_cast<std::size_t>(rows[r]);
        seq.steps[s].logits.assign(logits.begin() + static_cast<std::ptrdiff_t>(r * vocab),
                                   logits.begin() + static_cast<std::ptrdiff_t>((r + 1) * vocab));
        const std::string why = verify_detail::step_inconsistency(seq.steps[s]);
        if (!why.empty())
          throw ConfigError(side.string() + ": " + p + "logits[" + std::to_string(s) + "] against sequences[" +
                            std::to_string(i) + "].steps[" + std::to_string(s) + "]: " + why);
      }
    }
    const int n_rows = seq.hidden.n_rows();
    auto check_rows = [&](const std::string& name, const std::vector<int64_t>& sh, std::size_t lead) {
      if (sh.size() != lead + 2 || sh[lead] != n_rows)
        throw ConfigError(side.string() + ": " + name + ": rows do not match hidden_positions (" +
                          std::to_string(n_rows) + ")");
      if (seq.hidden.emb_dim == 0) seq.hidden.emb_dim = static_cast<int>(sh[lead + 1]);
      if (sh[lead + 1] != seq.hidden.emb_dim)
        throw ConfigError(side.string() + ": " + name + ": emb_dim mismatch");
    };
    auto emb = side_tensor(sf, p + "embedding", &shape);
    if (!emb.empty()) {
      check_rows(p + "embedding", shape, 0);
      seq.hidden.embedding = std::move(emb);
    }
    auto lo = side_tensor(sf, p + "layer_out", &shape);
    if (!lo.empty()) {
      check_rows(p + "layer_out", shape, 1);
      const auto per = static_cast<std::size_t>(n_rows) * static_cast<std::size_t>(seq.hidden.emb_dim);
      for (int64_t l = 0; l < shape[0]; ++l)
        seq.hidden.layer_out.emplace_back(lo.begin() + static_cast<std::ptrdiff_t>(l * per),
                                          lo.begin() + static_cast<std::ptrdiff_t>((l + 1) * per));
    }
    auto fn = side_tensor(sf, p + "final_norm", &shape);
    if (!fn.empty()) {
      check_rows(p + "final_norm", shape, 0);
      seq.hidden.final_norm = std::move(fn);
    }
  }
}

RecordFile read_llmport(const nlohmann::json& j, const OrderedJson& ordered, const fs::path& file) {
  JsonField root(j, file, "");
  RecordFile rf;
  rf.format = root.at("format").str();
  rf.path = file;
  rf.model = opt_str(root, "model");
  read_architectures(root, rf);
  read_provenance(root, ordered, rf);
  read_versions(root, rf);
  rf.n_steps = root.at("n_steps").integer();
  if (rf.n_steps <= 0) root.at("n_steps").fail("must be > 0");
  const JsonField seqs = root.at("sequences");
  if (seqs.size() == 0) seqs.fail("no sequences");
  std::vector<std::vector<int>> logits_steps;  // per sequence: the side file's logit rows
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const JsonField sf = seqs.at(i);
    RecordSequence seq;
    seq.name = sf.has("name") ? sf.at("name").str() : "seq" + std::to_string(i);
    if (sf.has("prompt")) seq.prompt = sf.at("prompt").str();
    seq.prompt_rendering = sf.has("prompt_rendering") ? sf.at("prompt_rendering").str()
                                                      : (seq.prompt ? "raw" : "ids");
    seq.prompt_ids = sf.at("prompt_ids").ints();
    if (seq.prompt_ids.empty()) sf.at("prompt_ids").fail("empty");
    const JsonField steps = sf.at("steps");
    seq.steps = read_steps(sf.at("tokens"), steps, rf.n_steps, "n_steps");
    const auto digits = verify_detail::scan_print_digits(sf.raw());
    for (std::size_t s = 0; s < seq.steps.size(); ++s) check_step(steps.at(s), seq.steps[s], digits);
    if (sf.has("hidden_positions")) seq.hidden.positions = sf.at("hidden_positions").ints();
    read_texts(sf, seq);
    logits_steps.push_back(read_logits_steps(sf, seq.steps.size()));
    if (sf.has("logits_steps") && !root.has("side_file"))
      sf.at("logits_steps").fail("given without a side_file to hold those logits");
    rf.sequences.push_back(std::move(seq));
  }
  if (root.has("side_file"))
    load_side(file.parent_path() / root.at("side_file").str(), root.at("side_file"), rf, logits_steps);
  // A listed step whose logits the side file does not hold would read as a top-k step.
  for (std::size_t i = 0; i < seqs.size(); ++i)
    if (seqs.at(i).has("logits_steps") && rf.sequences[i].steps[static_cast<std::size_t>(logits_steps[i][0])].logits.empty())
      seqs.at(i).at("logits_steps").fail("lists steps with full logits, but the side file holds no seq" +
                                         std::to_string(i) + ".logits");
  return rf;
}

}  // namespace

RecordFile read_record_file(const std::filesystem::path& file) {
  const std::string text = read_text_file(file);
  // Malformed, too deep or a key twice in one object: refused here. With {"producer":
  // "llmport", "producer": "torch"} a reader keeps the last and a person reading the file
  // may well see the first. The ordered copy is what the metadata walk reads (fragments
  // side by side are joined in the order they show).
  const nlohmann::json j = parse_json_text(text, file.string(), JsonKeys::distinct);
  if (!j.is_object()) throw ConfigError(file.string() + ": expected a JSON object");
  const nlohmann::ordered_json ordered = parse_ordered_json_text(text, file.string(), JsonKeys::distinct);
  if (j.contains("format") && j["format"].is_string()) {
    const std::string f = j["format"].get<std::string>();
    if (f.rfind("llmport-records/", 0) == 0) {
      if (f != "llmport-records/1")
        throw ConfigError(file.string() + ": format: unsupported version " + f + " (reader knows llmport-records/1)");
      return read_llmport(j, ordered, file);
    }
    if (f.rfind("llmport-synthetic-golden/", 0) == 0) {
      if (f != "llmport-synthetic-golden/1")
        throw ConfigError(file.string() + ": format: unsupported version " + f +
                          " (reader knows llmport-synthetic-golden/1)");
      return read_synthetic(j, ordered, file);
    }
  }
  if (j.contains("cases")) return read_stories(j, ordered, file);
  if (j.contains("sequences") && j.contains("max_new_tokens")) return read_synthetic(j, ordered, file);
  throw ConfigError(file.string() +
                    ": not a record file (expected format llmport-records/1, a synthetic golden "
                    "with sequences[] or a golden with cases[])");
}

}  // namespace llmport
