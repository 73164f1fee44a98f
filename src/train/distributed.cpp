#include "train/distributed.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "util/error.h"
#include "util/process.h"
#include "util/logging.h"
#include "util/signals.h"

#ifdef ATTNMT_WITH_C10D
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef ATTNMT_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#endif

namespace attnmt {

namespace {

[[maybe_unused]] std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

int env_int(const char* name, int fallback, bool required) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    if (required) throw InputError(std::string("--distributed: environment variable ") + name + " is not set");
    return fallback;
  }
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0 || n > 1000000) {
    throw InputError(std::string("--distributed: environment variable ") + name + "='" + v +
                     "' is not a non-negative integer");
  }
  return static_cast<int>(n);
}

}  // namespace

DistributedEnv distributed_env_from_environment() {
  DistributedEnv e;
  e.rank = env_int("RANK", 0, true);
  e.world_size = env_int("WORLD_SIZE", 1, true);
  e.local_rank = env_int("LOCAL_RANK", e.rank, false);
  e.local_world_size = env_int("LOCAL_WORLD_SIZE", 1, false);
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) e.master_addr = a;
  else throw InputError("--distributed: environment variable MASTER_ADDR is not set");
  e.master_port = env_int("MASTER_PORT", 29500, true);
  if (e.world_size < 1) throw InputError("--distributed: WORLD_SIZE must be >= 1");
  if (e.rank >= e.world_size) {
    throw InputError("--distributed: RANK=" + std::to_string(e.rank) + " is not below WORLD_SIZE=" +
                     std::to_string(e.world_size));
  }
  if (e.master_port < 1 || e.master_port > 65535) throw InputError("--distributed: MASTER_PORT must be in 1..65535");
  if (e.local_world_size < 1) e.local_world_size = 1;
  return e;
}

std::vector<size_t> shard_batch(const std::vector<size_t>& global_batch, int rank, int world_size) {
  const size_t n = global_batch.size();
  const size_t begin = n * static_cast<size_t>(rank) / static_cast<size_t>(world_size);
  const size_t end = n * static_cast<size_t>(rank + 1) / static_cast<size_t>(world_size);
  return {global_batch.begin() + static_cast<std::ptrdiff_t>(begin),
          global_batch.begin() + static_cast<std::ptrdiff_t>(end)};
}

// ---------------------------------------------------------------------------------------------
// The process group

#ifdef ATTNMT_WITH_C10D

bool distributed_available() { return true; }

struct Distributed::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;  // control values, bytes; gradients on CPU
#ifdef ATTNMT_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // gradients on CUDA
#endif
};

namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host.rfind("127.", 0) == 0; }

}  // namespace

Distributed::Distributed(const DistributedEnv& env, const DistributedConfig& config, const torch::Device& device)
    : env_(env), config_(config), device_(device) {
  if (env_.world_size <= 1) return;
  // A peer that dies closes its sockets: the next write must fail with an error we report, not
  // kill this process silently with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config_.timeout * 1000));
  const std::string where = env_.master_addr + ":" + std::to_string(env_.master_port);
  impl_ = std::make_unique<Impl>();
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(env_.master_port);
    opts.isServer = env_.rank == 0;
    opts.numWorkers = static_cast<size_t>(env_.world_size);
    opts.waitWorkers = true;
    opts.timeout = timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(env_.master_addr, opts);
  } catch (const std::exception& e) {
    throw RuntimeError("distributed: rank " + std::to_string(env_.rank) + " could not join the rendezvous at " +
                       where + ": " + first_line(e.what()));
  }
  try {
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (is_loopback(env_.master_addr)) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    auto gloo_store = c10::make_intrusive<c10d::PrefixStore>("attnmt/gloo", impl_->store);
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(gloo_store, env_.rank, env_.world_size, options);
#ifdef ATTNMT_WITH_NCCL
    const bool want_nccl = config_.backend == "nccl" || (config_.backend == "auto" && device_.is_cuda());
    if (want_nccl) {
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = timeout;
      auto nccl_store = c10::make_intrusive<c10d::PrefixStore>("attnmt/nccl", impl_->store);
      impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(nccl_store, env_.rank, env_.world_size, nccl_options);
    }
#else
    if (config_.backend == "nccl") {
      throw InputError("distributed.backend: nccl asked for, but this attnmt was built without NCCL (use gloo)");
    }
#endif
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError("distributed: rank " + std::to_string(env_.rank) + " could not create the process group: " +
                       first_line(e.what()));
  }
}

Distributed::~Distributed() = default;

std::string Distributed::backend() const {
  if (!impl_) return "none";
#ifdef ATTNMT_WITH_NCCL
  if (impl_->nccl) return "nccl";
#endif
  return "gloo";
}

