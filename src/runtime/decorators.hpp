#pragma once
// Backend decorators the Engine stacks over its backend (engine_decorators.cpp): each wraps
// the one below and acts on tagged op calls (llmport/op.hpp OpTag), so the forward pass is
// the math alone.
#include <memory>

#include "llmport/backend_decorator.hpp"
#include "llmport/engine.hpp"
#include "runtime/profiler.hpp"

namespace llmport {

/// Plants `f` (test-only faults, engine.hpp FaultInjection) into the calls of its layer.
/// Throws UsageError when a layer fault names a layer outside 0..n_layers-1.
std::unique_ptr<Backend> make_fault_backend(Backend& inner, const FaultInjection& f,
                                            const ModelConfig& cfg);
/// Reports the named activations of engine.hpp's ProbeFn after the calls that produce them.
std::unique_ptr<Backend> make_probing_backend(Backend& inner, ProbeFn fn, const ModelConfig& cfg);
/// Times every op call into `prof` under the op names of `--profile`.
std::unique_ptr<Backend> make_profiling_backend(Backend& inner, Profiler& prof);

}  // namespace llmport
