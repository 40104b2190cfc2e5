// The bounded readers and the output writer every parser and command goes through
// (issue #17): nesting depth, number overflow, integer fields that do not fit, FIFOs and
// directories where a file is expected, printable messages, outputs that keep user files.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <functional>

#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "support/test_support.hpp"

namespace llmport {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string nested(int depth) { return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']'); }

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ParseJsonText, RejectsDeepNestingBeforeRecursing) {
  // 100k levels: parsing, converting and destroying such a document would overflow the stack.
  for (const std::string& text : {nested(100000), "{\"x\":" + nested(100000) + "}", std::string(100000, '[')}) {
    const std::string msg = message_of([&] { parse_json_text(text, "f.json"); });
    EXPECT_EQ(msg.rfind("f.json: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("nested deeper than 128"), std::string::npos) << msg;
  }
  std::string deep_obj;
  for (int i = 0; i < 100000; ++i) deep_obj += "{\"a\":";
  EXPECT_NE(message_of([&] { parse_ordered_json_text(deep_obj, "m.json"); }).find("m.json: JSON nested"),
            std::string::npos);
  EXPECT_NO_THROW(parse_json_text(nested(kMaxJsonDepth), "ok.json"));
  EXPECT_THROW(parse_json_text(nested(kMaxJsonDepth + 1), "f.json"), ConfigError);
}

TEST(ParseJsonText, NumberOverflowAndSyntaxErrorsNameTheFile) {
  for (const std::string& text : {std::string("{\"rope_theta\": 1e999}"), std::string("[-1e400]"),
                                  std::string("{\"a\": "), std::string(""), std::string("{\"a\": \"\xff\"}")}) {
    const std::string msg = message_of([&] { parse_json_text(text, "config.json"); });
    EXPECT_EQ(msg.rfind("config.json: malformed JSON", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;  // no library id
  }
  // The position a person editing the file can go to, and the parser's reason.
  EXPECT_EQ(message_of([] { parse_json_text("{\"x\":\n", "config.json"); }),
            "config.json: malformed JSON: syntax error at line 2, column 1 (unexpected end of input)");
  EXPECT_EQ(message_of([] { parse_json_text("{\"a\": tru}", "t.json"); }),
            "t.json: malformed JSON: syntax error at line 1, column 10 (invalid literal)");
  EXPECT_EQ(message_of([] { parse_json_text("[1e999]", "g.json"); }),
            "g.json: malformed JSON: number overflow parsing '1e999'");
}

TEST(JsonInteger, NamesTheFieldWhenTheValueDoesNotFit) {
  EXPECT_EQ(json_integer(json(5), "x", 0, 10), 5);
  EXPECT_EQ(json_integer(json(4096.0), "x", 0, 10000), 4096);
  auto msg = [](const json& v) { return message_of([&] { json_integer(v, "eos_token_id", 0, 2147483647); }); };
  EXPECT_NE(msg(json(1LL << 40)).find("field 'eos_token_id': 1099511627776 does not fit"), std::string::npos);
  EXPECT_NE(msg(json(2147483648LL)).find("eos_token_id"), std::string::npos);
  EXPECT_NE(msg(json(18446744073709551615ULL)).find("does not fit"), std::string::npos);
  EXPECT_NE(msg(json(-1)).find("does not fit"), std::string::npos);
  EXPECT_NE(msg(json(1e300)).find("does not fit"), std::string::npos);
  EXPECT_NE(msg(json(1.5)).find("expected an integer"), std::string::npos);
  EXPECT_NE(msg(json("3")).find("expected an integer"), std::string::npos);
}

TEST(Printable, EscapesControlsAndInvalidUtf8KeepsText) {
  EXPECT_EQ(printable("plain text"), "plain text");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x96\x81"), "caf\xc3\xa9 \xe2\x96\x81");
  EXPECT_EQ(printable("a\xff" "b"), "a\\xffb");
  EXPECT_EQ(printable("x\x01y\nz"), "x\\x01y\\nz");
  EXPECT_EQ(printable("\xc3"), "\\xc3");            // truncated sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");   // overlong
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // surrogate
}

TEST(ReadTextFile, RefusesFifosAndDirectoriesWithoutBlocking) {
  test::TempDir d;
  const fs::path fifo = d.path() / "tokenizer_config.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_NE(message_of([&] { read_text_file(fifo); }).find("not a regular file"), std::string::npos);
  fs::create_directories(d.path() / "dir.json");
  EXPECT_NE(message_of([&] { read_text_file(d.path() / "dir.json"); }).find("is a directory"), std::string::npos);
  EXPECT_NE(message_of([&] { read_text_file(d.path() / "missing.json"); }).find("missing.json"), std::string::npos);
  test::write_file(d.path() / "big", std::string(100, 'x'));
  EXPECT_NE(message_of([&] { read_text_file(d.path() / "big", 10); }).find("more than the 10 bytes"), std::string::npos);
  EXPECT_EQ(read_text_file(d.path() / "big"), std::string(100, 'x'));
}

TEST(WriteOutputFile, KeepsUserFilesAndWritesAtomically) {
  test::TempDir d;
  const fs::path f = d.path() / "plot.svg";
  write_output_file(f, "one");
  EXPECT_EQ(test::read_file(f), "one");
  const std::string msg = message_of([&] { write_output_file(f, "two"); });
  EXPECT_NE(msg.find("plot.svg: exists"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--force"), std::string::npos) << msg;
  EXPECT_EQ(test::read_file(f), "one");
  write_output_file(f, "three", Overwrite::Always);
  EXPECT_EQ(test::read_file(f), "three");
  // IfMarked: only a file carrying the marker (one this tool wrote) is replaced.
  const fs::path md = d.path() / "supported_kernels.md";
  test::write_file(md, "my notes\n");
  EXPECT_THROW(write_output_file(md, "generated MARK\n", Overwrite::IfMarked, "MARK"), UsageError);
  EXPECT_EQ(test::read_file(md), "my notes\n");
  test::write_file(md, "old MARK\n");
  write_output_file(md, "new MARK\n", Overwrite::IfMarked, "MARK");
  EXPECT_EQ(test::read_file(md), "new MARK\n");
  // A directory is never replaced; nothing but the outputs is left behind (no temp files).
  fs::create_directories(d.path() / "adir");
  EXPECT_THROW(write_output_file(d.path() / "adir", "x", Overwrite::Always), UsageError);
  int n = 0;
  for (const auto& e : fs::directory_iterator(d.path())) n += e.path().filename().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(n, 0);
  // Missing parent directories are created.
  write_output_file(d.path() / "a" / "b" / "c.json", "{}");
  EXPECT_EQ(test::read_file(d.path() / "a" / "b" / "c.json"), "{}");
}

}  // namespace
}  // namespace llmport
