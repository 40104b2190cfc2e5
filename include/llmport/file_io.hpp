#pragma once
// Bounded readers of the files a user hands llmport and the one way llmport writes an
// output file. Every JSON file goes through parse_json_text (nesting depth, number
// overflow, one-line errors naming the file); every output through write_output_file
// (temporary name + rename; an existing file the tool did not write is kept).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace llmport {

/// Deepest nesting of arrays/objects accepted in any JSON file llmport reads (config.json
/// nests 3-4 levels, tokenizer.json normalizer chains about 6). Deeper input is rejected
/// while parsing, before anything recurses on it.
inline constexpr int kMaxJsonDepth = 128;

/// Largest text file read whole (tokenizer.json of a 256k vocabulary is ~35 MB).
inline constexpr std::uint64_t kMaxTextFileBytes = 1ull << 30;

/// What a key that appears twice in one object means: `last_wins` keeps the last, as
/// Python's json and HF transformers do (config.json, tokenizer.json); `distinct` refuses
/// the file, for files where the two readings would load different data or verdicts
/// (safetensors headers and indexes, golden records).
enum class JsonKeys { last_wins, distinct };

/// Parses JSON `text`. Throws ConfigError "<where>: ..." for malformed JSON, nesting deeper
/// than kMaxJsonDepth, a number that does not fit a double/64-bit integer, or (`distinct`)
/// a key that appears twice in one object.
nlohmann::json parse_json_text(std::string_view text, const std::string& where, JsonKeys keys = JsonKeys::last_wins);
nlohmann::ordered_json parse_ordered_json_text(std::string_view text, const std::string& where,
                                               JsonKeys keys = JsonKeys::last_wins);

/// The reason of a JSON parse failure in llmport's words, one line, without nlohmann's
/// "[json.exception.parse_error.101]" id: a syntax error as "syntax error at line L,
/// column C (reason)" (`with_line`: files people edit) or "syntax error at byte N (reason)"
/// (request bodies); any other exception (a number that does not fit) as its message
/// without the id.
std::string json_error_text(const nlohmann::json::exception& e, bool with_line = true);

/// The whole of a regular file no larger than `max_bytes`. Throws ConfigError
/// "<file>: ..." for a missing file, a directory, a FIFO/device, a larger file or a read
/// error (never blocks on a FIFO: it is refused before it is opened).
std::string read_text_file(const std::filesystem::path& file, std::uint64_t max_bytes = kMaxTextFileBytes);

/// `v` serialized for an error message, cut to at most 40 characters ("..." ending a cut).
std::string json_excerpt(const nlohmann::json& v);

/// `v` as an integer in [lo, hi]: an integer, or an integral float. Throws ConfigError
/// "field '<name>': ..." naming the field when it is not an integer or does not fit.
long long json_integer(const nlohmann::json& v, const std::string& name, long long lo, long long hi);

/// One-line, printable form of a message: control bytes and invalid UTF-8 become \xNN
/// (newlines \n); valid UTF-8 text is kept.
std::string printable(std::string_view s);

/// A temporary name beside `file` for writing it in full before renaming it over `file`:
/// ".<name>.tmp.<pid>.<thread>.<counter>" in the same directory (so the rename is atomic),
/// unique per process, thread and call. Writers that share a directory (several processes
/// over one kernel cache) never truncate, rename or remove each other's temporary file, so
/// the file a reader sees is always one writer's whole output.
std::filesystem::path unique_temp_path(const std::filesystem::path& file);

/// How write_output_file treats an existing file at the path.
enum class Overwrite {
  Refuse,     ///< an existing file is kept; UsageError (exit 2) naming it and --force
  IfMarked,   ///< replaced only when it contains `marker` (a file this tool wrote)
  Always,     ///< replaced (the user passed --force, or the file is the tool's own)
};

/// The check write_output_file makes before writing: throws UsageError naming `file` when
/// it exists and `policy` keeps it (or it is a directory / not a regular file). Lets a
/// command check all its outputs before it writes the first.
void check_output_path(const std::filesystem::path& file, Overwrite policy = Overwrite::Refuse,
                       std::string_view marker = {});

/// For an output FILE the user names (diagnosis --svg, perplexity --save-logits): throws
/// UsageError "--svg /no/such/x.svg: directory /no/such does not exist" (`flag` first) when
/// the file's directory is missing, or "...: /a/f is not a directory" when it is a file, so
/// a typo in the path is reported before any work instead of a directory tree being made.
/// Directory options (-o DIR, --report-dir, --out) create their directory instead.
void check_output_parent(const std::filesystem::path& file, const std::string& flag);

/// Writes `text` to `file` through a temporary file in the same directory + rename, so an
/// interrupted run never leaves a half-written file. An existing path that is a directory
/// or not a regular file is always refused. Throws UsageError naming the file.
void write_output_file(const std::filesystem::path& file, std::string_view text,
                       Overwrite policy = Overwrite::Refuse, std::string_view marker = {});

}  // namespace llmport
