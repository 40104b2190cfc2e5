// Errors: an unsupported construct is named with its line (ConfigError, never a silent
// wrong render); render-time failures Jinja2 raises (raise_exception, attribute of an
// undefined value, type errors) are UsageErrors naming the line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "llmport/chat_template.hpp"
#include "llmport/error.hpp"

namespace {

using nlohmann::json;

std::string render(const std::string& tmpl, const json& vars = json::object()) {
  return llmport::render_chat_template(tmpl, json::array(), false, vars);
}

/// Runs `fn`, expecting exception E whose message contains every one of `parts`.
template <class E, class F>
void expect_error(F fn, std::initializer_list<const char*> parts) {
  try {
    fn();
    ADD_FAILURE() << "no exception thrown";
  } catch (const E& e) {
    std::string what = e.what();
    for (const char* p : parts) EXPECT_NE(what.find(p), std::string::npos) << "missing '" << p << "' in: " << what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

}  // namespace

TEST(JinjaErrors, UnsupportedFilterNamedWithLine) {
  expect_error<llmport::ConfigError>([] { render("line one\n{{ x | xmlattr }}"); }, {"line 2", "filter 'xmlattr'"});
}

TEST(JinjaErrors, UnsupportedFilterRejectedEvenInAnUntakenBranch) {
  // Jinja2 rejects unknown filters at compile time, so must we.
  expect_error<llmport::ConfigError>([] { render("{% if false %}{{ x | urlize }}{% endif %}"); }, {"line 1", "urlize"});
}

TEST(JinjaErrors, UnsupportedStatementNamedWithLine) {
  expect_error<llmport::ConfigError>([] { render("a\nb\n{% include 'other.jinja' %}"); }, {"line 3", "include"});
  expect_error<llmport::ConfigError>([] { render("{% call m() %}x{% endcall %}"); }, {"call"});
  expect_error<llmport::ConfigError>([] { render("{% frobnicate %}"); }, {"frobnicate"});
}

TEST(JinjaErrors, UnsupportedTestNamedWithLine) {
  expect_error<llmport::ConfigError>([] { render("{{ x is escapedd }}"); }, {"line 1", "test 'escapedd'"});
}

TEST(JinjaErrors, UnsupportedStringMethodNamedAtRender) {
  expect_error<llmport::ConfigError>([] { render("\n{{ 'a'.zfill(3) }}"); }, {"line 2", "zfill"});
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  expect_error<llmport::ConfigError>([] { render("ok\n{% if x %}never closed"); }, {"endif"});
  expect_error<llmport::ConfigError>([] { render("{{ 'unterminated }}"); }, {"line 1", "unterminated"});
  expect_error<llmport::ConfigError>([] { render("{{ x "); }, {"unclosed"});
  expect_error<llmport::ConfigError>([] { render("{% endfor %}"); }, {"endfor"});
  expect_error<llmport::ConfigError>([] { render("{{ 1 + }}"); }, {"line 1"});
}

TEST(JinjaErrors, RaiseExceptionCarriesTheMessage) {
  // The Mistral/Gemma templates raise this for a bad role order.
  expect_error<llmport::UsageError>(
      [] { render("{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"); },
      {"Conversation roles must alternate user/assistant/user/assistant/...", "line 1"});
}

TEST(JinjaErrors, AttributeOfUndefinedIsAnError) {
  // Jinja2's default Undefined: printing it gives "", but its attributes raise.
  EXPECT_EQ(render("[{{ missing }}]"), "[]");
  expect_error<llmport::UsageError>([] { render("\n\n{{ missing.attr }}"); }, {"line 3", "'missing' is undefined"});
  expect_error<llmport::UsageError>([] { render("{{ missing['k'] }}"); }, {"'missing' is undefined"});
  expect_error<llmport::UsageError>([] { render("{{ missing + 1 }}"); }, {"'missing' is undefined"});
}

TEST(JinjaErrors, TypeErrorsAsPython) {
  expect_error<llmport::UsageError>([] { render("{{ 'a' + 1 }}"); }, {"concatenate str"});
  expect_error<llmport::UsageError>([] { render("{{ 1 / 0 }}"); }, {"division by zero"});
  expect_error<llmport::UsageError>([] { render("{{ undefined_fn() }}"); }, {"'undefined_fn' is undefined"});
  expect_error<llmport::UsageError>([] { render("{% set x = 1 %}{% set x.a = 2 %}"); }, {"non-namespace"});
  expect_error<llmport::UsageError>([] { render("{{ x|tojson }}"); }, {"not JSON serializable"});
  // A list where an integer goes (found by the chat_template fuzzer: it escaped as
  // std::bad_variant_access and aborted the process).
  expect_error<llmport::UsageError>([] { render("{{ 'x'|indent(10*messages*12) }}"); },
                                    {"chat template line 1", "'list' object cannot be interpreted as an integer"});
  expect_error<llmport::UsageError>([] { render("{{ range('a') }}"); }, {"chat template line 1"});
}

TEST(JinjaErrors, ImmutableSandboxRefusesMutation) {
  // transformers renders in ImmutableSandboxedEnvironment: list.append is unsafe.
  expect_error<llmport::UsageError>([] { render("{% set l = [1] %}{{ l.append(2) }}"); }, {"append", "unsafe"});
}

TEST(JinjaErrors, BadArgumentsAreUsageErrors) {
  EXPECT_THROW(llmport::render_chat_template("x", json::object(), false), llmport::UsageError);
  EXPECT_THROW(llmport::render_chat_template("x", json::array(), false, json::array()), llmport::UsageError);
}

TEST(JinjaVariables, TransformersDefaults) {
  // apply_chat_template passes tools=None and documents=None; extra vars override them.
  EXPECT_EQ(render("{{ tools is defined }}{{ tools is none }}{{ documents is none }}"), "TrueTrueTrue");
  EXPECT_EQ(render("{{ tools|length }}", json{{"tools", json::array({1, 2})}}), "2");
  EXPECT_EQ(render("{{ add_generation_prompt }}"), "False");
  EXPECT_EQ(llmport::render_chat_template("{{ messages|length }}{{ add_generation_prompt }}",
                                          json::array({json{{"role", "user"}, {"content", "x"}}}), true),
            "1True");
  // A JSON null is Python None (prints "None"); a key left out is undefined (prints "").
  EXPECT_EQ(render("[{{ bos_token }}][{{ eos_token }}]", json{{"bos_token", nullptr}}), "[None][]");
}

TEST(JinjaVariables, GenerationTagRendersItsBody) {
  // transformers' {% generation %} marks assistant text; the rendered text is unchanged.
  EXPECT_EQ(render("a{% generation %}b{{ 1 }}{% endgeneration %}c"), "ab1c");
}

TEST(JinjaVariables, TojsonKeepsInsertionOrder) {
  // Python dicts keep insertion order; ordered_json input must reach tojson unchanged.
  auto vars = nlohmann::ordered_json::parse(R"({"t": {"zeta": 1, "alpha": {"y": 2, "b": 3}}})");
  EXPECT_EQ(llmport::render_chat_template("{{ t|tojson }}", nlohmann::ordered_json::array(), false, vars),
            R"({"zeta": 1, "alpha": {"y": 2, "b": 3}})");
}

TEST(JinjaErrors, DeepNestingIsRefusedNotACrash) {
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  expect_error<llmport::ConfigError>([&] { render(deep); }, {"nested deeper"});
  std::string blocks;
  for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
  expect_error<llmport::ConfigError>([&] { render(blocks); }, {"nested deeper"});
  std::string nots = "{{ " + [] { std::string s; for (int i = 0; i < 5000; ++i) s += "not "; return s; }() + "1 }}";
  expect_error<llmport::ConfigError>([&] { render(nots); }, {"nested deeper"});
  // Ordinary nesting still renders.
  EXPECT_EQ(render("{{ ((((1 + 2)))) * -(-(3)) }}"), "9");
}
