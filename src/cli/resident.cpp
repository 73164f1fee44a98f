#include "cli/resident.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "util/error.h"

extern char** environ;

namespace attnmt::cli {

namespace {

constexpr uint32_t kMagic = 0x45525441;  // "ATRE"
constexpr uint32_t kMaxRequest = 64u << 20;
constexpr int kPassedFds = 4;  // stdin, stdout, stderr, the working directory

// What the loading of LibTorch, OpenMP, oneDNN, OpenBLAS, the malloc or attnmt may read: a
// resident engine serves only commands whose values are the ones it loaded with (resident.h).
bool affects_loading(const std::string& entry) {
  static const char* const prefixes[] = {"OMP_",      "GOMP_",    "KMP_",          "DNNL_",  "ONEDNN_", "OPENBLAS_",
                                         "GOTO",      "MKL_",     "TCMALLOC_",     "MALLOC_", "LD_",     "TORCH_",
                                         "PYTORCH_",  "CAFFE2_",  "ATTNMT_",       "LC_",     "LANG=",   "GLIBC_TUNABLES="};
  for (const char* p : prefixes) {
    if (entry.rfind(p, 0) == 0) return true;
  }
  return false;
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

const int kLimits[] = {RLIMIT_AS,     RLIMIT_CORE,   RLIMIT_CPU,    RLIMIT_DATA,  RLIMIT_FSIZE,
                       RLIMIT_MEMLOCK, RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_RSS,   RLIMIT_STACK};

std::string engine_key(const std::string& engine) {
  struct stat st {};
  if (stat(engine.c_str(), &st) != 0) throw RuntimeError("cannot read " + engine + ": " + std::strerror(errno));
  std::string id = std::filesystem::weakly_canonical(engine).string() + '\n' + std::to_string(st.st_dev) + ':' +
                   std::to_string(st.st_ino) + ':' + std::to_string(st.st_size) + ':' +
                   std::to_string(st.st_mtim.tv_sec) + '.' + std::to_string(st.st_mtim.tv_nsec) + '\n' +
                   std::to_string(getuid()) + '\n';
  for (int r : kLimits) {
    struct rlimit lim {};
    getrlimit(r, &lim);
    id += std::to_string(lim.rlim_cur) + '/' + std::to_string(lim.rlim_max) + ' ';
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (affects_loading(*e)) env.emplace_back(*e);
  }
  std::sort(env.begin(), env.end());
  for (const auto& e : env) id += '\n' + e;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(id)));
  return hex;
}

// The directory of the sockets, made 0700; RuntimeError if it is not this user's alone.
std::string socket_dir() {
  std::string dir;
  if (const char* d = std::getenv("ATTNMT_RESIDENT_DIR"); d != nullptr && *d != '\0') {
    dir = d;
  } else if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') {
    dir = std::string(x) + "/attnmt";
  } else {
    dir = "/tmp/attnmt-" + std::to_string(getuid());
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw RuntimeError("cannot make " + dir + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw RuntimeError(dir + " is not a directory");
  if (st.st_uid != getuid()) throw RuntimeError(dir + " belongs to another user");
  if ((st.st_mode & 077) != 0) throw RuntimeError(dir + " can be entered by other users (it must be mode 0700)");
  return dir;
}

double idle_seconds() {
  const char* v = std::getenv("ATTNMT_RESIDENT_IDLE");
  if (v == nullptr || *v == '\0') return 600;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(s > 0) || s > 1e7) {
    throw InputError(std::string("ATTNMT_RESIDENT_IDLE=") + v + ": expected seconds, a number above 0");
  }
  return s;
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw RuntimeError("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

int connect_to(const std::string& path) {
  const auto addr = address_of(path);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

void put_strings(std::string& out, const std::vector<std::string>& items) {
  put_u32(out, static_cast<uint32_t>(items.size()));
  for (const auto& s : items) out.append(s.c_str(), s.size() + 1);
}

// The signals the front passes on to the command (SIGPIPE is the command's own); one the front
// ignores (nohup, a background job of a script) the command ignores too, as it would after exec.
const int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE};

// Starts `engine --resident-engine socket` detached (its own session, reparented to init), its
// output to `log`.
void start_resident_engine(const std::string& engine, const std::string& socket, const std::string& log) {
  const pid_t first = fork();
  if (first < 0) throw RuntimeError(std::string("fork: ") + std::strerror(errno));
  if (first == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(out, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // Not the front's ignored signals (a later command gets its own front's): SIGTERM stops it.
    for (int sig : kForwarded) signal(sig, SIG_DFL);
    const char* args[] = {engine.c_str(), kResidentEngineFlag, socket.c_str(), nullptr};
    execv(engine.c_str(), const_cast<char**>(args));
    _exit(127);
  }
  int status = 0;
  while (waitpid(first, &status, 0) < 0 && errno == EINTR) {
  }
}

uint32_t ignored_signals() {
  uint32_t bits = 0;
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    struct sigaction now {};
    if (sigaction(kForwarded[i], nullptr, &now) == 0 && now.sa_handler == SIG_IGN) bits |= 1u << i;
  }
  return bits;
}

// The front's side once the command runs: signals go on to the child.
volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  const int saved = errno;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
  errno = saved;
}
void stop_both(int) {
  const int saved = errno;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), SIGSTOP);
  kill(getpid(), SIGSTOP);
  errno = saved;
}
void continue_child(int) {
  const int saved = errno;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), SIGCONT);
  errno = saved;
}

