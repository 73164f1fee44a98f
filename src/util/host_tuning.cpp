#include "util/host_tuning.h"
#include "util/process.h"

#include <dlfcn.h>
#include <malloc.h>
#include <strings.h>
#include <sys/mman.h>

#include <cstdint>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>

#include <spdlog/spdlog.h>

// gperftools' tcmalloc (tcmalloc.h), referenced weakly: non-null when tcmalloc is in the process
// (linked into the program, CMake option ATTNMT_TCMALLOC, or LD_PRELOAD-ed), without making the
// libraries depend on it.
extern "C" const char* tc_version(int* major, int* minor, const char** patch) __attribute__((weak));
extern "C" void MallocExtension_ReleaseFreeMemory(void) __attribute__((weak));

namespace attnmt {

namespace {

std::string g_switched_from;  // the kernels OpenBLAS had chosen, when tune_process() changed them

const char* openblas_core() {
  using CoreName = char* (*)();
  auto name = reinterpret_cast<CoreName>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return name != nullptr ? name() : nullptr;
}

bool has_avx512_kernels(const char* core) {
  for (const char* avx512 : {"SkylakeX", "Cooperlake", "SapphireRapids", "Zen4"}) {
    if (strcasecmp(core, avx512) == 0) return true;
  }
  return false;
}

void choose_openblas_kernels() {
  const char* keep = std::getenv("ATTNMT_BLAS_CORE");
  if (keep != nullptr && std::string_view(keep) == "keep") return;
  using Fn = void (*)();
  auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  const char* core = openblas_core();
  if (quit == nullptr || init == nullptr || core == nullptr || has_avx512_kernels(core)) return;
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))) {
    return;
  }
  g_switched_from = core;
  setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);  // gotoblas_dynamic_init reads it; children inherit it
  quit();
  init();
}

bool tcmalloc_in_use() { return tc_version != nullptr; }

// glibc asked to keep its own settings (ATTNMT_MALLOC=system, or a GLIBC_TUNABLES setting).
bool glibc_settings_asked() {
  const char* mode = std::getenv("ATTNMT_MALLOC");
  return (mode != nullptr && std::string_view(mode) == "system") || std::getenv("GLIBC_TUNABLES") != nullptr;
}

// glibc's settings below: not when another malloc is in use or asked to be left alone.
bool malloc_left_alone() { return tcmalloc_in_use() || glibc_settings_asked(); }

// The value of `name` in envp, or nullptr. At pre-init, libc's environ may not be set up yet.
const char* env_value(char** envp, const char* name) {
  const size_t n = strlen(name);
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  }
  return nullptr;
}

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kStartBlock = size_t{30} << 20;  // under the mmap threshold: from the heap
// glibc: 60 MiB (fewer page faults at start than 30 MiB; under M_TRIM_THRESHOLD, so they stay).
// tcmalloc keeps what is freed in its page heap whatever the size: 180 MiB, so that a decode's
// working set (the model, its packed copies, a batch's tensors) lands in huge pages too; pages
// never touched cost nothing (docs/architecture.md, "Start-up").
constexpr int kGlibcStartBlocks = 2;
constexpr int kTcmallocStartBlocks = 6;

// The first `count` blocks of the heap taken, advised into transparent huge pages (unless `advise`
// is false) and freed again: the libraries' initialisers, then decoding, allocate into them next.
void pregrow_heap(bool advise, int count) {
  char* blocks[kTcmallocStartBlocks] = {};
  for (int i = 0; i < count && i < kTcmallocStartBlocks; ++i) {
    char*& block = blocks[i];
    block = static_cast<char*>(malloc(kStartBlock));
    if (block == nullptr) break;
    const auto first = (reinterpret_cast<uintptr_t>(block) + kHugePage - 1) & ~(kHugePage - 1);
    const auto last = (reinterpret_cast<uintptr_t>(block) + kStartBlock) & ~(kHugePage - 1);
    if (advise && last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
  }
  for (char* block : blocks) free(block);
}

}  // namespace

// No C++ library here (libstdc++ is not initialised yet), only libc.
void tune_malloc_at_start(int argc, char** argv, char** envp) {
  const char* huge = env_value(envp, "ATTNMT_HUGE_PAGES");
  const bool huge_pages = !(huge != nullptr && strcmp(huge, "0") == 0);
  const char* command = nullptr;  // the first argument that is not an option
  for (int i = 1; i < argc && command == nullptr; ++i) {
    if (argv[i][0] != '-') command = argv[i];
  }
  const bool advise = command == nullptr || strcmp(command, "train") != 0;
  if (tcmalloc_in_use()) {
    if (advise && huge_pages) pregrow_heap(true, kTcmallocStartBlocks);
    return;
  }
  const char* mode = env_value(envp, "ATTNMT_MALLOC");
  if ((mode != nullptr && strcmp(mode, "system") == 0) || env_value(envp, "GLIBC_TUNABLES") != nullptr) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest; a fixed value also stops its own adjusting
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
  if (!huge_pages) return;
  pregrow_heap(advise, kGlibcStartBlocks);  // they stay in the heap: under M_TRIM_THRESHOLD
}

void tune_process() { choose_openblas_kernels(); }

void share_one_malloc_arena() {
  if (!malloc_left_alone()) mallopt(M_ARENA_MAX, 1);
}

void release_free_memory() {
  if (MallocExtension_ReleaseFreeMemory != nullptr) {
    MallocExtension_ReleaseFreeMemory();
  } else if (!tcmalloc_in_use()) {
    malloc_trim(0);
  }
}

void finish_process(int code) {
  report_peak_rss_if_asked();  // util/process.h: to a run_child parent
  std::cout.flush();
  std::cerr.flush();
  if (auto logger = spdlog::default_logger()) logger->flush();
  std::fflush(nullptr);
  const char* mode = std::getenv("ATTNMT_EXIT");
  if (mode != nullptr && std::string_view(mode) == "normal") std::exit(code);
  std::_Exit(code);
}

std::string malloc_description() {
  if (tcmalloc_in_use()) return std::string("tcmalloc (") + tc_version(nullptr, nullptr, nullptr) + ")";
  return glibc_settings_asked() ? "glibc (its settings)" : "glibc (attnmt's settings)";
}

std::string blas_description() {
  const char* core = openblas_core();
  if (core == nullptr) return "not OpenBLAS";
  std::string out = std::string("OpenBLAS ") + core;
  if (!g_switched_from.empty()) out += " (switched from " + g_switched_from + ")";
  return out;
}

}  // namespace attnmt
