#include "runtime/autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define ATTNMT_AUTOCAST_BY_DEVICE_TYPE 1
#endif

namespace attnmt {

bool cpu_autocast_enabled() {
#ifdef ATTNMT_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(at::kCPU);
#else
  return at::autocast::is_cpu_enabled();
#endif
}

void set_cpu_autocast_enabled(bool enabled) {
#ifdef ATTNMT_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_enabled(at::kCPU, enabled);
#else
  at::autocast::set_cpu_enabled(enabled);
#endif
}

c10::ScalarType cpu_autocast_dtype() {
#ifdef ATTNMT_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(at::kCPU);
#else
  return at::autocast::get_autocast_cpu_dtype();
#endif
}

CpuBf16Autocast::CpuBf16Autocast(bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
#ifdef ATTNMT_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
#else
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
#endif
  set_cpu_autocast_enabled(true);
}

void CpuBf16Autocast::end() {
  if (!enabled_) return;
  set_cpu_autocast_enabled(false);
  at::autocast::clear_cache();
  enabled_ = false;
}

}  // namespace attnmt