void handle(int sig, void (*fn)(int)) {
  struct sigaction sa {};
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

int exit_like(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  // The same death for whoever waits for the front; no core of the front for the child's crash.
  struct rlimit none {};
  setrlimit(RLIMIT_CORE, &none);
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(sig);
  return 128 + sig;
}

}  // namespace

bool resident_engine_wanted() {
  const char* v = std::getenv("ATTNMT_RESIDENT");
  if (v == nullptr || *v == '\0') return false;
  const std::string s = v;
  if (s == "1" || s == "on") return true;
  if (s == "0" || s == "off") return false;
  throw InputError("ATTNMT_RESIDENT=" + s + ": expected 1 or on (the resident engine), 0 or off");
}

// The front's answer where the resident engine cannot be used: one warning line, then the caller
// execs the engine.
int run_directly(const std::string& why) {
  std::fprintf(stderr, "attnmt: warning: ATTNMT_RESIDENT: %s; running the engine directly\n", why.c_str());
  return -1;
}

int run_in_resident_engine(const std::string& engine, int argc, char** argv) {
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) return run_directly("file descriptor " + std::to_string(fd) + " is closed");
  }
  std::string socket, log;
  try {
    idle_seconds();  // a bad value is the user's to hear about, before anything starts
    const std::string dir = socket_dir();
    const std::string key = engine_key(engine);
    socket = dir + "/engine-" + key + ".sock";
    log = dir + "/engine-" + key + ".log";
    address_of(socket);
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    return run_directly(e.what());
  }
  int fd = connect_to(socket);
  if (fd < 0) {
    try {
      start_resident_engine(engine, socket, log);
    } catch (const Error& e) {
      return run_directly(e.what());
    }
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while ((fd = connect_to(socket)) < 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (fd < 0) return run_directly("the resident engine did not start within 20 s (its log: " + log + ")");
  }

  std::string payload;
  const mode_t mask = umask(0);
  umask(mask);
  put_u32(payload, static_cast<uint32_t>(mask));
  const uint32_t ignored = ignored_signals();  // the command's, and which signals to forward
  put_u32(payload, ignored);
  put_strings(payload, std::vector<std::string>(argv, argv + argc));
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  put_strings(payload, env);
  const uint32_t header[2] = {kMagic, static_cast<uint32_t>(payload.size())};

  const int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int fds[kPassedFds] = {0, 1, 2, cwd};
  char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{const_cast<uint32_t*>(header), sizeof header};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
  ssize_t sent = -1;
  if (cwd >= 0) {
    do {
      sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
  }
  int32_t pid = 0;
  if (sent != static_cast<ssize_t>(sizeof header) || !write_all(fd, payload.data(), payload.size()) ||
      !read_all(fd, &pid, sizeof pid) || pid <= 0) {
    close(fd);
    if (cwd >= 0) close(cwd);
    return run_directly("the resident engine (" + socket + ") refused the command" +
                        (cwd < 0 ? " (the working directory cannot be opened)" : ""));
  }
  close(cwd);
  g_child = pid;
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    if ((ignored >> i & 1) == 0 && kForwarded[i] != SIGPIPE) handle(kForwarded[i], forward_signal);
  }
  handle(SIGTSTP, stop_both);
  handle(SIGCONT, continue_child);
  int32_t status = 0;
  if (!read_all(fd, &status, sizeof status)) {
    std::fprintf(stderr, "attnmt: error: the resident engine (%s) ended before the command did\n", socket.c_str());
    return 1;
  }
  return exit_like(status);
}

