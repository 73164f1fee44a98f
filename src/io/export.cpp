#include "io/export.h"

#include <torch/torch.h>

#include "io/model_file.h"
#include "util/error.h"

namespace attnmt {

void export_model_file(const std::string& input, const std::string& output, DecodePrecision precision) {
  if (precision != DecodePrecision::int8 && precision != DecodePrecision::fp32) {
    throw InputError("--precision: expected int8 or fp32, got '" + name_string(precision) + "'");
  }
  torch::NoGradGuard no_grad;
  // Loaded without a shortlist (no lexicon needed); the file keeps its stored config.
  auto loaded = load_model(input, "", "cpu", {"decode.shortlist=false"});
  CheckpointFile file(loaded.checkpoint);
  auto config = file.header().config;
  const bool int8 = precision == DecodePrecision::int8;
  if (int8) {
    config.decode.precision = DecodePrecision::int8;
  } else if (config.decode.precision == DecodePrecision::int8) {
    config.decode.precision = DecodePrecision::fp32;
  }
  save_checkpoint(output, config, loaded.model, nullptr, file.header().progress, {loaded.tokenizers, file.lexicon()},
                  nullptr, int8);
}

}  // namespace attnmt
