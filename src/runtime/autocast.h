// CPU autocast (train.precision: bf16) through one interface for every LibTorch: 2.4 replaced the
// per-device functions (is_cpu_enabled, set_autocast_cpu_dtype, ...) by ones that take the device
// type, and the old ones, kept as deprecated, print a warning at every call (thousands of lines
// in a short training run).
#pragma once
#include <c10/core/ScalarType.h>

namespace attnmt {

bool cpu_autocast_enabled();
void set_cpu_autocast_enabled(bool enabled);
c10::ScalarType cpu_autocast_dtype();

// CPU autocast in bfloat16 from construction to end() (or destruction): matrix products run in
// bfloat16 while parameters stay fp32. end() switches it off and drops the cached weight casts
// (the autograd graph keeps what backward needs). Disabled: does nothing.
class CpuBf16Autocast {
 public:
  explicit CpuBf16Autocast(bool enabled = true);
  ~CpuBf16Autocast() { end(); }
  CpuBf16Autocast(const CpuBf16Autocast&) = delete;
  CpuBf16Autocast& operator=(const CpuBf16Autocast&) = delete;
  void end();

 private:
  bool enabled_;
};

}  // namespace attnmt