namespace {

int g_child_exits[2] = {-1, -1};  // SIGCHLD's self-pipe

void on_child_exit(int) {
  const int saved = errno;
  const char byte = 0;
  [[maybe_unused]] const ssize_t w = write(g_child_exits[1], &byte, 1);
  errno = saved;
}

struct Request {
  std::vector<int> fds;
  mode_t umask = 022;
  uint32_t ignored = 0;  // bits of kForwarded
  std::vector<std::string> argv, env;
};

bool take_strings(const std::string& data, size_t& at, std::vector<std::string>& out) {
  uint32_t n = 0;
  if (at + sizeof n > data.size()) return false;
  std::memcpy(&n, data.data() + at, sizeof n);
  at += sizeof n;
  for (uint32_t i = 0; i < n; ++i) {
    const size_t end = data.find('\0', at);
    if (end == std::string::npos) return false;
    out.emplace_back(data, at, end - at);
    at = end + 1;
  }
  return true;
}

// Reads one request; false (fds closed) if it is not one.
bool read_request(int conn, Request& request) {
  uint32_t header[2] = {};
  char control[CMSG_SPACE(sizeof(int) * kPassedFds)] = {};
  iovec iov{header, sizeof header};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t r;
  do {
    r = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
  } while (r < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    request.fds.resize(n);
    std::memcpy(request.fds.data(), CMSG_DATA(c), n * sizeof(int));
  }
  std::string payload;
  bool ok = r == static_cast<ssize_t>(sizeof header) && header[0] == kMagic && header[1] <= kMaxRequest &&
            request.fds.size() == kPassedFds && (msg.msg_flags & MSG_CTRUNC) == 0;
  if (ok) {
    payload.resize(header[1]);
    ok = read_all(conn, payload.data(), payload.size());
  }
  size_t at = 2 * sizeof(uint32_t);
  if (ok && payload.size() >= at) {
    uint32_t mask = 0;
    std::memcpy(&mask, payload.data(), sizeof mask);
    request.umask = static_cast<mode_t>(mask & 0777);
    std::memcpy(&request.ignored, payload.data() + sizeof mask, sizeof request.ignored);
    ok = take_strings(payload, at, request.argv) && take_strings(payload, at, request.env) && at == payload.size() &&
         !request.argv.empty();
  } else {
    ok = false;
  }
  if (!ok) {
    for (int f : request.fds) close(f);
  }
  return ok;
}

// In the forked child: become the front's command.
void become_command(Request& request, int& argc, char**& argv) {
  for (int i = 0; i < 3; ++i) dup2(request.fds[i], i);
  if (fchdir(request.fds[3]) != 0) {
    std::fprintf(stderr, "attnmt: error: cannot enter the working directory: %s\n", std::strerror(errno));
    _exit(1);
  }
  for (int f : request.fds) {
    if (f > 2) close(f);
  }
  umask(request.umask);
  for (size_t i = 0; i < std::size(kForwarded); ++i) signal(kForwarded[i], (request.ignored >> i & 1) ? SIG_IGN : SIG_DFL);
  static std::vector<std::string> env_storage, arg_storage;
  static std::vector<char*> args;
  env_storage = std::move(request.env);
  arg_storage = std::move(request.argv);
  clearenv();
  for (auto& e : env_storage) {
    if (e.find('=') != std::string::npos) putenv(e.data());
  }
  for (auto& a : arg_storage) args.push_back(a.data());
  args.push_back(nullptr);
  argc = static_cast<int>(arg_storage.size());
  argv = args.data();
}

}  // namespace

