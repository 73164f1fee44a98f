// attnmt average --output FILE.pt (MODEL.pt... | --last N SAVE_DIR)
// Checkpoint averaging (io/average.h): the mean of the models' weights, one model file.
#include <filesystem>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "io/average.h"
#include "io/model_file.h"
#include "util/error.h"
#include "util/logging.h"

namespace attnmt::cli {

void add_average_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::vector<std::string> inputs;
    std::string output;
    int last = 0;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("average", "Average the weights of checkpoints of one model into one model file");
  cmd->add_option("inputs", o->inputs, "Model files, or (with --last) one save dir")->required();
  cmd->add_option("--output,-o", o->output, "The averaged model file to write")->required();
  cmd->add_option("--last", o->last, "The save dir's N newest step checkpoints")->check(CLI::Range(1, 1000000));
  cmd->callback([o, &global] {
    setup_logging(global.debug);
    std::vector<std::string> files = o->inputs;
    if (o->last > 0) {
      if (o->inputs.size() != 1 || !std::filesystem::is_directory(o->inputs.front())) {
        throw InputError("--last " + std::to_string(o->last) + " takes one save dir (given: " + o->inputs.front() +
                         (o->inputs.size() > 1 ? " and others" : "") + ")");
      }
      files = list_step_checkpoints(o->inputs.front());  // newest first
      if (static_cast<int>(files.size()) < o->last) {
        throw InputError("--last " + std::to_string(o->last) + ": '" + o->inputs.front() + "' has " +
                         std::to_string(files.size()) + " step checkpoint(s) (train.keep_checkpoints keeps more)");
      }
      files.resize(static_cast<size_t>(o->last));
    } else {
      for (const auto& f : files) {
        if (std::filesystem::is_directory(f)) {
          throw InputError("'" + f + "' is a directory: give model files, or one save dir with --last N");
        }
      }
    }
    average_model_files(files, o->output);
    std::string list;
    for (const auto& f : files) list += (list.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
    spdlog::info("[average] {} model(s) ({}) -> {}", files.size(), list, o->output);
  });
}

}  // namespace attnmt::cli
