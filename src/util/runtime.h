// Process-wide run-time choices made once at the start of main(): which OpenBLAS kernels run
// the matrix products, and how freed memory is kept. Both were measured (README "Speed").
#pragma once
#include <string>

namespace attnmt {

// Call first thing in main(), before any matrix product and before other threads start.
// - OpenBLAS 0.3.21 (Debian bookworm) does not know AMD Zen 4/5 and runs them with its AVX2
//   ("Haswell") kernels although they have AVX-512, and some machines pin
//   OPENBLAS_CORETYPE=Haswell in their environment. When the CPU and OS support AVX-512
//   F/BW/VL/DQ and the kernels OpenBLAS chose have no AVX-512, switch it to its SkylakeX kernels
//   (through its exported gotoblas_dynamic_quit/init, so no re-exec). ATTNMT_BLAS_CORE=keep
//   leaves OpenBLAS's choice alone.
// - glibc serves blocks from 128 KiB up (its threshold then adapts) with mmap and unmaps them on
//   free, so a training step page-faulted its large tensors in again each time (13% of the time,
//   in the kernel, before the loss was chunked). Blocks up to 32 MiB now come from the heap, and
//   up to 128 MiB of freed heap is kept (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD). ATTNMT_MALLOC=system
//   (or a GLIBC_TUNABLES setting) keeps glibc's defaults.
void tune_process();

// "OpenBLAS SkylakeX (switched from Haswell)", "OpenBLAS Haswell", or "not OpenBLAS".
std::string blas_description();

}  // namespace attnmt
