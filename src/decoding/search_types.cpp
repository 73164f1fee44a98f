#include "decoding/search_types.h"

#include <algorithm>
#include <cmath>

namespace attnmt {

int64_t max_target_length(int64_t src_len, const SearchOptions& options) {
  constexpr double kLimit = 1 << 20;  // bounded so that no ratio overflows the cast
  const auto by_ratio =
      static_cast<int64_t>(std::min(std::floor(options.max_length_ratio * static_cast<double>(src_len)), kLimit)) + 5;
  return options.max_length > 0 ? std::min<int64_t>(by_ratio, options.max_length) : by_ratio;
}

double gnmt_length_penalty(int64_t length, double alpha) {
  if (alpha == 0.0) return 1.0;
  return std::pow((5.0 + static_cast<double>(length)) / 6.0, alpha);
}

}  // namespace attnmt
