// CPU RMSNorm, RoPE, SwiGLU, residual add and attention vs the reference backend for every
// ISA level this machine runs, inputs rounded through each dtype, guard regions checked.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/backend_impls.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "llmport/error.hpp"
#include "kernels/cpu_test_util.hpp"
#include "llmport/op_harness.hpp"

namespace llmport::test {
namespace {

std::vector<float> rounded(std::vector<float> v, DType dt) {
  round_through(dt, v.data(), v.data(), v.size());
  return v;
}

std::string tag(cpu::Isa isa, DType dt, const std::string& rest) {
  return std::string(cpu::isa_name(isa)) + " " + std::string(dtype_name(dt)) + " " + rest;
}

const DType kDtypes[] = {DType::BF16, DType::F16, DType::F32};

// The comparisons below run through the op harness (llmport/op_harness.hpp): the same
// inputs on the cpu backend and the reference, every element within tolerance(op, dtype, k)
// times the op's scale, guard words around each output.
TEST(CpuOps, RmsNormMatchesReference) {
  OpHarness h;
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(2, isa);
    for (DType dt : kDtypes)
      for (int m : {1, 3, 17})
        for (int dim : {64, 100, 2048})
          for (bool in_place : {false, true}) {  // y aliases x
            OpCase c{OpKind::RmsNorm, dt, {{"m", m}, {"dim", dim}}};
            c.eps = 1e-5f;
            c.in_place = in_place;
            OpInputs in;
            in.x = rounded(random_vec(static_cast<std::size_t>(m) * dim, 2.0f, 11u + m), dt);
            in.w = {rounded(random_vec(dim, 1.0f, 5u), dt)};
            const OpResult r = h.run(*be, c, in);
            EXPECT_TRUE(r.pass()) << tag(isa, dt, describe(c, r));
            ++cases;
          }
  }
  EXPECT_GT(cases, 0);
}

// RoPE inputs: x, explicit positions and inv_freq of base `theta`.
OpInputs rope_inputs(int hd, std::vector<float> x, const std::vector<int>& pos, double theta) {
  OpInputs in;
  in.x = std::move(x);
  in.ids = pos;
  in.inv_freq.resize(hd / 2);
  for (int i = 0; i < hd / 2; ++i) in.inv_freq[i] = static_cast<float>(1.0 / std::pow(theta, 2.0 * i / hd));
  return in;
}

TEST(CpuOps, RopeMatchesReference) {
  OpHarness h;
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(2, isa);
    for (DType dt : kDtypes)
      for (int m : {1, 3, 17})
        for (int hd : {64, 128}) {
          const int n_heads = 3;
          std::vector<int> pos(m);
          for (int t = 0; t < m; ++t) pos[t] = 1000 + 37 * t;  // large angles
          const auto x = rounded(random_vec(static_cast<std::size_t>(m) * n_heads * hd, 1.0f, 9u), dt);
          const OpCase c{OpKind::Rope, dt, {{"m", m}, {"n_heads", n_heads}, {"head_dim", hd}, {"pos0", 1000}}};
          const OpResult r = h.run(*be, c, rope_inputs(hd, x, pos, 500000.0));
          EXPECT_TRUE(r.pass()) << tag(isa, dt, describe(c, r));
          ++cases;
        }
  }
  EXPECT_GT(cases, 0);
}

