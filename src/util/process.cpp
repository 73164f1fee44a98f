#include "util/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/error.h"
#include "util/signals.h"

extern char** environ;

namespace attnmt {

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw RuntimeError("cannot find this program's path (/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

long peak_rss_kib_of_self() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

void report_peak_rss_if_asked() {
  const char* path = std::getenv(kPeakRssFileVariable);
  if (path == nullptr || *path == '\0') return;
  const long kib = peak_rss_kib_of_self();
  if (kib <= 0) return;
  if (FILE* f = std::fopen(path, "w")) {
    std::fprintf(f, "%ld\n", kib);
    std::fclose(f);
  }
}

pid_t spawn_child(const std::vector<std::string>& argv, const std::vector<std::pair<std::string, std::string>>& env,
                  const std::string& output_path) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    const bool replaced = std::any_of(env.begin(), env.end(), [&](const auto& kv) {
      return std::strncmp(*e, kv.first.c_str(), kv.first.size()) == 0 && (*e)[kv.first.size()] == '=';
    });
    if (!replaced) env_text.emplace_back(*e);
  }
  for (const auto& [name, value] : env) env_text.push_back(name + "=" + value);
  std::vector<char*> env_ptrs;
  for (auto& e : env_text) env_ptrs.push_back(e.data());
  env_ptrs.push_back(nullptr);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (!output_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  pid_t pid = 0;
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  const sigset_t mask = signal_mask_for_children();
  posix_spawnattr_setsigmask(&attributes, &mask);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  const int rc = posix_spawn(&pid, args[0], &actions, &attributes, args.data(), env_ptrs.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw RuntimeError("cannot start '" + argv[0] + "': " + std::strerror(rc));
  return pid;
}

ChildResult run_child(const std::vector<std::string>& argv, const std::string& output_path,
                      const std::vector<std::pair<std::string, std::string>>& env) {
  // Where the child writes its peak RSS.
  static std::atomic<int> serial{0};
  const std::string rss_file =
      (std::filesystem::temp_directory_path() /
       ("attnmt_rss." + std::to_string(::getpid()) + "." + std::to_string(serial++)))
          .string();
  std::remove(rss_file.c_str());
  const auto start = std::chrono::steady_clock::now();
  auto child_env = env;
  child_env.emplace_back(kPeakRssFileVariable, rss_file);
  const pid_t pid = spawn_child(argv, child_env, output_path);
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) throw RuntimeError("waiting for '" + argv[0] + "' failed: " + std::strerror(errno));
  }
  ChildResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.peak_rss_mib = usage.ru_maxrss / 1024.0;  // Linux: KiB; at least the parent's peak (see process.h)
  std::ifstream reported(rss_file);
  long kib = 0;
  if (reported >> kib && kib > 0) {
    r.peak_rss_mib = static_cast<double>(kib) / 1024.0;
    r.rss_from_child = true;
  }
  reported.close();
  std::remove(rss_file.c_str());
  return r;
}

}  // namespace attnmt