void serve_as_resident_engine(const std::string& socket_path, void (*warm)(), int& argc, char**& argv) {
  const double idle = idle_seconds();
  warm();
  const auto addr = address_of(socket_path);
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) throw RuntimeError(std::string("socket: ") + std::strerror(errno));
  const mode_t old_mask = umask(077);
  int bound = bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  if (bound != 0 && errno == EADDRINUSE) {
    const int other = connect_to(socket_path);
    if (other >= 0) _exit(0);  // another front started one first
    unlink(socket_path.c_str());
    bound = bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  }
  umask(old_mask);
  if (bound != 0 || listen(listener, 64) != 0) {
    throw RuntimeError("cannot listen on " + socket_path + ": " + std::strerror(errno));
  }
  struct stat mine {};
  stat(socket_path.c_str(), &mine);

  if (pipe2(g_child_exits, O_CLOEXEC | O_NONBLOCK) != 0) throw RuntimeError(std::string("pipe: ") + std::strerror(errno));
  handle(SIGCHLD, on_child_exit);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  struct Running {
    int conn;          // its front's connection
    bool gone = false;  // the front went away (the child was told to end)
  };
  std::map<pid_t, Running> running;
  auto last_active = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<pollfd> polled{{listener, POLLIN, 0}, {g_child_exits[0], POLLIN, 0}};
    std::vector<pid_t> owners{0, 0};
    for (const auto& [pid, child] : running) {
      // A front sends nothing more: readable means it went away.
      polled.push_back({child.gone ? -1 : child.conn, POLLIN, 0});
      owners.push_back(pid);
    }
    int timeout_ms = -1;
    if (running.empty()) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_active).count();
      if (waited >= idle) break;
      timeout_ms = static_cast<int>((idle - waited) * 1000) + 1;
    }
    if (poll(polled.data(), polled.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (polled[1].revents != 0) {
      char drain[64];
      while (read(g_child_exits[0], drain, sizeof drain) > 0) {
      }
    }
    int status = 0;
    for (pid_t done; (done = waitpid(-1, &status, WNOHANG)) > 0;) {
      const auto it = running.find(done);
      if (it == running.end()) continue;
      const int32_t code = status;
      if (it->second.conn >= 0) {
        write_all(it->second.conn, &code, sizeof code);
        close(it->second.conn);
      }
      running.erase(it);
      last_active = std::chrono::steady_clock::now();
    }
    for (size_t i = 2; i < polled.size(); ++i) {
      const auto it = running.find(owners[i]);
      if (polled[i].revents != 0 && it != running.end()) {
        kill(owners[i], SIGTERM);  // its front is gone
        it->second.gone = true;
      }
    }
    if ((polled[0].revents & POLLIN) == 0) continue;
    const int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    ucred peer{};
    socklen_t len = sizeof peer;
    const timeval limit{5, 0};
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    Request request;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != getuid() ||
        !read_request(conn, request)) {
      close(conn);
      continue;
    }
    last_active = std::chrono::steady_clock::now();
    const pid_t child = fork();
    if (child == 0) {
      close(listener);
      close(g_child_exits[0]);
      close(g_child_exits[1]);
      for (const auto& [pid, other] : running) {
        if (other.conn >= 0) close(other.conn);
      }
      close(conn);
      signal(SIGCHLD, SIG_DFL);
      become_command(request, argc, argv);
      return;
    }
    for (int f : request.fds) close(f);
    const int32_t pid = child;
    if (child < 0 || !write_all(conn, &pid, sizeof pid)) {
      if (child > 0) kill(child, SIGTERM);
      close(conn);
      if (child > 0) running[child] = Running{-1, true};
      continue;
    }
    running[child] = Running{conn};
  }
  struct stat now {};
  if (stat(socket_path.c_str(), &now) == 0 && now.st_ino == mine.st_ino && now.st_dev == mine.st_dev) {
    unlink(socket_path.c_str());
  }
  _exit(0);
}

}  // namespace attnmt::cli
