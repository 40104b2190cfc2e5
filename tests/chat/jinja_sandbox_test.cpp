// The render sandbox (issue #17, items 4 and 5): a model's own template cannot crash,
// hang or exhaust the process. int64 arithmetic is checked (a result outside int64 is an
// error naming the operator, // and % by zero are ZeroDivisionError, never SIGFPE);
// range() <= 100,000 items, <= 10^6 loop iterations and <= 10^7 evaluation steps per
// render, strings / lists / the output <= 16 MiB, macro recursion <= 256; exceeding a limit
// is a ConfigError "chat template line N: ... exceeds the limit of ...". Macros and
// self-referencing objects do not leak (LSan checks this in the asan build; the heap
// measurement below checks it in any glibc build).
#include <gtest/gtest.h>
#include <malloc.h>

#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"
#include "support/test_support.hpp"

namespace {

using nlohmann::json;

std::string render_no_messages(const std::string& tmpl) { return llmport::render_chat_template(tmpl, json::array(), false); }

/// The message of the E `render_no_messages(tmpl)` throws ("" and a test failure when none or another).
template <class E>
std::string error_of(const std::string& tmpl) {
  try {
    render_no_messages(tmpl);
    ADD_FAILURE() << "no exception for: " << tmpl;
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for: " << tmpl << ": " << e.what();
  }
  return "";
}

}  // namespace

TEST(JinjaSandbox, IntegerOverflowIsAnErrorNamingTheOperator) {
  // Was SIGFPE in an optimized build (INT64_MIN / -1) and UB for the others.
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ (-9223372036854775807 - 1) // -1 }}"),
            "chat template line 1: integer result of '//' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ 9223372036854775807 + 1 }}"),
            "chat template line 1: integer result of '+' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("\n{{ -9223372036854775807 - 2 }}"),
            "chat template line 2: integer result of '-' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ 4611686018427387904 * 2 }}"),
            "chat template line 1: integer result of '*' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ 2 ** 63 }}"), "chat template line 1: integer result of '**' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ -(-9223372036854775807 - 1) }}"),
            "chat template line 1: integer result of 'unary -' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ (-9223372036854775807 - 1)|abs }}"),
            "chat template line 1: integer result of 'abs' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ [9223372036854775807, 1]|sum }}"),
            "chat template line 1: integer result of '+' is outside int64");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ 1e300|int }}"), "chat template line 1: int: integer result is outside int64");
}

TEST(JinjaSandbox, IntegerArithmeticAtTheEdgesIsPython) {
  EXPECT_EQ(render_no_messages("{{ (-9223372036854775807 - 1) % -1 }}"), "0");
  EXPECT_EQ(render_no_messages("{{ (-9223372036854775807 - 1) // 1 }}"), "-9223372036854775808");
  EXPECT_EQ(render_no_messages("{{ 9223372036854775807 // -1 }}"), "-9223372036854775807");
  EXPECT_EQ(render_no_messages("{{ 7 // -2 }} {{ 7 % -2 }} {{ -7 % 2 }} {{ -7 // 2 }}"), "-4 -1 1 -4");
  EXPECT_EQ(render_no_messages("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 0 ** 0 }} {{ 3 ** 39 }}"),
            "4611686018427387904 -9223372036854775808 1 4052555153018976267");
  // By squaring: a huge exponent is O(log n), not a hang.
  EXPECT_EQ(render_no_messages("{{ 1 ** 99999999999999 }} {{ (-1) ** 99999999999999 }} {{ 0 ** 99999999999999 }}"), "1 -1 0");
  EXPECT_EQ(render_no_messages("{{ 9223372036854775806 + 1 }} {{ -9223372036854775807 - 1 }}"),
            "9223372036854775807 -9223372036854775808");
  // A NaN is int's default (jinja2's do_int catches the ValueError); infinity raises.
  EXPECT_EQ(render_no_messages("{{ ('nan'|float)|int }} {{ ('nan'|float)|int(7) }}"), "0 7");
  EXPECT_NE(error_of<llmport::UsageError>("{{ ('inf'|float)|int }}").find("cannot convert float infinity to integer"),
            std::string::npos);
  // Slices with a step of any size pick what Python picks (no i + step overflow).
  EXPECT_EQ(render_no_messages("{{ [1, 2, 3][::9223372036854775807] }} {{ 'abc'[::-9223372036854775807 - 1] }}"), "[1] c");
  EXPECT_EQ(render_no_messages("{{ 'abcdef'[-9223372036854775807:9223372036854775807:2] }}"), "ace");
}

