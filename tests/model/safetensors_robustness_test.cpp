// SafetensorsFile never crashes on damaged bytes: every truncation and seeded random byte
// flips either open cleanly (and then every view lies inside the file) or throw
// WeightsError naming the file. Plus the message of each header-level defect.
#include <gtest/gtest.h>

#include <random>

#include "llmport/error.hpp"
#include "llmport/safetensors_writer.hpp"
#include "llmport/weights.hpp"
#include "model/model_fixture.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::TempDir;

/// Opens `f`: true when valid; a WeightsError must name the file; anything else fails.
bool open_or_weights_error(const fs::path& f) {
  try {
    SafetensorsFile sf(f);
    const auto size = fs::file_size(f);
    for (const auto& [name, v] : sf.tensors()) {
      EXPECT_EQ(static_cast<std::size_t>(v.numel()) * dtype_size(v.dtype), v.nbytes) << name;
      EXPECT_LE(v.nbytes, size) << name;
    }
    return true;
  } catch (const WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find(f.string()), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    return false;
  }
}

std::string small_file_bytes(const fs::path& f) {
  write_safetensors(f, {make_tensor("w", DType::BF16, {2, 3}, {1, 2, 3, 4, 5, 6}),
                        make_tensor("b", DType::F32, {3}, {7, 8, 9}), make_tensor("n", DType::F16, {2}, {1, 2})},
                    {{"format", "pt"}});
  return test::read_file(f);
}

TEST(SafetensorsRobustness, EveryTruncationIsACleanError) {
  TempDir t;
  const fs::path f = t.path() / "x.safetensors";
  const std::string bytes = small_file_bytes(f);
  ASSERT_TRUE(open_or_weights_error(f));
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    test::write_file(f, bytes.substr(0, n));
    EXPECT_FALSE(open_or_weights_error(f)) << "truncated to " << n << " bytes opened";
  }
}

TEST(SafetensorsRobustness, RandomByteFlipsNeverCrash) {
  TempDir t;
  const fs::path f = t.path() / "x.safetensors";
  const std::string bytes = small_file_bytes(f);
  std::mt19937 rng(1234);
  int errors = 0;
  for (int it = 0; it < 400; ++it) {
    std::string b = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<char>(rng() & 0xff);
    test::write_file(f, b);
    if (!open_or_weights_error(f)) ++errors;
  }
  EXPECT_GT(errors, 0);  // damage inside the header must be caught at least sometimes
}

TEST(SafetensorsRobustness, HeaderDefectsAreNamed) {
  TempDir t;
  const fs::path f = t.path() / "x.safetensors";
  auto expect_msg = [&](const json& header, const std::string& data, const std::string& fragment) {
    test::write_raw_safetensors(f, header.dump(), data);
    try {
      SafetensorsFile sf(f);
      ADD_FAILURE() << "opened: " << header.dump();
    } catch (const WeightsError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  const std::string data(16, '\0');
  expect_msg(json::array({1, 2}), data, "not a JSON object");
  expect_msg({{"t", 5}}, data, "t: header entry needs dtype, shape and data_offsets");
  expect_msg({{"t", {{"dtype", "F32"}, {"shape", {-1}}, {"data_offsets", {0, 4}}}}}, data, "t: shape [-1]");
  expect_msg({{"t", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {8, 4}}}}}, data, "t: data_offsets [8,4]");
  expect_msg({{"t", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0}}}}}, data, "t: data_offsets");
  expect_msg({{"t", {{"dtype", 3}, {"shape", {1}}, {"data_offsets", {0, 4}}}}}, data, "t: dtype");
  expect_msg({{"t", {{"dtype", "F32"}, {"shape", {8}}, {"data_offsets", {0, 32}}}}}, data, "t: data_offsets [0,32] run past");
  expect_msg({{"a", {{"dtype", "F32"}, {"shape", {3}}, {"data_offsets", {0, 12}}}},
              {"b", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {4, 8}}}}},
             data, "overlap tensor a");
  expect_msg({{"__metadata__", "x"}}, data, "__metadata__");
  expect_msg({{"a", {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {0, 16}}}},
              {"e", {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {8, 8}}}}},
             data, "e: the empty tensor's data_offsets [8, 8] lie inside tensor a [0, 16]");
  expect_msg({{"__metadata__", {{"format", "pt"}, {"step", 5}}}}, data,
             "__metadata__.step is a number, not a string (safetensors metadata holds strings only)");
  // A header length of 2^60 is caught before any allocation.
  test::write_raw_safetensors(f, "{}", data, int64_t{1} << 60);
  EXPECT_THROW(SafetensorsFile{f}, WeightsError);
  // Not a file at all.
  EXPECT_THROW(SafetensorsFile{t.path()}, WeightsError);
  EXPECT_THROW(SafetensorsFile{t.path() / "absent.safetensors"}, WeightsError);
}

