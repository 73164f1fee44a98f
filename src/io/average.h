// attnmt average: checkpoint averaging. The element-wise mean of several model files' parameters
// (and floating-point buffers), written as one model file for decoding, with the first file's
// config, tokenizers and lexicon and the training progress of the one trained longest.
#pragma once
#include <string>
#include <vector>

namespace attnmt {

// InputError (naming the file and, for another architecture, the first config line that
// differs) when the files are not models of one architecture and vocabulary; nothing is written
// then.
void average_model_files(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace attnmt
