// The decorator stack of an Engine: the real backend, then the planted fault (test-only),
// the probe and the profiler when set, each wrapping the one below. forward() calls the top.
#include "runtime/decorators.hpp"
#include "runtime/engine_impl.hpp"

namespace llmport {

void Engine::Impl::stack_decorators() {
  decorators.clear();
  Backend* below = backend.get();
  auto push = [&](std::unique_ptr<Backend> d) {
    below = d.get();
    decorators.push_back(std::move(d));
  };
  if (opt.fault.kind != FaultInjection::Kind::None) push(make_fault_backend(*below, opt.fault, cfg));
  if (probe) push(make_probing_backend(*below, probe, cfg));
  if (prof.enabled()) push(make_profiling_backend(*below, prof));
  top = below;
  norm_every_row = static_cast<bool>(probe);
}

void Engine::set_probe(ProbeFn fn) {
  impl_->probe = std::move(fn);
  impl_->stack_decorators();
}

void Engine::set_profiling(bool on) {
  impl_->prof.enable(on);
  if (on) impl_->prof.clear();
  impl_->stack_decorators();
}

std::vector<OpProfile> Engine::profile() const { return impl_->prof.report(); }

}  // namespace llmport
