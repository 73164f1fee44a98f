// attnmt's errors: every failure the library reports is an attnmt::Error whose what() is the one
// line `attnmt` prints after "attnmt: error: " (src/util/error.h, the code's own include, is this
// header: the library and the program throw the same types).
//   InputError   (exit_code() 2): bad input the caller can fix: a missing or corrupt model file,
//                an unknown option or a value out of range.
//   RuntimeError (exit_code() 1): something failed while running.
#pragma once
#include <stdexcept>
#include <string>

namespace attnmt {

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, int exit_code) : std::runtime_error(message), exit_code_(exit_code) {}
  // The exit status `attnmt` gives for this error.
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
