// attnmt export: a model file rewritten for decoding in another storage precision.
//   int8: every matrix (weights, embeddings) stored as int8 with a scale per row (~4x smaller),
//         and decode.precision: int8 as the file's default; decoding it in int8 quantises the
//         stored values back to themselves (runtime/int8_gemm.h), so nothing is lost twice;
//   fp32: every weight in fp32 again (an int8 file's dequantised values).
// The config, tokenizers, lexicon and training progress are the input's; the optimizer state is not
// kept (the file is for decoding, like best.pt).
#pragma once
#include <string>

#include "util/choices.h"

namespace attnmt {

// InputError (naming the flag or file) for another precision or an unreadable model; nothing is
// written then.
void export_model_file(const std::string& input, const std::string& output, DecodePrecision precision);

}  // namespace attnmt
