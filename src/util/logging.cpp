#include "util/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <memory>
#include <vector>

#include "util/progress.h"

namespace attnmt {

namespace {

// The console sink: a progress line being drawn (util/progress.h) is cleared before a message.
class ConsoleSink : public spdlog::sinks::stderr_color_sink_mt {
 public:
  void log(const spdlog::details::log_msg& msg) override {
    clear_progress_line();
    spdlog::sinks::stderr_color_sink_mt::log(msg);
  }
};

}  // namespace

void setup_logging(bool debug, const std::string& log_file) {
  std::vector<spdlog::sink_ptr> sinks;
  sinks.push_back(std::make_shared<ConsoleSink>());
  if (!log_file.empty()) {
    sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(log_file, /*truncate=*/false));
  }
  auto logger = std::make_shared<spdlog::logger>("attnmt", sinks.begin(), sinks.end());
  logger->set_pattern("[%H:%M:%S] %v");
  logger->set_level(debug ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace attnmt
