// -inf, the log-probability of what search may not choose, in the two precisions decoding uses.
#pragma once
#include <limits>

namespace attnmt {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr float kNegInfF = -std::numeric_limits<float>::infinity();

}  // namespace attnmt
