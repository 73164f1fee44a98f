// The resident engine: LibTorch loaded once, each command a fork of it (ATTNMT_RESIDENT=1).
//
// Every process that loads Debian's LibTorch spends ~0.65 s before its first line of work (the
// dynamic loader, page faults, the operator registrations: docs/architecture.md, "The front and
// the engine"), so a one-line `translate` took ~0.75 s, nearly all of it start-up. With
// ATTNMT_RESIDENT=1 the front (cli/front_main.cpp) hands each engine command to a resident engine
// instead of exec-ing a new one: a process that has loaded LibTorch and run its initialisers, and
// nothing more (no thread, no OpenMP pool, no oneDNN kernel, no model), and that forks a child per
// command. The child is the command: it takes the front's stdin, stdout, stderr (passed over the
// socket), working directory, environment, umask and argv, runs the engine's main() from there
// and exits; the front waits for it, forwards the signals it gets to it (SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGUSR1/2; Ctrl-Z stops both and fg continues both), and exits as it did (its code,
// or the same signal). What the command writes, its exit code and its files are the same as the
// engine's run directly; the start-up is a fork (~0.01 s) and the command's own work.
//
// Zygotes (Android's app start, Chromium's renderers) and build daemons (Gradle, Bazel) do the
// same. It is off by default: the child runs in the resident engine's cgroup and session, not
// the caller's (a batch scheduler would not account or kill it with the job), which a user
// should choose knowingly.
//
// Which resident engine: one per engine binary (path, inode, size, modification time), uid,
// resource limits, and the environment variables that LibTorch, OpenMP, oneDNN, OpenBLAS, the
// malloc or attnmt read while loading (OMP_*, GOMP_*, KMP_*, DNNL_*, ONEDNN_*, OPENBLAS_*, GOTO*,
// MKL_*, TCMALLOC_*, MALLOC_*, GLIBC_TUNABLES, LD_*, TORCH_*, PYTORCH_*, CAFFE2_*, ATTNMT_*, LANG,
// LC_*): a command never runs in a process that loaded with other settings than its own. Its
// socket is `<dir>/engine-<key>.sock`, dir being ATTNMT_RESIDENT_DIR, else $XDG_RUNTIME_DIR/attnmt,
// else /tmp/attnmt-<uid> (made 0700 and refused if another user owns it or others can enter it).
// The first command starts it (and waits for its start-up); it ends after ATTNMT_RESIDENT_IDLE
// seconds (default 600) without a command running, removing its socket. Where it cannot be used
// (the directory refused, the engine does not start within 20 s, stdin/stdout/stderr not open)
// the front says so in one line and execs the engine as without it.
#pragma once
#include <string>

namespace attnmt::cli {

// The front: ATTNMT_RESIDENT's value. true for "1"/"on", false for unset/"0"/"off"; InputError
// naming the variable otherwise.
bool resident_engine_wanted();

// The front: runs argv's command in the resident engine `engine` (the path of attnmt-engine),
// starting it if need be, and returns the code the front exits with (the command's, or
// 128 + signal after re-raising it). Returns -1, having said why on stderr, where the resident
// engine cannot be used; the caller then execs the engine.
int run_in_resident_engine(const std::string& engine, int argc, char** argv);

// The engine, run as `attnmt-engine --resident-engine SOCKET` (by the front only): runs `warm`
// (what every command would do first and may be done before fork: LibTorch's lazily built
// operator registry, the SentencePiece module), listens on SOCKET and forks a child per request, which returns from this function with argc/argv set to
// the command's (and its stdio, directory and environment the front's); the caller then runs
// main()'s body. In the resident process itself, never returns (exits when idle).
void serve_as_resident_engine(const std::string& socket_path, void (*warm)(), int& argc, char**& argv);

inline constexpr const char* kResidentEngineFlag = "--resident-engine";

}  // namespace attnmt::cli
