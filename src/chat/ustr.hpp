#pragma once
// Python str operations on UTF-8 text. Python strings index code points, so slicing,
// len(), strip() and case mapping work on decoded code points (utf8proc for the tables).
#include <string>
#include <string_view>
#include <vector>

namespace llmport::jinja::ustr {

/// UTF-8 -> code points (invalid bytes decode as U+FFFD, as errors="replace").
std::u32string decode(std::string_view s);
/// Code points -> UTF-8.
std::string encode(std::u32string_view cps);
/// Python len(str).
std::size_t length(std::string_view s);
/// Python str.isspace() for one code point.
bool is_space(char32_t c);
/// Python str.strip/lstrip/rstrip: `chars` == nullptr strips whitespace.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
/// Python str.upper() / lower() (simple case mapping per code point).
std::string upper(std::string_view s);
std::string lower(std::string_view s);
/// Python str.title() and str.capitalize().
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
/// Python str.split(sep, maxsplit); sep == nullptr splits on whitespace runs.
std::vector<std::string> split(std::string_view s, const std::string* sep, long maxsplit);
/// Python str.rsplit(sep, maxsplit).
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, long maxsplit);
/// Python str.replace(old, new, count) (count < 0: all).
std::string replace(std::string_view s, std::string_view old, std::string_view repl, long count);
/// Python str.isalpha / isdigit / isalnum / islower / isupper (false on "").
bool is_alpha(std::string_view s);
bool is_digit(std::string_view s);
bool is_alnum(std::string_view s);
bool is_lower(std::string_view s);
bool is_upper(std::string_view s);
/// Python str.isprintable() for one code point (repr escapes the others).
bool is_printable(char32_t c);

}  // namespace llmport::jinja::ustr