// The backend reuses its cos/sin table between calls with equal positions and frequencies
// (q then k of every layer): a call with other positions (next decode step, same m) or other
// frequencies (another rope_theta) must not see the stale table.
TEST(CpuOps, RopeTableFollowsPositionsAndFrequencies) {
  const int m = 3, n_heads = 2, hd = 64;
  const std::vector<int> p1 = {5, 6, 7}, p2 = {6, 7, 8};
  const auto x = random_vec(static_cast<std::size_t>(m) * n_heads * hd, 1.0f, 3u);
  const OpCase c{OpKind::Rope, DType::F32, {{"m", m}, {"n_heads", n_heads}, {"head_dim", hd}, {"pos0", 5}}};
  OpHarness h;
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(1, isa);
    for (const auto& [pos, theta] : {std::pair{&p1, 10000.0}, std::pair{&p1, 10000.0}, std::pair{&p2, 10000.0},
                                     std::pair{&p2, 20000.0}, std::pair{&p1, 10000.0}}) {
      const OpResult r = h.run(*be, c, rope_inputs(hd, x, *pos, theta));
      EXPECT_TRUE(r.pass()) << cpu::isa_name(isa) << " rope table reuse: " << describe(c, r);
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CpuOps, SwigluAndAddMatchReference) {
  OpHarness h;
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(2, isa);
    for (DType dt : kDtypes)
      for (std::size_t n : {std::size_t{1}, std::size_t{17}, std::size_t{1000}, std::size_t{70001}}) {
        OpInputs in;
        in.x = rounded(random_vec(n, 4.0f, 21u), dt);
        in.y = rounded(random_vec(n, 1.0f, 22u), dt);
        if (n > 3) in.x[0] = -120.0f, in.x[1] = 95.0f, in.x[2] = 0.0f;  // exp saturation
        for (OpKind kind : {OpKind::Swiglu, OpKind::Add}) {
          const OpCase c{kind, dt, {{"n", static_cast<int>(n)}}};
          const OpResult r = h.run(*be, c, in);
          EXPECT_TRUE(r.pass()) << tag(isa, dt, describe(c, r));
          ++cases;
        }
      }
  }
  EXPECT_GT(cases, 0);
}

