#pragma once
// The render sandbox (HF renders chat templates in jinja2's ImmutableSandboxedEnvironment):
// one RenderBudget per render counts evaluation steps, loop iterations, recursion depth and
// the size of every string and list the template builds, and checked int64 arithmetic
// replaces Python's unbounded ints. Exceeding a limit throws LimitExceeded, which the
// evaluator turns into ConfigError("chat template line N: ... exceeds the limit of ...").
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace llmport::jinja {

struct Object;

/// The sandbox limits of one render.
struct RenderLimits {
  static constexpr std::int64_t kMaxRange = 100000;            ///< range() items (jinja2 MAX_RANGE)
  static constexpr std::int64_t kMaxLoopIterations = 1000000;  ///< for-loop iterations per render
  static constexpr std::int64_t kMaxSteps = 10000000;          ///< evaluation steps per render
  static constexpr std::size_t kMaxBytes = std::size_t{16} << 20;  ///< a string, a list, the output
  static constexpr int kMaxDepth = 256;                        ///< macro recursion depth
  static constexpr int kMaxNesting = 1024;                     ///< nested evaluation frames (native stack)
};

/// A sandbox limit was exceeded (message: what, its size and the limit).
struct LimitExceeded : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Counters of the render in progress on this thread (installed by RenderBudget::Scope).
/// Functions that build values (Value::string/list, range(), repetition, filters) check
/// against the current budget; outside a render (no budget installed) nothing is counted.
class RenderBudget {
 public:
  /// Installs `b` as this thread's current budget for its lifetime; on exit, clears every
  /// namespace object the render created (breaks reference cycles such as
  /// `{% set ns.self = ns %}`).
  class Scope {
   public:
    explicit Scope(RenderBudget* b);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RenderBudget* prev_;
  };

  /// The budget of the render in progress on this thread, or nullptr.
  static RenderBudget* current();

  /// Counts `units` evaluation steps.
  void step(std::int64_t units = 1);
  /// Counts one for-loop iteration (and a step).
  void loop_iteration();
  /// Enters a macro call; throws past kMaxDepth. leave() on return.
  void enter_macro(const std::string& name);
  void leave_macro() { --depth_; }
  /// Nested evaluation frames (expression and statement recursion).
  void enter_frame();
  void leave_frame() { --nesting_; }
  /// Remembers a mutable object of this render (cleared when the render ends).
  void track(const std::shared_ptr<Object>& obj);

 private:
  std::int64_t steps_ = 0;
  std::int64_t loops_ = 0;
  int depth_ = 0;
  int nesting_ = 0;
  std::vector<std::weak_ptr<Object>> objects_;
  std::size_t prune_at_ = 1024;
};

/// Counts a step on the current budget, if any.
void budget_step(std::int64_t units = 1);
/// Checks that a string of `bytes` bytes is within the limit ("string of N bytes exceeds
/// the limit of 16777216"); `what` names it ("string", "output").
void check_string_size(std::size_t bytes, const char* what = "string");
/// Checks that a list of `items` items is within the limit (items * sizeof(Value) bytes).
void check_list_size(std::size_t items);
/// Checks a range() of `items` items against kMaxRange (always, as jinja2's sandbox).
void check_range(std::uint64_t items);
/// The most list items kMaxBytes allows.
std::size_t max_list_items();

/// Checked int64 arithmetic: a result outside int64 throws LimitExceeded naming the operator
/// ("integer result of '*' is outside int64"); division or modulo by zero throws RenderError
/// (Python's ZeroDivisionError). Floor semantics for // and % as Python.
std::int64_t int_add(std::int64_t a, std::int64_t b);
std::int64_t int_sub(std::int64_t a, std::int64_t b);
std::int64_t int_mul(std::int64_t a, std::int64_t b);
std::int64_t int_neg(std::int64_t a);
std::int64_t int_abs(std::int64_t a);
std::int64_t int_floordiv(std::int64_t a, std::int64_t b);
std::int64_t int_mod(std::int64_t a, std::int64_t b);
/// a ** b for b >= 0, by squaring (O(log b)).
std::int64_t int_pow(std::int64_t a, std::int64_t b);
/// Python int(x) of a float: truncation; NaN, inf or outside int64 throws (naming `what`).
std::int64_t float_to_int(double x, const char* what);

}  // namespace llmport::jinja
