#pragma once
// A kernel registry entry as a sweep on this machine records it, for tests that plant
// measured configs.
#include <string>
#include <utility>

#include "llmport/registry.hpp"

namespace llmport::test {

/// `kernel` `dtype` on ISA level `isa` at `shape`, measured here at `threads` threads
/// (Provenance::current): one candidate, `best`, at `gflops`, used by model `used_by`.
inline RegistryEntry measured_entry(std::string kernel, std::string dtype, std::string isa, KernelShape shape,
                                    TileConfig best, double gflops, std::string used_by, int threads) {
  RegistryEntry e;
  e.kernel = std::move(kernel);
  e.dtype = std::move(dtype);
  e.isa = std::move(isa);
  e.shape = std::move(shape);
  e.best = std::move(best);
  Candidate c;
  c.config = e.best;
  c.gflops = gflops;
  e.candidates = {c};
  e.used_by = {std::move(used_by)};
  e.provenance = Provenance::current(threads);
  return e;
}

}  // namespace llmport::test
