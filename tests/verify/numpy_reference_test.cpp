// tools/numpy_reference.py is a second implementation of transformers' forward (numpy,
// float64, sharing no code with llmport). It first has to reproduce every shared golden's
// greedy tokens (so it is a reference worth trusting); then it judges llmport on prompts
// no golden holds: random ids at lengths around the 64-key attention tile and up to the
// context limit, for every family, at fp32 and bf16. A planted fault must fail against it.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "llmport/model_config.hpp"
#include "llmport/records.hpp"
#include "support/reference_process.hpp"
#include "verify/verify_support.hpp"

namespace llmport::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Prompt {
  std::string name;
  std::vector<int> ids;
};

// Writes the prompts, runs the reference for `steps` tokens each; returns the record file.
fs::path numpy_records(const TempDir& t, const fs::path& model, const std::vector<Prompt>& prompts, int steps) {
  json spec = {{"prompts", json::array()}};
  for (const auto& p : prompts) spec["prompts"].push_back({{"name", p.name}, {"prompt_ids", p.ids}});
  std::ofstream(t.path() / "prompts.json") << spec.dump();
  const fs::path out = t.path() / "numpy.json";
  run_reference({python_with("numpy", "python3-numpy"), std::string(LLMPORT_SOURCE_DIR) + "/tools/numpy_reference.py",
                 "--model", model.string(), "--prompts", (t.path() / "prompts.json").string(), "--steps",
                 std::to_string(steps), "--out", out.string()});
  return out;
}

std::vector<fs::path> shared_models() {
  std::vector<fs::path> models = {stories_dir()};
  for (const auto& m : synthetic_models()) models.push_back(m);
  return models;
}

fs::path golden_of(const fs::path& model) {
  return model == stories_dir() ? stories_golden() : model / "golden.json";
}

TEST(NumpyReference, ReproducesEveryGoldensGreedyTokens) {
  for (const auto& model : shared_models()) {
    SCOPED_TRACE(model.filename().string());
    const RecordFile golden = read_record_file(golden_of(model));
    ASSERT_FALSE(golden.sequences.empty());
    std::vector<Prompt> prompts;
    for (const auto& s : golden.sequences) prompts.push_back({s.name, s.prompt_ids});
    TempDir t;
    const RecordFile ours = read_record_file(numpy_records(t, model, prompts, golden.n_steps));
    ASSERT_EQ(ours.sequences.size(), golden.sequences.size());
    for (std::size_t i = 0; i < golden.sequences.size(); ++i)
      EXPECT_EQ(ours.sequences[i].tokens(), golden.sequences[i].tokens()) << golden.sequences[i].name;
  }
}

// Random ids (raw mt19937 words: the same on every standard library) at lengths 1, 63, 64,
// 65 (one key tile, and one key past it), 130, and the longest the context leaves room for.
std::vector<Prompt> random_prompts(const ModelConfig& cfg, int steps) {
  std::mt19937 rng(static_cast<unsigned>(cfg.vocab_size + cfg.n_layers));
  std::vector<Prompt> out;
  for (int len : {1, 63, 64, 65, 130, cfg.max_seq - steps}) {
    Prompt p{"random" + std::to_string(len), {}};
    for (int i = 0; i < len; ++i) p.ids.push_back(static_cast<int>(rng() % static_cast<unsigned>(cfg.vocab_size)));
    out.push_back(p);
  }
  return out;
}

TEST(NumpyReference, JudgesLlmportOnPromptsNoGoldenHolds) {
  constexpr int kSteps = 24;  // verify's depth for a plain PASS: 4 prompts x 24 steps
  for (const auto& model : shared_models()) {
    SCOPED_TRACE(model.filename().string());
    const ModelConfig cfg = load_model_config(model);
    TempDir t;
    const fs::path records = numpy_records(t, model, random_prompts(cfg, kSteps), kSteps);
    for (const char* dtype : {"fp32", "bf16"}) {
      SCOPED_TRACE(dtype);
      const VerifyResult r = verify_golden(model, records, dtype);
      EXPECT_TRUE(r.pass) << (r.failures.empty() ? "" : r.failures.front());
      EXPECT_TRUE(r.reference_independent);
      EXPECT_EQ(r.kl_kind, KlKind::Full) << "the side file's full logits";
      EXPECT_LE(r.mean_kl, r.kl_bound);
      EXPECT_EQ(r.verdict(), "PASS") << r.verdict_line() << " " << (r.warnings.empty() ? "" : r.warnings.front());
    }
    const VerifyResult bad = verify_golden(model, records, "fp32", "logit_scale");
    EXPECT_FALSE(bad.pass) << "a planted fault passed against the numpy reference";
  }
}

