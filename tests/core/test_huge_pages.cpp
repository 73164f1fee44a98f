// runtime/huge_pages.h: after install_huge_page_advice(), LibTorch's large CPU blocks lie in
// memory the kernel has marked for transparent huge pages ("hg" in /proc/self/smaps), and
// tensors still free and compute as before.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/huge_pages.h"
#include "skip.h"

namespace {

// The VmFlags of the mapping that holds `address`, from /proc/self/smaps ("" if none).
std::string vm_flags_at(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-') {  // a mapping's header line
      inside = begin <= address && address < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

bool advised(uintptr_t address) { return vm_flags_at(address).find(" hg") != std::string::npos; }

}  // namespace

TEST_CASE("huge-page advice marks the 2 MiB extents of large blocks, tensors work as before", "[huge_pages]") {
  attnmt::install_huge_page_advice();  // checks /sys/kernel/mm/transparent_hugepage/enabled itself
  if (attnmt::cpu_allocator_description().find("unavailable") != std::string::npos) {
    ATTNMT_MISSING_DEPENDENCY(
        "transparent huge pages are unavailable (/sys/kernel/mm/transparent_hugepage/enabled): nothing to check");
    return;
  }
  REQUIRE(attnmt::cpu_allocator_description().find("huge-page advice") != std::string::npos);

  auto large = torch::ones({6 << 20}, torch::kFloat);  // 24 MiB: whole 2 MiB extents inside
  const auto base = reinterpret_cast<uintptr_t>(large.data_ptr());
  const uintptr_t interior = ((base + (uintptr_t{2} << 20) - 1) & ~((uintptr_t{2} << 20) - 1)) + (uintptr_t{1} << 20);
  CHECK(advised(interior));
  CHECK(large.sum().item<double>() == Approx(6 << 20));

  auto small = torch::ones({1024}, torch::kFloat);  // 4 KiB: no advice of its own
  CHECK(small.sum().item<double>() == 1024.0);
  large = torch::Tensor();  // freed through c10::free_cpu: must not crash
  auto again = torch::zeros({6 << 20}, torch::kFloat);
  CHECK(again.abs().sum().item<double>() == 0.0);
}
