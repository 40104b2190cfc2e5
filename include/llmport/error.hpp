#pragma once
// Typed errors of the llmport library. The library throws; only the CLI turns an
// error into one line on stderr and an exit code (the same codes in every command).
#include <stdexcept>
#include <string>

namespace llmport {

/// Process exit codes shared by every llmport command.
enum ExitCode : int {
  kExitOk = 0,           ///< success (PASS, PASS-with-warnings, ACCEPT)
  kExitCheckFailed = 1,  ///< a check or gate failed
  kExitBadInput = 2,     ///< bad input or usage
  kExitRejected = 3,     ///< architecture rejected
};

/// Base of all llmport errors. what() is one line naming the file/field at fault.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  /// Exit code the CLI uses for this error.
  virtual int exit_code() const noexcept { return kExitBadInput; }
};

/// config.json / generation_config.json / tokenizer JSON problems (exit 2).
class ConfigError : public Error { using Error::Error; };
/// safetensors / weight-set problems: corrupt file, missing tensor (exit 2).
class WeightsError : public Error { using Error::Error; };
/// A tensor or buffer with the wrong shape (exit 2).
class ShapeError : public Error { using Error::Error; };
/// Bad command-line usage or user input such as a prompt longer than the context (exit 2).
class UsageError : public Error { using Error::Error; };
/// Architecture or feature outside llmport's scope (exit 3).
class UnsupportedError : public Error {
 public:
  using Error::Error;
  int exit_code() const noexcept override { return kExitRejected; }
};
/// A verification check or deployment gate failed (exit 1).
class GateError : public Error {
 public:
  using Error::Error;
  int exit_code() const noexcept override { return kExitCheckFailed; }
};

}  // namespace llmport
