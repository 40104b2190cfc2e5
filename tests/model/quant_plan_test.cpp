// The quantization plan against hand-computed bytes for stories260K (5 layers, emb 64,
// hidden 172, 8 heads / 4 kv heads of 8, vocab 512, tied, fp32): q4_0 blocks of 32 values
// are 18 bytes, so a [n x 64] projection holds n * 2 * 18 bytes; down_proj (input 172) and
// the tied lm_head stay fp32.
#include <gtest/gtest.h>

#include "llmport/model_config.hpp"
#include "llmport/quant_plan.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

TEST(QuantPlan, Stories260KQ4_0BytesByHand) {
  const ModelConfig cfg = load_model_config(test::shared_path("models/stories260K"));
  const QuantPlan p = plan_quantization(cfg, DType::F32, QuantType::Q4_0, QuantType::None);
  EXPECT_EQ(p.n_quantized, 30);  // q k v o gate up x 5 layers
  EXPECT_EQ(p.n_kept, 6);        // down_proj x 5, lm_head
  // Per layer: q 64*36 + k 32*36 + v 32*36 + o 64*36 + gate 172*36 + up 172*36 = 19296,
  // down 64*172*4 = 44032; lm_head 512*64*4 = 131072; one embedding row 64*4 = 256.
  EXPECT_EQ(p.bytes_per_token, 5u * (19296 + 44032) + 131072 + 256);
  // fp32: per layer 4 * (64*64*2 + 32*64*2 + 172*64*3) = 181248.
  EXPECT_EQ(p.base_bytes_per_token, 5u * 181248 + 131072 + 256);
  for (const PlannedTensor& t : p.matrices)
    if (t.role == TensorRole::WDown) {
      EXPECT_EQ(t.quant, QuantType::None);
      EXPECT_NE(t.why.find("172"), std::string::npos);
    }
  const QuantPlan with_head = plan_quantization(cfg, DType::F32, QuantType::Q4_0, QuantType::Q8_0);
  EXPECT_EQ(with_head.n_kept, 5);
  EXPECT_EQ(with_head.bytes_per_token, 5u * (19296 + 44032) + 512u * 2 * 34 + 256);
}

TEST(QuantPlan, TheEngineRule) {
  EXPECT_EQ(planned_quant(TensorRole::Wq, {64, 64}, QuantType::Q8_0, QuantType::None), QuantType::Q8_0);
  EXPECT_EQ(planned_quant(TensorRole::WDown, {64, 172}, QuantType::Q8_0, QuantType::None), QuantType::None);
  EXPECT_EQ(planned_quant(TensorRole::LmHead, {512, 64}, QuantType::Q4_0, QuantType::None), QuantType::None);
  EXPECT_EQ(planned_quant(TensorRole::LmHead, {512, 64}, QuantType::Q4_0, QuantType::Q8_0), QuantType::Q8_0);
  EXPECT_EQ(planned_quant(TensorRole::Embed, {512, 64}, QuantType::Q4_0, QuantType::Q8_0), QuantType::None);
}

}  // namespace
}  // namespace llmport
