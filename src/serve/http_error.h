// An answer of `attnmt serve` that is not a result: its status and the {"error": message} body.
// Thrown by the request handlers (server.cpp, page_api.cpp) and answered by the endpoint wrapper.
#pragma once
#include <string>

namespace attnmt {

struct HttpError {
  int status;
  std::string message;
};

}  // namespace attnmt