TEST(CpuOps, SwigluPropagatesNan) {
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(1, isa);
    std::vector<float> g(40, 1.0f), u(40, 1.0f), o(40);
    g[3] = std::nanf("");
    be->swiglu(g.data(), u.data(), o.data(), g.size());
    EXPECT_TRUE(std::isnan(o[3])) << cpu::isa_name(isa);
    EXPECT_TRUE(std::isfinite(o[4])) << cpu::isa_name(isa);
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

struct AttnCase {
  int n_heads, n_kv_heads, head_dim, start_pos, m;
  float q_scale = 1.0f;  // > 1: peaked softmax, most weights underflow exp
};

// Attention of case c on `be` with scale 1/sqrt(head_dim); caches [n_kv_heads, max_seq, hd].
void run_attention(Backend& be, const AttnCase& c, int max_seq, const std::vector<float>& q,
                   const std::vector<float>& k, const std::vector<float>& v, float* out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  AttentionArgs a;
  a.q = q.data();
  a.k_cache = k.data();
  a.v_cache = v.data();
  a.kv_capacity = max_seq;
  a.start_pos = c.start_pos;
  a.m = c.m;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = scale;
  a.out = out;
  be.attention(a);
}

TEST(CpuOps, AttentionMatchesReferencePrefillAndDecodeGqa) {
  OpHarness h;
  // head_dim 64 / 128 / 80 / 48 / 17 (masked tails) / 256 (two P.V passes); group 1, 2,
  // 3, 4, 6, 8; decode m = 1 at contexts inside, at and past a 64-key tile; prefill m = 3,
  // 17, 130, 300, 556 (several key tiles and query tiles); start_pos > 0 (chunked prefill).
  const std::vector<AttnCase> cases_list = {
      {4, 4, 64, 0, 1},     {8, 2, 64, 0, 17},   {6, 1, 128, 5, 3},   {8, 2, 128, 70, 1},
      {4, 2, 64, 100, 17},  {8, 4, 64, 0, 130},  {2, 1, 128, 150, 1}, {4, 1, 80, 0, 130},
      {16, 8, 128, 0, 130}, {8, 2, 48, 37, 17},  {3, 3, 17, 63, 1},   {6, 2, 96, 64, 1},
      {12, 4, 80, 20, 3},   {8, 1, 128, 127, 1}, {2, 2, 256, 10, 17}, {4, 1, 64, 64, 130},
      {8, 2, 128, 10, 70, 40.0f}, {4, 4, 80, 90, 1, 40.0f},
      // Decode at a group of <= 8 scores straight from the K rows (no transposed tile):
      // group 8 with a masked head_dim; 3 tokens x group 2 whose causal limits differ and
      // cross a key tile (direct in batch-invariant mode, else transposed); group 16.
      {8, 1, 17, 40, 1},    {4, 2, 64, 62, 3},   {16, 2, 128, 200, 1},
      // Prefill work items hold up to 256 query rows (kAttnItemRows), fewer to give each
      // of the 2 threads 4 items: at group 2 and 2 kv heads, 300 tokens are 4 items of
      // 150 rows per kv head; at group 1 and 4 kv heads, 2 items of 256 rows and one of 44.
      {4, 2, 64, 0, 300}, {4, 4, 64, 0, 556},
  };
  int cases = 0;
  // Batch-invariant mode (serve) scores every row straight from the K rows, prefill too.
  for (cpu::Isa isa : isas_under_test())
    for (bool batch_invariant : {false, true}) {
      auto be = cpu::make_cpu_backend_isa(2, isa);
      be->set_batch_invariant(batch_invariant);
      for (DType dt : kDtypes)
        for (const AttnCase& c : cases_list) {
          const int max_seq = c.start_pos + c.m + 5;
          const std::size_t qn = static_cast<std::size_t>(c.m) * c.n_heads * c.head_dim;
          const std::size_t kvn = static_cast<std::size_t>(c.n_kv_heads) * max_seq * c.head_dim;
          const auto q = rounded(random_vec(qn, c.q_scale, 31u), dt);
          auto k = rounded(random_vec(kvn, 1.0f, 32u), dt);
          auto v = rounded(random_vec(kvn, 1.0f, 33u), dt);
          // Positions past the causal window hold huge K and NaN V: reading them would show.
          for (int h = 0; h < c.n_kv_heads; ++h)
            for (int p = c.start_pos + c.m; p < max_seq; ++p)
              for (int i = 0; i < c.head_dim; ++i) {
                k[(static_cast<std::size_t>(h) * max_seq + p) * c.head_dim + i] = 1e30f;
                v[(static_cast<std::size_t>(h) * max_seq + p) * c.head_dim + i] = std::nanf("");
              }
          // Only summation order and the exp polynomial differ from the reference: the bound is
          // (1 + 2 S) sum_j p_j |v_j| (S: the largest scale * sum |q k_j| of the row),
          // tolerance(attention, dtype, ctx + head_dim) (llmport/tolerance.hpp).
          const OpKind kind = c.m == 1 ? OpKind::AttentionDecode : OpKind::AttentionPrefill;
          OpCase oc{kind, dt, {{"ctx", c.start_pos + c.m}, {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads},
                               {"head_dim", c.head_dim}}};
          if (c.m > 1) oc.shape["m"] = c.m;
          OpInputs in;
          in.x = q;
          in.k_cache = k;
          in.v_cache = v;
          in.kv_capacity = max_seq;
          const OpResult r = h.run(*be, oc, in);
          EXPECT_TRUE(r.pass()) << tag(isa, dt, describe(oc, r) + " q_scale=" + std::to_string(c.q_scale) +
                                           (batch_invariant ? " batch-invariant" : ""));
          ++cases;
        }
    }
  EXPECT_GT(cases, 0);
}

// A row's attention output must not depend on the thread count: the work items (query
// rows per item) follow it, so a score path chosen by the rows of an item made `run -t 1`
// and `-t 2` differ in the last bits, and a golden written by either read as independent
// of the other. Bit for bit at 1..4 threads, prefill (one item, several, a short prompt
// split for 2 threads) and decode, in both modes.
TEST(CpuOps, AttentionBitsDoNotDependOnTheThreadCount) {
  const std::vector<AttnCase> cases_list = {{8, 4, 64, 0, 5},    {8, 4, 64, 0, 13},  {16, 8, 128, 0, 40},
                                            {4, 2, 80, 30, 9},  {8, 2, 64, 0, 300}, {8, 1, 64, 40, 1},
                                            {32, 2, 128, 70, 1}};
  int cases = 0;
  for (cpu::Isa isa : isas_under_test())
    for (bool batch_invariant : {false, true})
      for (const AttnCase& c : cases_list) {
        const int max_seq = c.start_pos + c.m;
        const std::size_t qn = static_cast<std::size_t>(c.m) * c.n_heads * c.head_dim;
        const std::size_t kvn = static_cast<std::size_t>(c.n_kv_heads) * max_seq * c.head_dim;
        const auto q = random_vec(qn, 1.0f, 61u), k = random_vec(kvn, 1.0f, 62u), v = random_vec(kvn, 1.0f, 63u);
        std::vector<float> first;
        for (int threads = 1; threads <= 4; ++threads) {
          auto be = cpu::make_cpu_backend_isa(threads, isa);
          be->set_batch_invariant(batch_invariant);
          std::vector<float> out(qn);
          run_attention(*be, c, max_seq, q, k, v, out.data());
          if (threads == 1) first = out;
          EXPECT_EQ(std::memcmp(out.data(), first.data(), qn * sizeof(float)), 0)
              << cpu::isa_name(isa) << " m=" << c.m << " group=" << c.n_heads / c.n_kv_heads << " threads=" << threads
              << (batch_invariant ? " batch-invariant" : "");
        }
        ++cases;
      }
  EXPECT_GT(cases, 0);
}

// A NaN in the K row of the chunk's last token reaches only that token's rows (its score is
// NaN, so are its softmax and output), never the rows of earlier tokens of the same work
// item, whose causal limit ends before it; as in the reference, in both score paths (the
// transposed tile, and the direct scores of small items and of batch-invariant mode).
TEST(CpuOps, AttentionKeyNanReachesOnlyTheRowsThatSeeIt) {
  auto ref = make_backend("reference");
  // {n_heads, n_kv_heads, head_dim, start_pos, m}: 3 tokens x group 2 (6 rows: direct),
  // 17 tokens x group 4 (transposed unless batch-invariant), a chunk across a key tile.
  const std::vector<AttnCase> cases_list = {{4, 2, 64, 62, 3}, {8, 2, 80, 30, 17}, {2, 1, 128, 60, 9}};
  int cases = 0;
  for (cpu::Isa isa : isas_under_test())
    for (bool batch_invariant : {false, true}) {
      auto be = cpu::make_cpu_backend_isa(2, isa);
      be->set_batch_invariant(batch_invariant);
      for (const AttnCase& c : cases_list) {
        const int max_seq = c.start_pos + c.m;
        const std::size_t qn = static_cast<std::size_t>(c.m) * c.n_heads * c.head_dim;
        const std::size_t kvn = static_cast<std::size_t>(c.n_kv_heads) * max_seq * c.head_dim;
        const auto q = random_vec(qn, 1.0f, 51u);
        auto k = random_vec(kvn, 1.0f, 52u);
        const auto v = random_vec(kvn, 1.0f, 53u);
        const int last = max_seq - 1;  // seen by the last token only
        for (int h = 0; h < c.n_kv_heads; ++h)
          k[(static_cast<std::size_t>(h) * max_seq + last) * c.head_dim + c.head_dim / 2] = std::nanf("");
        Guarded got(qn), want(qn);
        run_attention(*be, c, max_seq, q, k, v, got.data());
        run_attention(*ref, c, max_seq, q, k, v, want.data());
        const std::string what = std::string(cpu::isa_name(isa)) + " hd=" + std::to_string(c.head_dim) +
                                 " m=" + std::to_string(c.m) + (batch_invariant ? " batch-invariant" : "");
        EXPECT_TRUE(got.guards_intact()) << what;
        const std::size_t last_row = static_cast<std::size_t>(c.m - 1) * c.n_heads * c.head_dim;
        int bad = 0;
        for (std::size_t i = 0; i < qn; ++i) {
          const bool gn = std::isnan(got.data()[i]), wn = std::isnan(want.data()[i]);
          EXPECT_EQ(wn, i >= last_row) << what << " [" << i << "]: the reference";
          if (gn != wn && ++bad <= 3)
            ADD_FAILURE() << what << " [" << i << "]: got " << got.data()[i] << " want " << want.data()[i];
          if (!gn && !wn && std::abs(got.data()[i] - want.data()[i]) > 1e-5 + 1e-5 * std::abs(want.data()[i]))
            ++bad;
        }
        EXPECT_EQ(bad, 0) << what;
        ++cases;
      }
    }
  EXPECT_GT(cases, 0);
}

// A NaN in one V row reaches exactly the outputs whose causal window holds that key (in that
// dimension), a NaN query poisons only its own row, as in the reference; rows of the same
// P.V block that must not see the NaN key stay finite.
TEST(CpuOps, AttentionPropagatesNanOnlyInsideCausalWindow) {
  auto ref = make_backend("reference");
  const std::vector<AttnCase> cases_list = {{8, 2, 128, 0, 130}, {4, 4, 80, 30, 17},
                                            {6, 2, 64, 70, 1}};
  int cases = 0;
  for (cpu::Isa isa : isas_under_test()) {
    auto be = cpu::make_cpu_backend_isa(2, isa);
    for (const AttnCase& c : cases_list) {
      const int max_seq = c.start_pos + c.m;
      const std::size_t qn = static_cast<std::size_t>(c.m) * c.n_heads * c.head_dim;
      const std::size_t kvn = static_cast<std::size_t>(c.n_kv_heads) * max_seq * c.head_dim;
      auto q = random_vec(qn, 1.0f, 41u);
      const auto k = random_vec(kvn, 1.0f, 42u);
      auto v = random_vec(kvn, 1.0f, 43u);
      const int nan_pos = c.start_pos + c.m / 2;  // key seen by tokens m/2.. only
      v[(static_cast<std::size_t>(c.n_kv_heads - 1) * max_seq + nan_pos) * c.head_dim + 3] =
          std::nanf("");
      q[(static_cast<std::size_t>(c.m - 1) * c.n_heads) * c.head_dim + 1] = std::nanf("");
      Guarded got(qn), want(qn);
      run_attention(*be, c, max_seq, q, k, v, got.data());
      run_attention(*ref, c, max_seq, q, k, v, want.data());
      const auto what = std::string(cpu::isa_name(isa)) + " attention nan hd=" +
                        std::to_string(c.head_dim) + " m=" + std::to_string(c.m);
      EXPECT_TRUE(got.guards_intact()) << what;
      int nan_count = 0, bad = 0;
      for (std::size_t i = 0; i < qn; ++i) {
        const bool gn = std::isnan(got.data()[i]), wn = std::isnan(want.data()[i]);
        nan_count += wn;
        if (gn != wn && ++bad <= 3)
          ADD_FAILURE() << what << " [" << i << "]: got " << got.data()[i] << " want "
                        << want.data()[i];
        if (!gn && !wn && std::abs(got.data()[i] - want.data()[i]) >
                              1e-5 + 1e-5 * std::abs(want.data()[i]))
          ++bad;
      }
      EXPECT_EQ(bad, 0) << what;
      EXPECT_GT(nan_count, c.head_dim) << what;  // the NaN query row at least
      EXPECT_LT(nan_count, static_cast<int>(qn) / 2) << what;
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CpuOps, ReportsIsaAndName) {
  auto be = make_cpu_backend(1);
  EXPECT_EQ(be->name(), "cpu");
  EXPECT_EQ(be->isa(), cpu::isa_name(cpu::default_isa()));
  EXPECT_THROW(cpu::parse_isa("sse9"), UsageError);
  // The best level is detected and every lower one is available too.
  const auto isas = cpu::supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.back(), cpu::Isa::Scalar);
  EXPECT_EQ(isas.front(), cpu::detect_isa());
}

}  // namespace
}  // namespace llmport::test
