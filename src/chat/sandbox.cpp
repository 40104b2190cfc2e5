#include "chat/sandbox.hpp"

#include <cmath>
#include <limits>

#include "chat/errors.hpp"
#include "chat/value.hpp"

namespace llmport::jinja {
namespace {

thread_local RenderBudget* g_current = nullptr;

[[noreturn]] void overflow(const char* op) {
  throw LimitExceeded(std::string("integer result of '") + op + "' is outside int64");
}

}  // namespace

RenderBudget::Scope::Scope(RenderBudget* b) : prev_(g_current) { g_current = b; }

RenderBudget::Scope::~Scope() {
  RenderBudget* b = g_current;
  g_current = prev_;
  if (!b) return;
  // Objects of this render may reference themselves (ns.self = ns, loop.changed(loop)):
  // empty them so that their shared_ptr cycles come apart.
  for (auto& w : b->objects_)
    if (auto obj = w.lock()) {
      ValueDict attrs = std::move(obj->attrs);
      obj->attrs.clear();
    }
  b->objects_.clear();
}

RenderBudget* RenderBudget::current() { return g_current; }

void RenderBudget::step(std::int64_t units) {
  steps_ += units;
  if (steps_ > RenderLimits::kMaxSteps)
    throw LimitExceeded("evaluation steps exceed the limit of " + std::to_string(RenderLimits::kMaxSteps));
}

void RenderBudget::loop_iteration() {
  if (++loops_ > RenderLimits::kMaxLoopIterations)
    throw LimitExceeded("loop iterations exceed the limit of " + std::to_string(RenderLimits::kMaxLoopIterations));
  step();
}

void RenderBudget::track(const std::shared_ptr<Object>& obj) {
  objects_.push_back(obj);
  if (objects_.size() < prune_at_) return;
  std::erase_if(objects_, [](const std::weak_ptr<Object>& w) { return w.expired(); });
  prune_at_ = 2 * objects_.size() + 1024;
}

void RenderBudget::enter_macro(const std::string& name) {
  if (depth_ >= RenderLimits::kMaxDepth)
    throw LimitExceeded("recursion depth of macro '" + name + "' exceeds the limit of " +
                        std::to_string(RenderLimits::kMaxDepth));
  ++depth_;
}

void RenderBudget::enter_frame() {
  if (nesting_ >= RenderLimits::kMaxNesting)
    throw LimitExceeded("evaluation nesting exceeds the limit of " + std::to_string(RenderLimits::kMaxNesting) +
                        " levels");
  ++nesting_;
}

void budget_step(std::int64_t units) {
  if (g_current) g_current->step(units);
}

void check_string_size(std::size_t bytes, const char* what) {
  if (!g_current || bytes <= RenderLimits::kMaxBytes) return;
  throw LimitExceeded(std::string(what) + " of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                      std::to_string(RenderLimits::kMaxBytes) + " bytes");
}

std::size_t max_list_items() { return RenderLimits::kMaxBytes / sizeof(Value); }

void check_list_size(std::size_t items) {
  if (!g_current || items <= max_list_items()) return;
  throw LimitExceeded("list of " + std::to_string(items) + " items exceeds the limit of " +
                      std::to_string(max_list_items()) + " items (" + std::to_string(RenderLimits::kMaxBytes) +
                      " bytes)");
}

void check_range(std::uint64_t items) {
  if (items <= static_cast<std::uint64_t>(RenderLimits::kMaxRange)) return;
  throw LimitExceeded("range() of " + std::to_string(items) + " items exceeds the limit of " +
                      std::to_string(RenderLimits::kMaxRange));
}

std::int64_t int_add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow("+");
  return r;
}
std::int64_t int_sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow("-");
  return r;
}
std::int64_t int_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow("*");
  return r;
}
std::int64_t int_neg(std::int64_t a) {
  if (a == std::numeric_limits<std::int64_t>::min()) overflow("unary -");
  return -a;
}
std::int64_t int_abs(std::int64_t a) {
  if (a == std::numeric_limits<std::int64_t>::min()) overflow("abs");
  return a < 0 ? -a : a;
}
std::int64_t int_floordiv(std::int64_t a, std::int64_t b) {
  if (b == 0) throw RenderError("integer division or modulo by zero");
  if (b == -1) {
    if (a == std::numeric_limits<std::int64_t>::min()) overflow("//");
    return -a;
  }
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
std::int64_t int_mod(std::int64_t a, std::int64_t b) {
  if (b == 0) throw RenderError("integer modulo by zero");
  if (b == -1) return 0;
  std::int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
std::int64_t int_pow(std::int64_t a, std::int64_t b) {
  std::int64_t r = 1;
  std::int64_t base = a;
  while (b > 0) {
    if (b & 1) {
      if (__builtin_mul_overflow(r, base, &r)) overflow("**");
    }
    b >>= 1;
    if (b > 0 && __builtin_mul_overflow(base, base, &base)) overflow("**");
  }
  return r;
}
std::int64_t float_to_int(double x, const char* what) {
  if (std::isnan(x)) throw RenderError(std::string(what) + ": cannot convert float NaN to integer");
  if (std::isinf(x)) throw RenderError(std::string(what) + ": cannot convert float infinity to integer");
  double t = std::trunc(x);
  // int64 covers [-2^63, 2^63): both bounds are exact doubles.
  if (t < -9223372036854775808.0 || t >= 9223372036854775808.0)
    throw LimitExceeded(std::string(what) + ": integer result is outside int64");
  return static_cast<std::int64_t>(t);
}

}  // namespace llmport::jinja
