// Errors that reach the user as one line: "attnmt: error: <message>".
// InputError (exit 2): bad config, bad files, bad arguments — the user can fix the input.
// RuntimeError (exit 1): something failed while running (I/O during save, NaN loss, ...).
#pragma once
#include <stdexcept>
#include <string>

namespace attnmt {

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, int exit_code) : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

class InputError : public Error {
 public:
  explicit InputError(const std::string& message) : Error(message, /*exit_code=*/2) {}
};

class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& message) : Error(message, /*exit_code=*/1) {}
};

}  // namespace attnmt
