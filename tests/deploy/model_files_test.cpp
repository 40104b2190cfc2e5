// The model files a deployment hashes are the ones the loader reads (weight_files): a
// model.safetensors beside an index wins, as in transformers. The hashes once followed the
// index alone, so a model.safetensors appearing after a sharded deployment (what then ran)
// left every hash matching: `make verify`, `evaluate` and `status` said PASS / deployed for
// other weights (adversarial round of session 37).
#include <gtest/gtest.h>

#include "deploy/manifest.hpp"
#include "llmport/weights.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using test::write_file;

TEST(DeployModelFiles, TheHashedWeightsAreTheFilesTheLoaderReads) {
  TempDir t;
  const fs::path m = t.path();
  write_file(m / "config.json", "{}");
  write_file(m / "model.safetensors.index.json",
             R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                 "b": "model-00002-of-00002.safetensors"}})");
  write_file(m / "model-00001-of-00002.safetensors", "shard 1");
  write_file(m / "model-00002-of-00002.safetensors", "shard 2");
  write_file(m / "consolidated.safetensors", "read by no one");
  write_file(m / "added_tokens.json", "{}");
  EXPECT_EQ(deploy::model_file_names(m),
            (std::vector<std::string>{"added_tokens.json", "config.json", "model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors", "model.safetensors.index.json"}));
  write_file(m / "model.safetensors", "the weights that run now");
  EXPECT_EQ(weight_files(m), std::vector<fs::path>{m / "model.safetensors"});
  // The index beside it is read by no one: editing it changes nothing that runs.
  EXPECT_EQ(deploy::model_file_names(m),
            (std::vector<std::string>{"added_tokens.json", "config.json", "model.safetensors"}));
}

}  // namespace
}  // namespace llmport
