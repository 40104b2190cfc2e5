#pragma once
// Helpers for the engine tests: loading a model, comparing vectors, reading goldens.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmport/engine.hpp"
#include "llmport/model_config.hpp"
#include "llmport/weights.hpp"
#include "support/test_support.hpp"

namespace llmport::test {

/// A model directory opened for tests (config + weights kept alive together).
struct LoadedModel {
  ModelConfig cfg;
  std::unique_ptr<WeightStore> weights;
  explicit LoadedModel(const std::filesystem::path& dir)
      : cfg(load_model_config(dir)), weights(std::make_unique<WeightStore>(WeightStore::open(dir, cfg))) {}
  std::unique_ptr<Engine> engine(const std::string& backend, std::optional<DType> dtype = {},
                                 FaultInjection fault = {}) const {
    EngineOptions o;
    o.backend = backend;
    o.dtype = dtype;
    o.threads = 2;
    o.fault = fault;
    return std::make_unique<Engine>(cfg, *weights, o);
  }
};

inline nlohmann::json load_json(const std::filesystem::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

inline double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return (aa == 0 || bb == 0) ? (aa == bb ? 1.0 : 0.0) : ab / std::sqrt(aa * bb);
}

/// Captures the last position of every probe output during one forward pass.
struct LastRowProbe {
  std::map<std::string, std::vector<float>> rows;  // "layer_out:3" -> [dim]
  ProbeFn fn() {
    return [this](std::string_view name, int layer, const float* data, int n, int dim) {
      std::string key = std::string(name) + ":" + std::to_string(layer);
      rows[key].assign(data + static_cast<std::size_t>(n - 1) * dim, data + static_cast<std::size_t>(n) * dim);
    };
  }
};

/// Backends every engine test runs with.
inline std::vector<std::string> test_backends() { return {"reference", "cpu"}; }

}  // namespace llmport::test
