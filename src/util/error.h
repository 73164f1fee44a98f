// Errors that reach the user as one line: "attnmt: error: <message>".
// InputError (exit 2): bad config, bad files, bad arguments — the user can fix the input.
// RuntimeError (exit 1): something failed while running (I/O during save, NaN loss, ...).
// The types are the public API's (include/attnmt/error.h), so that what the library throws is what
// a program linking libattnmt catches.
#pragma once
#include <attnmt/error.h>

#include <string>

namespace attnmt {

// 'text', as messages name a value, a file or a key.
inline std::string in_quotes(const std::string& text) { return "'" + text + "'"; }

}  // namespace attnmt
