// Logging is set up here once. Messages start with a tag: "[train] ...", "[data] ...".
#pragma once
#include <spdlog/spdlog.h>

#include <string>

namespace attnmt {

// Console logger on stderr ("[HH:MM:SS] message"); with log_file, also appended there.
void setup_logging(bool debug, const std::string& log_file = "");

}  // namespace attnmt
