// Backend::linear_group (the fused q/k/v and gate/up projections): every ISA level, dtype and
// m must give exactly what separate linear() calls give (same kernels, same blocking), on
// both the cpu and the reference backend; bad groups are clear errors.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/backend_impls.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_peak.hpp"
#include "kernels/cpu_test_util.hpp"
#include "llmport/error.hpp"
#include "llmport/safetensors_writer.hpp"
#include "llmport/weights.hpp"
#include "support/test_support.hpp"

namespace llmport::test {
namespace {

// The reference backend and the cpu backend at every ISA level this machine runs (2
// threads), each with a tag for failure messages.
std::vector<std::pair<std::string, std::unique_ptr<Backend>>> backends_under_test() {
  std::vector<std::pair<std::string, std::unique_ptr<Backend>>> out;
  out.emplace_back("reference", make_backend("reference"));
  for (cpu::Isa isa : isas_under_test())
    out.emplace_back(std::string("cpu ") + cpu::isa_name(isa), cpu::make_cpu_backend_isa(2, isa));
  return out;
}

// q/k/v-like group: three weights of different n_out over one n_in (GQA: k, v narrower).
TEST(CpuLinearGroup, EqualsSeparateLinearCallsEveryIsaDtypeAndM) {
  const int k = 257;  // odd: exercises the bf16 k-pair tail
  const int ns[3] = {96, 33, 33};
  int cases = 0;
  for (const auto& [tag, be] : backends_under_test()) {
    for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
      std::vector<std::vector<float>> w(3), bias(3);
      std::vector<std::unique_ptr<LinearWeight>> lw(3);
      for (int i = 0; i < 3; ++i) {
        w[i] = random_vec(static_cast<std::size_t>(ns[i]) * k, 0.1f, 10u + i);
        bias[i] = random_vec(static_cast<std::size_t>(ns[i]), 0.5f, 20u + i);
        lw[i] = be->make_linear(view_of(w[i], ns[i], k), dt, {});
      }
      for (int m : {1, 3, 17}) {
        const auto x = random_vec(static_cast<std::size_t>(m) * k, 1.0f, 5u + m);
        std::vector<Guarded> got, want;
        for (int i = 0; i < 3; ++i) {
          got.emplace_back(static_cast<std::size_t>(m) * ns[i]);
          want.emplace_back(static_cast<std::size_t>(m) * ns[i]);
        }
        const LinearCall calls[3] = {{lw[0].get(), got[0].data(), bias[0].data()},
                                     {lw[1].get(), got[1].data(), nullptr},
                                     {lw[2].get(), got[2].data(), bias[2].data()}};
        be->linear_group(calls, x.data(), m);
        for (int i = 0; i < 3; ++i)
          be->linear(*lw[i], x.data(), m, want[i].data(), calls[i].bias);
        for (int i = 0; i < 3; ++i) {
          const std::string what = tag + " " + std::string(dtype_name(dt)) + " m=" + std::to_string(m) +
                                   " weight " + std::to_string(i);
          EXPECT_TRUE(got[i].guards_intact()) << what << ": out-of-bounds write";
          EXPECT_EQ(std::memcmp(got[i].data(), want[i].data(), got[i].size() * 4), 0) << what;
        }
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CpuLinearGroup, RejectsWeightsWithDifferentInputs) {
  for (const std::string& name : {std::string("reference"), std::string("cpu")}) {
    auto be = make_backend(name, 2);
    const auto a = random_vec(16 * 32, 0.1f, 1u), b = random_vec(16 * 48, 0.1f, 2u);
    auto wa = be->make_linear(view_of(a, 16, 32), DType::F32, {});
    auto wb = be->make_linear(view_of(b, 16, 48), DType::F32, {});
    std::vector<float> x(48, 1.0f), ya(16), yb(16);
    const LinearCall calls[2] = {{wa.get(), ya.data(), nullptr}, {wb.get(), yb.data(), nullptr}};
    EXPECT_THROW(be->linear_group(calls, x.data(), 1), ShapeError) << name;
    const LinearCall no_out[1] = {{wa.get(), nullptr, nullptr}};
    EXPECT_THROW(be->linear_group(no_out, x.data(), 1), UsageError) << name;
  }
}

// Packing drops the file-mapped source pages from the process (MADV_DONTNEED on the
// read-only private mapping): the tensor must still read back its exact bytes afterwards
// (a tied embedding table is looked up from the same mapping after lm_head is packed).
TEST(CpuPacking, SourceMappingStillReadsTheSameBytesAfterPacking) {
  TempDir dir;
  const int n = 4096, k = 512;  // 4 MiB of bf16: many pages, several packing blocks
  std::vector<float> w = random_vec(static_cast<std::size_t>(n) * k, 0.05f, 42u);
  std::vector<uint16_t> bf(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) bf[i] = f32_to_bf16(w[i]);
  const auto path = dir.path() / "w.safetensors";
  write_safetensors(path, {make_tensor("w", DType::BF16, {n, k}, w)});
  SafetensorsFile file(path);
  const TensorView& tv = file.tensors().at("w");
  ASSERT_EQ(tv.nbytes, bf.size() * 2);
  auto be = make_backend("cpu", 2);
  auto lw = be->make_linear(tv, DType::BF16, {});
  EXPECT_EQ(std::memcmp(tv.data, bf.data(), tv.nbytes), 0) << "mapping changed by packing";
  // And the packed weight computes W x: row r of y = sum_k W[r][k] for x = ones.
  std::vector<float> x(k, 1.0f), y(n);
  be->linear(*lw, x.data(), 1, y.data());
  for (int r : {0, 1, 2047, n - 1}) {
    double want = 0;
    for (int j = 0; j < k; ++j) want += bf16_to_f32(bf[static_cast<std::size_t>(r) * k + j]);
    EXPECT_NEAR(y[r], want, 1e-3 + 1e-3 * std::abs(want)) << "row " << r;
  }
}

// gather_rows of a packed weight is the embedding lookup of the same table (tied
// embeddings read the packed lm_head): same values bit for bit, every backend, ISA, dtype.
TEST(GatherRows, EqualsEmbeddingLookupEveryBackendIsaDtype) {
  const int vocab = 37, dim = 41;  // odd: partial panel, odd k tail
  const auto table = random_vec(static_cast<std::size_t>(vocab) * dim, 1.0f, 77u);
  const int ids[5] = {0, 36, 17, 16, 15};
  int cases = 0;
  for (const auto& [tag, be] : backends_under_test()) {
    for (DType dt : {DType::BF16, DType::F16, DType::F32}) {
      const TensorView tv = view_of(table, vocab, dim);
      auto lw = be->make_linear(tv, dt, {});
      Guarded got(5 * dim);
      std::vector<float> want(5 * dim);
      be->gather_rows(*lw, ids, 5, got.data());
      embedding_lookup(tv, dt, ids, 5, want.data());
      const std::string what = tag + " " + std::string(dtype_name(dt));
      EXPECT_TRUE(got.guards_intact()) << what;
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << what;
      const int bad[1] = {vocab};
      EXPECT_THROW(be->gather_rows(*lw, bad, 1, got.data()), UsageError) << what;
      const int neg[1] = {-1};
      EXPECT_THROW(be->gather_rows(*lw, neg, 1, got.data()), UsageError) << what;
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

// The streamed read (roofline and in-place bandwidth of packed weights) XORs every 8-byte
// lane and tail byte exactly once, for any stream count and length.
TEST(CpuPeak, XorReadCoversEveryByteOnce) {
  for (std::size_t n : {std::size_t{0}, std::size_t{7}, std::size_t{1000}, std::size_t{70001}}) {
    std::vector<unsigned char> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 131 + 7) & 0xff);
    for (int streams : {1, 3, 4, 8}) {
      // Reference: the same lane split (per = n / streams / W * W bytes per stream).
      auto want = [&](std::size_t w) {
        const std::size_t per = n / static_cast<std::size_t>(streams) / w * w;
        uint64_t r = 0;
        for (std::size_t i = 0; i + 8 <= per * static_cast<std::size_t>(streams); i += 8) {
          uint64_t lane;
          std::memcpy(&lane, v.data() + i, 8);
          r ^= lane;
        }
        for (std::size_t i = per * static_cast<std::size_t>(streams); i < n; ++i) r ^= v[i];
        return r;
      };
      if (cpu::isa_supported(cpu::Isa::Avx2)) {
        EXPECT_EQ(cpu::read_xor_streams_avx2(v.data(), n, streams), want(32)) << n << " " << streams;
      }
      if (cpu::isa_supported(cpu::Isa::Avx512)) {
        EXPECT_EQ(cpu::read_xor_streams_avx512(v.data(), n, streams), want(64)) << n << " " << streams;
      }
    }
  }
}

TEST(CpuPeak, ReadBandwidthOfPackedWeights) {
  const auto a = random_vec(512 * 256, 0.1f, 1u), b = random_vec(100 * 256, 0.1f, 2u);
  auto cpu_be = make_backend("cpu", 2);
  auto wa = cpu_be->make_linear(view_of(a, 512, 256), DType::BF16, {});
  auto wb = cpu_be->make_linear(view_of(b, 100, 256), DType::BF16, {});
  const LinearWeight* ws[2] = {wa.get(), wb.get()};
  if (cpu::isa_supported(cpu::Isa::Avx2)) {
    EXPECT_GT(cpu_be->read_bandwidth_gbps(ws, 2), 0.0);
  }
  EXPECT_EQ(cpu_be->read_bandwidth_gbps(std::span<const LinearWeight* const>{}, 2), 0.0);
  // The reference backend does not measure bandwidth: 0, never a made-up figure.
  auto ref = make_backend("reference");
  auto ra = ref->make_linear(view_of(a, 512, 256), DType::BF16, {});
  const LinearWeight* rs[1] = {ra.get()};
  EXPECT_EQ(ref->read_bandwidth_gbps(rs, 2), 0.0);
  // A foreign weight is a clear error.
  const LinearWeight* mixed[1] = {ra.get()};
  EXPECT_THROW(cpu_be->read_bandwidth_gbps(mixed, 1), UsageError);
}

}  // namespace
}  // namespace llmport::test
