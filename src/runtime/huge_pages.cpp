#include "runtime/huge_pages.h"

#include <c10/core/Allocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string_view>

namespace attnmt {

namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

// Advises the whole 2 MiB extents inside [data, data + n): a partly covered extent is left alone,
// since a huge page there would also back memory that belongs to other blocks.
void advise_huge_pages(void* data, size_t n) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t last = (begin + n) & ~(kHugePage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

c10::DataPtr allocate_advised(size_t n) {
  void* data = c10::alloc_cpu(n);  // throws c10::Error when out of memory, as LibTorch's does
  if (n >= kHugePage) advise_huge_pages(data, n);
  return {data, data, &c10::free_cpu, c10::Device(c10::DeviceType::CPU)};
}

// c10::Allocator's interface differs between LibTorch versions (1.x: a const allocate; 2.3 and
// later: a non-const allocate and a pure virtual copy_data). Both allocate overloads and copy_data
// are declared without `override`, so whichever ones the base declares are overridden.
class HugePageAdvisingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) const { return allocate_advised(n); }
  c10::DataPtr allocate(size_t n) { return allocate_advised(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return &c10::free_cpu; }
};

HugePageAdvisingAllocator g_allocator;
std::string g_description = "LibTorch's";

bool transparent_huge_pages_usable() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(f, line) && line.find("[never]") == std::string::npos;
}

}  // namespace

void install_huge_page_advice() {
  const char* env = std::getenv("ATTNMT_HUGE_PAGES");
  if (env != nullptr && std::string_view(env) == "0") {
    g_description = "LibTorch's (ATTNMT_HUGE_PAGES=0)";
    return;
  }
  if (!transparent_huge_pages_usable()) {
    g_description = "LibTorch's (transparent huge pages unavailable)";
    return;
  }
  c10::SetAllocator(c10::DeviceType::CPU, &g_allocator, /*priority=*/1);
  g_description = "LibTorch's + huge-page advice for blocks >= 2 MiB";
}

std::string cpu_allocator_description() { return g_description; }

}  // namespace attnmt
