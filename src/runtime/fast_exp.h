// exp without a call or a branch, so that the loops using it vectorise (the fused LSTM cell,
// beam search's log-normalisers). Header-only: each user compiles it for its own target clones,
// and with -fno-trapping-math (CMakeLists.txt): by default GCC keeps the clamps below as branches
// (a comparison may trap) and the loops stay scalar.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace attnmt {

// exp(x) for float: x = k ln2 + r with |r| <= ln2 / 2, exp(r) by its Taylor series to r^7
// (truncation < 3e-9 relative), 2^k by writing the exponent bits. x is clamped to [-87, 88] (no
// overflow or denormals; beyond the clamps sigmoid is 1, or below 2e-38, either way) with
// comparisons that let NaN through.
// No calls and no branches, so the loops that use it vectorise.
inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to an integer
  const float k = (x * 1.44269504088896341f + kRound) - kRound;  // nearest integer to x / ln2
  const float r = (x - k * 0.693145751953125f) - k * 1.428606765330187045e-06f;  // ln2 in two parts
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}
inline double fast_exp(double x) { return std::exp(x); }

}  // namespace attnmt
