// LibTorch's CPU allocator with one change: the 2 MiB-aligned interior of every block of 2 MiB and
// more is madvise(MADV_HUGEPAGE)-d, so that the kernel backs it with transparent huge pages when it
// is first touched.
//
// Why: on virtual machines a 4 KiB page fault is expensive, and the first touch of a fresh block
// costs far more than in huge pages (docs/performance.md). Beam search
// allocates [beams x vocabulary] scores every step, and memory glibc has given back to the kernel
// is faulted in again when it is reused, so decoding kept paying for faults. glibc's own switch for this
// (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) must be set before the process starts; this does the
// same from inside, for LibTorch's blocks only.
//
// Blocks still come from c10::alloc_cpu (glibc) and go back through c10::free_cpu: only the advice
// is added, so memory use and reuse are glibc's as before, and a range already advised costs one
// cheap system call. ATTNMT_HUGE_PAGES=0, or a kernel with transparent huge pages "never", keeps
// LibTorch's allocator unchanged.
//
// Installed by `translate` only: training measured slower with it.
#pragma once
#include <string>

namespace attnmt {

// Call once, before the model is loaded (blocks allocated before it keep LibTorch's deleter, so
// mixing is safe, merely not advised).
void install_huge_page_advice();

// What install_huge_page_advice() did (translate --stats writes it).
std::string cpu_allocator_description();

}  // namespace attnmt
