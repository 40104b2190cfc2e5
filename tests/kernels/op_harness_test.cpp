// The op harness itself: honest backends pass every op kind it covers, a planted fault in
// any one kind fails that kind only, a backend that writes nothing or outside its output
// fails, and a kind the backend claims but no case covers fails.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "llmport/backend_decorator.hpp"
#include "llmport/op_harness.hpp"

namespace llmport::test {
namespace {

// A small case of every kind (shapes with tails: n, k not multiples of 16).
OpCase sample_case(OpKind kind, DType dt) {
  OpCase c{kind, dt};
  switch (kind) {
    case OpKind::Gemm: c.shape = {{"m", 5}, {"n", 33}, {"k", 40}}; c.bias = true; break;
    case OpKind::Gemv: c.shape = {{"n", 33}, {"k", 40}}; break;
    case OpKind::LinearGroup: c.shape = {{"m", 3}, {"k", 40}, {"n0", 33}, {"n1", 17}}; break;
    case OpKind::GatherRows: c.shape = {{"m", 6}, {"n", 40}, {"k", 24}}; break;
    case OpKind::Embedding: c.shape = {{"m", 5}, {"vocab", 50}, {"dim", 24}}; break;
    case OpKind::RmsNorm: c.shape = {{"m", 3}, {"dim", 64}}; break;
    case OpKind::Rope: c.shape = {{"m", 3}, {"n_heads", 2}, {"head_dim", 32}, {"pos0", 5}}; break;
    case OpKind::KvStore: c.shape = {{"m", 3}, {"pos0", 4}, {"n_kv_heads", 2}, {"head_dim", 16}}; break;
    case OpKind::AttentionPrefill:
      c.shape = {{"m", 5}, {"ctx", 9}, {"n_heads", 4}, {"n_kv_heads", 2}, {"head_dim", 16}};
      break;
    case OpKind::AttentionDecode: c.shape = {{"ctx", 9}, {"n_heads", 4}, {"n_kv_heads", 2}, {"head_dim", 16}}; break;
    case OpKind::Swiglu:
    case OpKind::Add: c.shape = {{"n", 100}}; break;
  }
  return c;
}

// The wrapped backend with one element of one op kind's output off by 1% of its magnitude
// (plus 1e-2): far more than any tolerance (~1e-6), as a real kernel bug would be.
class FaultyOpBackend final : public ForwardingBackend {
 public:
  FaultyOpBackend(std::unique_ptr<Backend> inner, OpKind target)
      : ForwardingBackend(std::move(inner)), target_(target) {}

  void linear(const LinearWeight& w, const float* x, int m, float* y, const float* bias = nullptr,
              OpTag tag = {}) override {
    inner().linear(w, x, m, y, bias, tag);
    if (target_ == (m == 1 ? OpKind::Gemv : OpKind::Gemm)) bump(y[static_cast<std::size_t>(m) * w.n_out - 1]);
  }
  void linear_group(std::span<const LinearCall> calls, const float* x, int m, OpTag tag = {}) override {
    inner().linear_group(calls, x, m, tag);
    if (target_ == OpKind::LinearGroup) bump(calls.back().y[0]);
  }
  void embedding(const TensorView& table, DType compute, const int* ids, int m, float* out,
                 OpTag tag = {}) override {
    inner().embedding(table, compute, ids, m, out, tag);
    if (target_ == OpKind::Embedding) bump(out[1]);
  }
  void gather_rows(const LinearWeight& w, const int* rows, int m, float* out, OpTag tag = {}) override {
    inner().gather_rows(w, rows, m, out, tag);
    if (target_ == OpKind::GatherRows) bump(out[static_cast<std::size_t>(m) * w.n_in - 1]);
  }
  void rmsnorm(const float* x, const float* w, float* y, int m, int dim, float eps, OpTag tag = {}) override {
    inner().rmsnorm(x, w, y, m, dim, eps, tag);
    if (target_ == OpKind::RmsNorm) bump(y[dim + 1]);
  }
  void rope(float* x, int m, int n_heads, int head_dim, const int* positions, const float* inv_freq,
            OpTag tag = {}) override {
    inner().rope(x, m, n_heads, head_dim, positions, inv_freq, tag);
    if (target_ == OpKind::Rope) bump(x[head_dim - 1]);
  }
  void kv_store(const KvStoreArgs& a, OpTag tag = {}) override {
    inner().kv_store(a, tag);
    if (target_ == OpKind::KvStore) bump(a.v_cache[static_cast<std::size_t>(a.pos) * a.head_dim]);
  }
  void attention(const AttentionArgs& a, OpTag tag = {}) override {
    inner().attention(a, tag);
    if (target_ == (a.m == 1 ? OpKind::AttentionDecode : OpKind::AttentionPrefill)) bump(a.out[a.head_dim + 2]);
  }
  void swiglu(const float* gate, const float* up, float* out, std::size_t n, OpTag tag = {}) override {
    inner().swiglu(gate, up, out, n, tag);
    if (target_ == OpKind::Swiglu) bump(out[n / 2]);
  }
  void add(float* x, const float* y, std::size_t n, OpTag tag = {}) override {
    inner().add(x, y, n, tag);
    if (target_ == OpKind::Add) bump(x[n - 1]);
  }