// A tensor name twice: one entry would load and the other's bytes would sit under no name.
TEST(SafetensorsRobustness, ATensorNameTwiceIsRefused) {
  TempDir t;
  const fs::path f = t.path() / "x.safetensors";
  test::write_raw_safetensors(f,
                              R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                              std::string(16, '\0'));
  try {
    SafetensorsFile sf(f);
    ADD_FAILURE() << "a header with tensor w twice was opened";
  } catch (const WeightsError& e) {
    EXPECT_NE(std::string(e.what()).find("malformed JSON header: key \"w\" appears twice in one object"),
              std::string::npos)
        << e.what();
  }
}

// Bytes of the data area no tensor claims are reported (huggingface/safetensors refuses such
// a file), not thrown on open: WeightStore::open names a missing tensor first.
TEST(SafetensorsRobustness, UnclaimedBytesAreReported) {
  TempDir t;
  const fs::path f = t.path() / "x.safetensors";
  const std::string data(16, '\0');
  auto unclaimed = [&](const json& header) {
    test::write_raw_safetensors(f, header.dump(), data);
    return SafetensorsFile(f).unclaimed_bytes();
  };
  auto f32 = [](int n, int b) {
    return json{{"dtype", "F32"}, {"shape", {n}}, {"data_offsets", {b, b + 4 * n}}};
  };
  EXPECT_EQ(unclaimed({{"a", f32(2, 0)}}),
            f.string() + ": the data area is 16 bytes but its tensors end at byte 8 (8 bytes belong to no tensor; "
                         "a header entry is missing or data was appended)");
  EXPECT_EQ(unclaimed({{"a", f32(2, 8)}}),
            f.string() + ": bytes [0, 8) of the data area belong to no tensor (before a; a header entry is missing "
                         "or the file is damaged)");
  EXPECT_EQ(unclaimed({{"a", f32(1, 0)}, {"b", f32(2, 8)}}),
            f.string() + ": bytes [4, 8) of the data area belong to no tensor (between a and b; a header entry is "
                         "missing or the file is damaged)");
  EXPECT_EQ(unclaimed({{"b", f32(2, 8)}, {"a", f32(2, 0)}}), std::nullopt);  // header order is free
  EXPECT_EQ(unclaimed({{"a", f32(4, 0)}, {"e", f32(0, 16)}}), std::nullopt);  // an empty tensor claims nothing
  EXPECT_EQ(unclaimed({{"a", f32(4, 0)}}), std::nullopt);
  // A null __metadata__ is no metadata (huggingface/safetensors: Option<HashMap>); it was
  // refused as "not an object".
  test::write_raw_safetensors(f, json{{"__metadata__", nullptr}, {"a", f32(4, 0)}}.dump(), data);
  EXPECT_TRUE(SafetensorsFile(f).metadata().empty());
  EXPECT_EQ(SafetensorsFile(f).tensors().size(), 1u);
}

}  // namespace
}  // namespace llmport