namespace {

// Runs a collective; any failure (a peer gone, a timeout) becomes one RuntimeError naming this
// rank (c10::Error's what() starts with its message; the backtrace follows on later lines).
template <typename F>
void collective(const DistributedEnv& env, const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    throw RuntimeError("distributed: rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                       ": " + what + " failed (another rank stopped, crashed or timed out): " + first_line(e.what()));
  }
}

void reduce_doubles(c10d::ProcessGroupGloo& pg, std::vector<double>& values, c10d::ReduceOp op) {
  auto t = torch::tensor(values, torch::kDouble);
  std::vector<at::Tensor> tensors{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  pg.allreduce(tensors, opts)->wait();
  auto acc = t.accessor<double, 1>();
  for (size_t i = 0; i < values.size(); ++i) values[i] = acc[static_cast<int64_t>(i)];
}

}  // namespace

void Distributed::allreduce_sum(std::vector<double>& values) {
  if (!active()) return;
  collective(env_, "all-reduce", [&] { reduce_doubles(*impl_->gloo, values, c10d::ReduceOp::SUM); });
}

void Distributed::allreduce_max(std::vector<double>& values) {
  if (!active()) return;
  collective(env_, "all-reduce", [&] { reduce_doubles(*impl_->gloo, values, c10d::ReduceOp::MAX); });
}

void Distributed::allreduce_gradients(const std::vector<torch::Tensor>& parameters) {
  if (!active()) return;
  const auto start = std::chrono::steady_clock::now();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  grads.reserve(parameters.size());
  for (const auto& p : parameters) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  const auto limit = static_cast<int64_t>(config_.bucket_mb * 1024 * 1024);
  struct Bucket {
    std::vector<size_t> members;
    torch::Tensor flat;        // what the collective reduces (a CPU copy for Gloo on CUDA)
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<Bucket> buckets;
  collective(env_, "gradient all-reduce", [&] {
    std::vector<size_t> members;
    int64_t bytes = 0;
    auto flush = [&] {
      if (members.empty()) return;
      std::vector<torch::Tensor> views;
      for (size_t i : members) views.push_back(grads[i].reshape({-1}));
      Bucket b;
      b.members = std::move(members);
      b.flat = torch::cat(views);
      std::vector<at::Tensor> tensors;
#ifdef ATTNMT_WITH_NCCL
      if (impl_->nccl && b.flat.is_cuda()) {
        tensors.push_back(b.flat);
        b.work = impl_->nccl->allreduce(tensors);
      } else
#endif
      {
        if (!b.flat.is_cpu()) b.flat = b.flat.cpu();
        tensors.push_back(b.flat);
        b.work = impl_->gloo->allreduce(tensors);
      }
      buckets.push_back(std::move(b));
      members.clear();
      bytes = 0;
    };
    for (size_t i = 0; i < grads.size(); ++i) {
      members.push_back(i);
      bytes += grads[i].numel() * static_cast<int64_t>(grads[i].element_size());
      if (bytes >= limit) flush();
    }
    flush();
    for (auto& b : buckets) {
      b.work->wait();
      int64_t offset = 0;
      for (size_t i : b.members) {
        auto& g = grads[i];
        g.copy_(b.flat.narrow(0, offset, g.numel()).view_as(g));
        offset += g.numel();
      }
    }
  });
  gradient_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Distributed::broadcast_bytes(const std::string& bytes_on_rank0) {
  if (!active()) return bytes_on_rank0;
  std::string out;
  collective(env_, "broadcast", [&] {
    auto size = torch::tensor({static_cast<int64_t>(is_main() ? bytes_on_rank0.size() : 0)}, torch::kLong);
    std::vector<at::Tensor> s{size};
    impl_->gloo->broadcast(s)->wait();
    const int64_t n = size.item<int64_t>();
    auto data = torch::empty({n}, torch::kUInt8);
    if (is_main() && n > 0) std::memcpy(data.data_ptr<uint8_t>(), bytes_on_rank0.data(), static_cast<size_t>(n));
    std::vector<at::Tensor> d{data};
    if (n > 0) impl_->gloo->broadcast(d)->wait();
    out.assign(reinterpret_cast<const char*>(data.data_ptr<uint8_t>()), static_cast<size_t>(n));
  });
  return out;
}

void Distributed::broadcast_tensors(const std::vector<torch::Tensor>& tensors) {
  if (!active()) return;
  torch::NoGradGuard no_grad;
  collective(env_, "broadcast", [&] {
    for (const auto& t : tensors) {
      auto host = t.is_cpu() ? t.contiguous() : t.cpu().contiguous();
      std::vector<at::Tensor> v{host};
      impl_->gloo->broadcast(v)->wait();
      if (!host.is_same(t)) t.copy_(host);
    }
  });
}

void Distributed::barrier() {
  if (!active()) return;
  collective(env_, "barrier", [&] { impl_->gloo->barrier()->wait(); });
}

#else  // no c10d

bool distributed_available() { return false; }

struct Distributed::Impl {};

Distributed::Distributed(const DistributedEnv& env, const DistributedConfig& config, const torch::Device& device)
    : env_(env), config_(config), device_(device) {
  if (env_.world_size > 1) {
    throw InputError("distributed training: this attnmt was built without c10d/Gloo support "
                     "(install libgloo-dev and rebuild)");
  }
}
Distributed::~Distributed() = default;
std::string Distributed::backend() const { return "none"; }
void Distributed::allreduce_sum(std::vector<double>&) {}
void Distributed::allreduce_max(std::vector<double>&) {}
void Distributed::allreduce_gradients(const std::vector<torch::Tensor>&) {}
std::string Distributed::broadcast_bytes(const std::string& bytes_on_rank0) { return bytes_on_rank0; }
void Distributed::broadcast_tensors(const std::vector<torch::Tensor>&) {}
void Distributed::barrier() {}

#endif

// ---------------------------------------------------------------------------------------------
// attnmt train --nproc N

namespace {

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw RuntimeError(std::string("--nproc: cannot open a socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw RuntimeError(std::string("--nproc: cannot find a free port: ") + std::strerror(errno));
  }
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "stopped (status " + std::to_string(status) + ")";
}

}  // namespace

void launch_local_workers(int nproc, const std::vector<std::string>& worker_args, double kill_after_seconds) {
  std::vector<std::string> argv = {self_executable()};
  argv.insert(argv.end(), worker_args.begin(), worker_args.end());
  const std::string port = std::to_string(free_local_port());

  StopSignals stop_signals;  // SIGINT / SIGTERM are forwarded to the ranks (polled below); the
                            // ranks start with them unblocked (spawn_child)

  std::vector<pid_t> pids(static_cast<size_t>(nproc), -1);
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = -1;
    try {
      pid = spawn_child(argv, {{"RANK", std::to_string(r)},
                               {"LOCAL_RANK", std::to_string(r)},
                               {"WORLD_SIZE", std::to_string(nproc)},
                               {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
                               {"MASTER_ADDR", "127.0.0.1"},
                               {"MASTER_PORT", port}});
    } catch (const Error& e) {
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGTERM);
      }
      throw RuntimeError(std::string("--nproc: ") + e.what());
    }
    pids[static_cast<size_t>(r)] = pid;
    spdlog::info("[train] rank {} of {}: pid {}", r, nproc, pid);
  }

  auto rank_of = [&](pid_t pid) {
    for (size_t r = 0; r < pids.size(); ++r)
      if (pids[r] == pid) return static_cast<int>(r);
    return -1;
  };
  auto signal_running = [&](int sig) {
    for (pid_t p : pids)
      if (p > 0) ::kill(p, sig);
  };
  // After a failure the others usually fail by themselves at their next collective (the dead
  // rank's connections are closed); those that do not (blocked elsewhere) get SIGTERM after a
  // grace period, then SIGKILL.
  using Clock = std::chrono::steady_clock;
  constexpr auto kGrace = std::chrono::seconds(10);
  int running = nproc;
  std::string failure;
  int exit_code = 0;
  Clock::time_point term_at = Clock::time_point::max(), kill_at = Clock::time_point::max();
  // Polled every 20 ms: a signal for the ranks arrives through stop_signals, not by interrupting
  // waitpid (no thread is interrupted by SIGINT/SIGTERM, util/signals.h).
  while (running > 0) {
    if (const int sig = stop_signals.take()) signal_running(sig);
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (pid == 0) {
      const auto now = Clock::now();  // after a failure, the others get SIGTERM, then SIGKILL
      if (now >= term_at) {
        signal_running(SIGTERM);
        term_at = Clock::time_point::max();
      } else if (now >= kill_at) {
        signal_running(SIGKILL);
        kill_at = Clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const int rank = rank_of(pid);
    if (rank < 0) continue;
    pids[static_cast<size_t>(rank)] = -1;
    --running;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!failure.empty()) spdlog::info("[train] rank {} of {} {}", rank, nproc, describe_status(status));
    if (!ok && failure.empty()) {
      failure = "rank " + std::to_string(rank) + " of " + std::to_string(nproc) + " " + describe_status(status);
      exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
      if (running > 0) {
        std::fprintf(stderr, "attnmt: %s: stopping the other ranks\n", failure.c_str());
        term_at = Clock::now() + kGrace;
        kill_at = term_at + std::chrono::milliseconds(static_cast<int64_t>(kill_after_seconds * 1000));
      }
    }
  }
  if (!failure.empty()) throw Error("--nproc " + std::to_string(nproc) + ": " + failure, exit_code == 2 ? 2 : 1);
}

}  // namespace attnmt
