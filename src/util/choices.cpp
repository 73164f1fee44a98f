#include "util/choices.h"

#include "util/error.h"

namespace attnmt {

std::string choices_text(const std::string_view* names, size_t count) {
  std::string text;
  for (size_t i = 0; i < count; ++i) text += (i ? ", " : "") + std::string(names[i]);
  return "one of {" + text + "}";
}

void throw_unknown_choice(const std::string& what, const std::string_view* names, size_t count,
                          const std::string& name) {
  throw InputError(what + " must be " + choices_text(names, count) + ", got " + in_quotes(name));
}

}  // namespace attnmt
