// Process-wide tuning of the host made once at the start of main(): which OpenBLAS kernels run
// the matrix products, how freed memory is kept, and how the process ends. Each was measured
// (docs/performance.md has the figures).
#pragma once
#include <string>

namespace attnmt {

// Call first thing in main(), before any matrix product and before other threads start.
// OpenBLAS 0.3.21 (Debian bookworm) does not know AMD Zen 4/5 and runs them with its AVX2
// ("Haswell") kernels although they have AVX-512, and some machines pin OPENBLAS_CORETYPE=Haswell
// in their environment. When the CPU and OS support AVX-512 F/BW/VL/DQ and the kernels OpenBLAS
// chose have no AVX-512, switch it to its SkylakeX kernels (through its exported
// gotoblas_dynamic_quit/init, so no re-exec). ATTNMT_BLAS_CORE=keep leaves OpenBLAS's choice alone.
void tune_process();

// Registered in the engine's .preinit_array (cli/engine_main.cpp), so it runs before any shared
// library's initialiser: LibTorch's allocate their operator tables before main() starts.
// - glibc serves blocks from 128 KiB up (its threshold then adapts) with mmap and unmaps them on
//   free, so a training step page-faulted its large tensors in again each time. Blocks up to
//   32 MiB come from the heap, and up to 128 MiB of freed heap is kept (M_MMAP_THRESHOLD,
//   M_TRIM_THRESHOLD).
// - The first 60 MiB of the heap (180 MiB on tcmalloc: a decode's working set too) are taken and
//   freed before the libraries' initialisers allocate
//   into them, and advised into transparent huge pages first: page faults are expensive on a VM,
//   and LibTorch's start makes thousands of them. Not advised for `train` (bf16 training was
//   slower with them); taken and freed all the same (a lower training peak RSS).
//   ATTNMT_HUGE_PAGES=0 leaves them out.
// ATTNMT_MALLOC=system, or a GLIBC_TUNABLES setting, leaves both out (glibc's defaults).
// Where the program runs on tcmalloc (linked in, CMake option ATTNMT_TCMALLOC, the default; or
// LD_PRELOAD-ed) only the second applies, and not for `train`: tcmalloc's page heap keeps the 60
// MiB, and its size classes' spans are cut from them (without, tcmalloc's start page-faulted ~13K
// times against ~3.7K, a third of the engine's start-up time; docs/architecture.md, "Start-up").
void tune_malloc_at_start(int argc, char** argv, char** envp);

// For decoding (translate), before its worker threads start: every thread allocates from glibc's
// main arena (M_ARENA_MAX 1). A worker thread otherwise gets an arena of its own, made of 64 MiB
// heaps that glibc unmaps as soon as one is free, so beam search page-faulted its per-step blocks
// in again and again (one arena: fewer page faults, a lower peak RSS). Training is not changed: its
// replicas allocate concurrently, and one arena made them slower. Skipped like the above with
// ATTNMT_MALLOC=system.
void share_one_malloc_arena();

// Gives the heap's free memory back to the system (tcmalloc's or glibc's), after a phase that
// allocated much and freed it all (SentencePiece's training), so that the next phase's memory does
// not come on top of it.
void release_free_memory();

// Ends the process with exit code `code` once main()'s work is done: flushes stdout, stderr, the
// C++ streams and the log, then _Exit. A normal exit runs every static destructor, and LibTorch's
// deregister its thousands of operators one by one: a noticeable part of a one-sentence
// `translate`, and of every other command. Files attnmt writes are closed
// (and renamed into place) by then. ATTNMT_EXIT=normal returns from main() instead (for leak
// checkers). First, when a run_child parent asked for it, the peak RSS goes to its file
// (util/process.h).
[[noreturn]] void finish_process(int code);

// The malloc in use: "tcmalloc (gperftools 2.10)", "glibc (attnmt's settings)" or "glibc (its
// settings)" (ATTNMT_MALLOC=system or GLIBC_TUNABLES).
std::string malloc_description();

// "OpenBLAS SkylakeX (switched from Haswell)", "OpenBLAS Haswell", or "not OpenBLAS".
std::string blas_description();

}  // namespace attnmt