TEST(JinjaSandbox, DivisionByZeroIsZeroDivisionError) {
  EXPECT_EQ(error_of<llmport::UsageError>("{{ 1 // 0 }}"), "chat template line 1: integer division or modulo by zero");
  EXPECT_EQ(error_of<llmport::UsageError>("{{ 1 % 0 }}"), "chat template line 1: integer modulo by zero");
  EXPECT_EQ(error_of<llmport::UsageError>("{{ (-9223372036854775807 - 1) % 0 }}"),
            "chat template line 1: integer modulo by zero");
  EXPECT_EQ(error_of<llmport::UsageError>("{{ 1.5 // 0 }}"), "chat template line 1: float floor division by zero");
  EXPECT_EQ(error_of<llmport::UsageError>("{{ 1 / 0 }}"), "chat template line 1: division by zero");
}

TEST(JinjaSandbox, RangeIsLimitedToMaxRange) {
  EXPECT_EQ(render_no_messages("{{ range(100000)|length }} {{ range(100000)|last }}"), "100000 99999");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ range(100001) }}"),
            "chat template line 1: range() of 100001 items exceeds the limit of 100000");
  // The count is computed before anything is built, even for the widest range.
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ range(-9223372036854775807 - 1, 9223372036854775807) }}"),
            "chat template line 1: range() of 18446744073709551615 items exceeds the limit of 100000");
  // Stepping near the int64 ends does not overflow.
  EXPECT_EQ(render_no_messages("{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904)|list }}"),
            "[-9223372036854775808, -4611686018427387904, 0, 4611686018427387904]");
  EXPECT_EQ(render_no_messages("{{ range(9223372036854775807, 9223372036854775800, -3)|list }}"),
            "[9223372036854775807, 9223372036854775804, 9223372036854775801]");
}

TEST(JinjaSandbox, LoopIterationsAreLimited) {
  // Three nested range(100000) loops: 10^15 iterations, refused at the 10^6th.
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of<llmport::ConfigError>(
                "{% for i in range(100000) %}{% for j in range(100000) %}\n"
                "{% for k in range(100000) %}{% endfor %}{% endfor %}{% endfor %}"),
            "chat template line 2: loop iterations exceed the limit of 1000000");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
  EXPECT_EQ(render_no_messages("{% set ns = namespace(n=0) %}{% for i in range(1000) %}{% for j in range(999) %}"
                   "{% endfor %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}"),
            "1000");
}

TEST(JinjaSandbox, EvaluationStepsAreLimited) {
  // 900,000 iterations (under the loop limit), each a long expression.
  EXPECT_EQ(error_of<llmport::ConfigError>("{% for i in range(100000) %}{% for j in range(9) %}"
                                           "{% set x = i + i + i + i + i + i + i + i + i + i + i + i %}"
                                           "{% endfor %}{% endfor %}"),
            "chat template line 1: evaluation steps exceed the limit of 10000000");
}

TEST(JinjaSandbox, StringsListsAndOutputAreLimitedTo16MiB) {
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ 'a' * 10**12 }}"),
            "chat template line 1: string of 1000000000000 bytes exceeds the limit of 16777216 bytes");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ 10**12 * 'ab' }}"),
            "chat template line 1: string of 2000000000000 bytes exceeds the limit of 16777216 bytes");
  EXPECT_EQ(render_no_messages("{{ ('a' * 16777216)|length }}"), "16777216");
  EXPECT_EQ(error_of<llmport::ConfigError>("{% set ns = namespace(s='a') %}{% for i in range(30) %}"
                                           "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
            "chat template line 1: string of 33554432 bytes exceeds the limit of 16777216 bytes");
  std::string list_error = error_of<llmport::ConfigError>("{{ ([1, 2] * 10**9)|length }}");
  EXPECT_EQ(list_error.rfind("chat template line 1: list of 2000000000 items exceeds the limit of ", 0), 0u)
      << list_error;
  EXPECT_NE(list_error.find("items (16777216 bytes)"), std::string::npos) << list_error;
  EXPECT_EQ(error_of<llmport::ConfigError>("{% for i in range(20) %}{{ 'a' * 1000000 }}{% endfor %}"),
            "chat template line 1: output of 17000000 bytes exceeds the limit of 16777216 bytes");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ 'x'|indent(10**12) }}"),
            "chat template line 1: indent of 1000000000000 bytes exceeds the limit of 16777216 bytes");
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ '%999999999s' % 'x' }}"),
            "chat template line 1: format width of 999999999 bytes exceeds the limit of 16777216 bytes");
}

