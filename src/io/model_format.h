// The model-file format version this attnmt writes (io/model_file.h describes the formats); it
// reads every format from 1 up to it. Torch-free, for the public API's model_format_version().
#pragma once
#include <cstdint>

namespace attnmt {

constexpr int64_t kModelFormat = 2;

}  // namespace attnmt