// `verify --reference numpy` runs the shipped program itself on the built-in prompt set: a
// plain PASS whose report names the program; a copy of the program under another path
// (LLMPORT_NUMPY_REFERENCE) is named with its hash and caps the verdict.
TEST(NumpyReference, VerifyRunsTheShippedProgramAndCapsAnother) {
  TempDir t;
  const ScopedEnv py("LLMPORT_PYTHON", python_with("numpy", "python3-numpy"));
  const auto r = run_llmport({"verify", stories_dir().string(), "--reference", "numpy", "--dtype", "fp32",
                              "--report-dir", (t.path() / "a").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1), "PASS\n") << r.out;
  const json report = json::parse(read_file(t.path() / "a" / "report.json"));
  EXPECT_EQ(report["reference"]["program"]["shipped"], true);
  EXPECT_EQ(report["reference"]["program"]["script"], "numpy_reference.py");

  const fs::path copy = t.path() / "my_reference.py";
  fs::copy_file(fs::path(LLMPORT_SOURCE_DIR) / "tools/numpy_reference.py", copy);
  {
    std::ofstream(copy, std::ios::app) << "# edited\n";
  }
  {
    const ScopedEnv other("LLMPORT_NUMPY_REFERENCE", copy.string());
    const auto c = run_llmport({"verify", stories_dir().string(), "--reference", "numpy", "--dtype", "fp32",
                                "--report-dir", (t.path() / "b").string()});
    EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
    EXPECT_NE(c.out.find("PASS-with-warnings (numpy reference program " + copy.string() +
                         " is not the shipped tools/numpy_reference.py)"),
              std::string::npos)
        << c.out;
  }
  // The same edit where a data directory keeps the program (LLMPORT_DATA_DIR): not the
  // shipped one either, whatever its place and name (the hash is compiled in).
  const fs::path data = t.path() / "d" / "data";
  fs::create_directories(data.parent_path());
  fs::copy(fs::path(LLMPORT_SOURCE_DIR) / "data", data, fs::copy_options::recursive);
  fs::create_directories(data / "tools");
  fs::copy_file(copy, data / "tools" / "numpy_reference.py");
  const ScopedEnv data_dir("LLMPORT_DATA_DIR", data.string());
  const auto d = run_llmport({"verify", stories_dir().string(), "--reference", "numpy", "--dtype", "fp32",
                              "--report-dir", (t.path() / "c").string()});
  EXPECT_EQ(d.exit_code, 0) << d.out << d.err;
  EXPECT_NE(d.out.find("is not the shipped tools/numpy_reference.py)"), std::string::npos) << d.out;
  EXPECT_EQ(json::parse(read_file(t.path() / "c" / "report.json"))["reference"]["program"]["shipped"], false);
}