TEST(JinjaSandbox, MacroRecursionDepthIsLimitedTo256) {
  EXPECT_EQ(error_of<llmport::ConfigError>("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
            "chat template line 1: recursion depth of macro 'f' exceeds the limit of 256");
  EXPECT_EQ(render_no_messages("{% macro f(n) %}{% if n < 256 %}{{ f(n + 1) }}{% else %}{{ n }}{% endif %}{% endmacro %}{{ f(1) }}"),
            "256");
}

TEST(JinjaSandbox, DeepValuesAreReleasedAndPrintedWithoutOverflowingTheStack) {
  // A 300,000-level list chain built in a loop: releasing it recursed once per level.
  EXPECT_EQ(render_no_messages("{% set ns = namespace(l=none) %}{% for i in range(1000) %}{% for j in range(300) %}"
                   "{% set ns.l = [ns.l] %}{% endfor %}{% endfor %}ok"),
            "ok");
  EXPECT_EQ(error_of<llmport::ConfigError>("{% set ns = namespace(l=none) %}{% for i in range(2000) %}"
                                           "{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}"),
            "chat template line 1: value nesting exceeds the limit of 1024 levels");
  // A namespace holding itself printed (was an endless recursion).
  EXPECT_EQ(error_of<llmport::ConfigError>("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}"),
            "chat template line 1: value nesting exceeds the limit of 1024 levels");
  EXPECT_EQ(render_no_messages("{% set ns = namespace(a=[1, {'b': 2}]) %}{{ ns }}"), "<Namespace {'a': [1, {'b': 2}]}>");
}

TEST(JinjaSandbox, QuadraticFiltersCostSteps) {
  // unique over 100,000 distinct items is 5 * 10^9 comparisons: refused by the step budget.
  EXPECT_EQ(error_of<llmport::ConfigError>("{{ range(100000)|unique|list|length }}"),
            "chat template line 1: evaluation steps exceed the limit of 10000000");
  EXPECT_EQ(render_no_messages("{{ range(1000)|unique|list|length }}"), "1000");
}

TEST(JinjaSandbox, TheBudgetIsPerRender) {
  // A template that uses most of a budget renders again and again.
  llmport::ChatTemplate t("{% for i in range(100000) %}{% for j in range(9) %}{% endfor %}{% endfor %}ok");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(t.render(nlohmann::ordered_json::array(), false), "ok");
}

TEST(JinjaSandbox, MacrosAndSelfReferencesDoNotLeak) {
  // Each macro held shared_ptrs to the scope it was stored in (a cycle, leaked on every
  // render); a namespace can hold itself and loop.changed() can hold its loop.
  llmport::ChatTemplate t(
      "{% macro m(x) %}[{{ x }}]{% endmacro %}{% set ns = namespace(a=1) %}{% set ns.self = ns %}"
      "{% set ns.m = m %}{% for i in range(3) %}{{ m(i) }}{% if loop.changed(loop) %}c{% endif %}"
      "{% macro inner() %}{{ i }}{% endmacro %}{{ inner() }}{% endfor %}");
  EXPECT_EQ(t.render(nlohmann::ordered_json::array(), false), "[0]c0[1]c1[2]c2");
  auto in_use = [] { return mallinfo2().uordblks; };
  for (int i = 0; i < 50; ++i) t.render(nlohmann::ordered_json::array(), false);
  std::size_t before = in_use();
  for (int i = 0; i < 2000; ++i) t.render(nlohmann::ordered_json::array(), false);
  std::size_t after = in_use();
  if (before == 0) GTEST_SKIP() << "mallinfo2 reports nothing under this allocator; LSan checks it";
  EXPECT_LT(after, before + 64 * 1024) << "heap grew by " << (after - before) << " bytes over 2000 renders";
}

TEST(JinjaSandbox, CliExitsTwoWithOneErrorLine) {
  llmport::test::TempDir tmp;
  auto tmpl = tmp.path() / "t.jinja";
  auto msgs = tmp.path() / "m.json";
  llmport::test::write_file(msgs, R"([{"role": "user", "content": "hi"}])");
  llmport::test::write_file(tmpl, "ok\n{{ (-9223372036854775807 - 1) // -1 }}");
  auto r = llmport::test::run_llmport({"chat-template", llmport::test::shared_path("tokenizers/llama2").string(),
                                       "--messages", msgs.string(), "--template", tmpl.string()});
  EXPECT_EQ(r.exit_code, 2);
  // The message names the template file it came from.
  EXPECT_EQ(r.err, "error: " + tmpl.string() + ": chat template line 2: integer result of '//' is outside int64\n");
  llmport::test::write_file(tmpl, "{% for i in range(100001) %}{% endfor %}");
  r = llmport::test::run_llmport({"chat-template", llmport::test::shared_path("tokenizers/llama2").string(),
                                  "--messages", msgs.string(), "--template", tmpl.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: " + tmpl.string() + ": chat template line 1: range() of 100001 items exceeds the limit of 100000\n");
}