 private:
  static void bump(float& v) { v += 1e-2f * (1.0f + std::abs(v)); }
  OpKind target_;
};

TEST(OpHarness, HonestBackendsPassEveryKind) {
  OpHarness h;
  for (const std::string& name : {std::string("cpu"), std::string("reference")}) {
    auto be = make_backend(name, 1);
    for (DType dt : {DType::BF16, DType::F32})
      for (OpKind kind : kAllOps) {
        const OpCase c = sample_case(kind, dt);
        const OpResult r = h.run(*be, c);
        EXPECT_TRUE(r.pass()) << name << " " << describe(c, r);
        EXPECT_GT(r.check.n_checked, 0) << name << " " << describe(c, r);
        // Honest kernels stay far inside the bound.
        EXPECT_LT(r.check.ratio, 0.5) << name << " " << describe(c, r);
      }
  }
}

TEST(OpHarness, APlantedFaultInAnyKindFailsThatKindOnly) {
  for (DType dt : {DType::BF16, DType::F32})
    for (OpKind target : kAllOps) {
      OpHarness h;
      FaultyOpBackend be(make_backend("cpu", 1), target);
      for (OpKind kind : kAllOps) {
        const OpCase c = sample_case(kind, dt);
        const OpResult r = h.run(be, c);
        EXPECT_EQ(r.pass(), kind != target)
            << "fault in " << op_name(target) << ", case " << describe(c, r);
        if (kind == target) {
          EXPECT_GT(r.check.ratio, 1.0) << describe(c, r);
          EXPECT_GE(r.check.first_bad, 0) << describe(c, r);
        }
      }
    }
}

// The same fault found through explicit inputs (the unit tests' path) and with rows
// sampled (the sweep's path: the faulty element is in the last row, which is sampled).
TEST(OpHarness, ExplicitInputsAndSampledRowsSeeTheFault) {
  OpHarness h;
  FaultyOpBackend be(make_backend("cpu", 1), OpKind::Gemm);
  OpCase c = sample_case(OpKind::Gemm, DType::BF16);
  EXPECT_FALSE(h.run(be, c, OpHarness::make_inputs(c)).pass());
  c.shape["m"] = 40;
  c.ref_rows = 8;
  const OpResult r = h.run(be, c, 2);
  EXPECT_FALSE(r.pass());
  EXPECT_EQ(r.check.n_checked, 8 * 33);
  EXPECT_GT(r.seconds, 0);
  EXPECT_GT(r.flops, 0);
}

// A kernel that leaves its output unwritten, or writes past it, fails.
class LazyBackend final : public ForwardingBackend {
 public:
  explicit LazyBackend(std::unique_ptr<Backend> inner) : ForwardingBackend(std::move(inner)) {}
  void swiglu(const float*, const float*, float*, std::size_t, OpTag = {}) override {}
  void add(float* x, const float* y, std::size_t n, OpTag tag = {}) override {
    inner().add(x, y, n, tag);
    x[n] = 0.0f;  // one past the end
  }
};

TEST(OpHarness, UnwrittenOutputAndOutOfBoundsWritesFail) {
  OpHarness h;
  LazyBackend be(make_backend("cpu", 1));
  const OpCase sw = sample_case(OpKind::Swiglu, DType::F32);
  EXPECT_FALSE(h.run(be, sw).pass());
  const OpCase add = sample_case(OpKind::Add, DType::F32);
  const OpResult r = h.run(be, add);
  EXPECT_TRUE(r.check.pass);  // every element right...
  EXPECT_FALSE(r.guards_intact);
  EXPECT_FALSE(r.pass());  // ...but it wrote outside its output
}

// Claims support for every kind but its case list has no rope: that is a failure; a kind the
// backend does not claim is not.
class PartialBackend final : public ForwardingBackend {
 public:
  explicit PartialBackend(std::unique_ptr<Backend> inner) : ForwardingBackend(std::move(inner)) {}
  bool supports(const OpDesc& op) const override { return op.kind != OpKind::Swiglu; }
};

TEST(OpHarness, AClaimedKindWithoutACaseFails) {
  OpHarness h;
  PartialBackend be(make_backend("cpu", 1));
  std::vector<OpCase> cases;
  for (OpKind kind : kAllOps)
    if (kind != OpKind::Rope && kind != OpKind::Swiglu) cases.push_back(sample_case(kind, DType::BF16));
  const OpKind needed[] = {OpKind::Gemm, OpKind::Rope, OpKind::Swiglu};
  EXPECT_EQ(uncovered_kinds(be, cases, needed, DType::BF16), std::vector<OpKind>{OpKind::Rope});
  const auto runs = run_cases(h, be, cases, needed, DType::BF16);
  ASSERT_EQ(runs.size(), cases.size() + 1);
  int failed = 0;
  for (const OpRun& run : runs) {
    if (run.c) {
      EXPECT_TRUE(run.result.pass()) << describe(*run.c, run.result);
    } else {
      EXPECT_EQ(run.kind, OpKind::Rope);
      EXPECT_EQ(run.result.check.n_checked, 0);
      EXPECT_FALSE(run.result.pass());
      ++failed;
    }
  }
  EXPECT_EQ(failed, 1);
}

}  // namespace
}  // namespace llmport::test
