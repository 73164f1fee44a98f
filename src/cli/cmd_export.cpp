// attnmt export MODEL --output FILE.pt --precision int8|fp32
// A model file stored in another precision for decoding (io/export.h): int8 ~4x smaller.
#include <filesystem>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "io/export.h"
#include "util/error.h"
#include "util/logging.h"

namespace attnmt::cli {

void add_export_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string model, output, precision = "int8";
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("export", "Write a model file for decoding with its weights in int8 (or back in fp32)");
  cmd->add_option("model", o->model, "A model file, or a save dir (its best.pt)")->required();
  cmd->add_option("--output,-o", o->output, "The model file to write")->required();
  cmd->add_option("--precision", o->precision,
                  "int8: matrices in int8 with a scale per row, decode.precision int8 (default) | fp32");
  cmd->callback([o, &global] {
    setup_logging(global.debug);
    const auto precision = choice_named<DecodePrecision>(o->precision);
    if (precision != DecodePrecision::int8 && precision != DecodePrecision::fp32) {
      throw InputError("--precision: expected int8 or fp32, got '" + o->precision + "'");
    }
    export_model_file(o->model, o->output, *precision);
    const auto before = std::filesystem::is_directory(o->model) ? 0 : std::filesystem::file_size(o->model);
    const auto after = std::filesystem::file_size(o->output);
    if (before > 0) {
      spdlog::info("[export] {} ({:.1f} MB) -> {} ({:.1f} MB, {})", o->model, before / 1e6, o->output, after / 1e6,
                   o->precision);
    } else {
      spdlog::info("[export] {} -> {} ({:.1f} MB, {})", o->model, o->output, after / 1e6, o->precision);
    }
  });
}

}  // namespace attnmt::cli