// A model that says tie_word_embeddings and still ships an lm_head.weight (here the negated
// embedding): transformers and llmport use the embedding (TRAPS.md #8), so must the numpy
// reference, whose greedy tokens then equal the golden's (the lm_head would reverse them).
TEST(NumpyReference, TiedEmbeddingsWinOverAShippedLmHead) {
  TempDir t;
  const fs::path model = copy_stories(t.path() / "tied");
  const std::string py = python_with("numpy", "python3-numpy");
  const std::string add = R"(
import json, struct, sys
p = sys.argv[1]
raw = open(p, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n]); data = raw[8 + n:]
e = h["model.embed_tokens.weight"]; a, b = e["data_offsets"]
neg = bytes(x ^ 0x80 if i % 4 == 3 else x for i, x in enumerate(data[a:b]))  # sign bit of each f32
h["lm_head.weight"] = {"dtype": "F32", "shape": e["shape"], "data_offsets": [len(data), len(data) + b - a]}
hb = json.dumps(h).encode(); hb += b" " * (-len(hb) % 8)
open(p, "wb").write(struct.pack("<Q", len(hb)) + hb + data + neg)
)";
  write_file(t.path() / "add.py", add);
  ASSERT_EQ(std::system((py + " " + (t.path() / "add.py").string() + " " + (model / "model.safetensors").string()).c_str()), 0);
  const RecordFile golden = read_record_file(stories_golden());
  const RecordFile ours = read_record_file(numpy_records(t, model, {{golden.sequences[0].name, golden.sequences[0].prompt_ids}}, 8));
  ASSERT_EQ(ours.sequences.size(), 1u);
  for (std::size_t k = 0; k < ours.sequences[0].steps.size(); ++k)
    EXPECT_EQ(ours.sequences[0].steps[k].token, golden.sequences[0].steps[k].token) << k;
}

// Run by hand, the program does not replace a record file (or its side file) that exists:
// exit 2 naming it, the file untouched; --force replaces it (verify passes it for the files
// in its own report directory).
TEST(NumpyReference, AnExistingOutputIsNotOverwrittenWithoutForce) {
  TempDir t;
  const fs::path out = numpy_records(t, stories_dir(), {{"a", {1, 403, 407}}}, 2);
  llmport::test::write_file(out, "mine");
  const std::string cmd = python_with("numpy", "python3-numpy") + " " + std::string(LLMPORT_SOURCE_DIR) +
                          "/tools/numpy_reference.py --model " + stories_dir().string() + " --prompts " +
                          (t.path() / "prompts.json").string() + " --steps 2 --out " + out.string();
  const int rc = std::system((cmd + " 2> " + (t.path() / "err.txt").string()).c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_NE(llmport::test::read_file(t.path() / "err.txt").find(out.string() + " exists; not overwriting"),
            std::string::npos);
  EXPECT_EQ(llmport::test::read_file(out), "mine");
  EXPECT_EQ(WEXITSTATUS(std::system((cmd + " --force").c_str())), 0);
  EXPECT_NO_THROW(read_record_file(out));
}

// Without numpy the reference is a one-line usage error (exit 2), never a crash or a PASS.
TEST(NumpyReference, WithoutNumpyIsAUsageError) {
  TempDir t;
  const ScopedEnv py("LLMPORT_PYTHON", (t.path() / "no-python").string());
  const auto r = run_llmport({"verify", stories_dir().string(), "--reference", "numpy"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("error: --reference numpy needs " + (t.path() / "no-python").string() + " (LLMPORT_PYTHON)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("python3-numpy"), std::string::npos) << r.err;
}

// PATH's python3 without numpy (a pyenv or venv before Debian's on PATH) while Debian's
// /usr/bin/python3 has it: the reference runs under Debian's, and the report names it. A
// deployment's `make verify` failed this way in a shell without LLMPORT_PYTHON.
TEST(NumpyReference, DebiansPythonServesWhenPathsHasNoNumpy) {
  ASSERT_EQ(std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1"), 0)
      << "precondition: Debian's python3 imports numpy (python3-numpy)";
  TempDir t;
  const fs::path bin = t.path() / "bin";
  fs::create_directories(bin);
  write_file(bin / "python3", "#!/bin/sh\necho 'No module named numpy' >&2\nexit 1\n");
  fs::permissions(bin / "python3", fs::perms::owner_all);
  const char* path = std::getenv("PATH");
  const ScopedEnv p("PATH", bin.string() + ":" + (path ? path : "/usr/bin:/bin"));
  const ScopedEnv py("LLMPORT_PYTHON", std::nullopt);
  const auto r = run_llmport({"verify", stories_dir().string(), "--reference", "numpy", "--dtype", "fp32", "--quick",
                              "--report-dir", (t.path() / "a").string()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const json report = json::parse(read_file(t.path() / "a" / "report.json"));
  EXPECT_EQ(report["reference"]["program"]["python"], "/usr/bin/python3") << report["reference"].dump();
}

}  // namespace
}  // namespace llmport::test
