#include "train/distributed.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "config/loader.h"
#include "util/error.h"
#include "util/host_tuning.h"
#include "util/logging.h"

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

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

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
  if (const char* a = std::getenv("TORCHELASTIC_USE_AGENT_STORE"); a && *a) {
    const std::string v = a;
    e.agent_store = v == "True" || v == "true" || v == "1";
    if (!e.agent_store && v != "False" && v != "false" && v != "0") {
      throw InputError("--distributed: environment variable TORCHELASTIC_USE_AGENT_STORE='" + v + "' is not True or False");
    }
  }
  e.restart_count = env_int("TORCHELASTIC_RESTART_COUNT", 0, false);
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

namespace {

std::string address_text(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* bytes = address->sa_family == AF_INET6
                          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr)
                          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(address)->sin_addr);
  ::inet_ntop(address->sa_family, bytes, text, sizeof(text));
  return text;
}

}  // namespace

LocalRoute local_route_to(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw InputError("distributed: MASTER_ADDR=" + host + ": " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  sockaddr_storage local{};
  std::string error = "no address";
  bool routed = false;
  for (const addrinfo* a = found; a != nullptr && !routed; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM, 0);
    if (fd < 0) continue;
    socklen_t len = sizeof(local);
    // connect() on a UDP socket only picks the route (and so the source address); nothing is sent
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      routed = true;
    } else {
      error = std::strerror(errno);
    }
    ::close(fd);
  }
  if (!routed) throw InputError("distributed: no route from this host to MASTER_ADDR=" + host + ": " + error);
  LocalRoute route{address_text(reinterpret_cast<const sockaddr*>(&local)), ""};
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) == 0) {
    for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != local.ss_family) continue;
      if (address_text(i->ifa_addr) == route.address) {
        route.interface = i->ifa_name;
        break;
      }
    }
    ::freeifaddrs(interfaces);
  }
  return route;
}

std::vector<std::string> shared_settings(const Config& config) {
  auto settings = config_settings(config, "");
  settings.erase(std::remove_if(settings.begin(), settings.end(),
                                [](const std::string& s) { return s.rfind("threads=", 0) == 0; }),
                 settings.end());
  return settings;
}

#ifdef ATTNMT_WITH_C10D

bool distributed_available() { return true; }

struct Distributed::Impl {
  c10::intrusive_ptr<c10d::Store> store;  // the join's and Gloo's rendezvous connection
  c10::intrusive_ptr<c10d::Store> watch;  // a second connection, for the failure checks: the first
                                          // is Gloo's while its rendezvous runs on this thread
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;  // control values, bytes; gradients on CPU
#ifdef ATTNMT_WITH_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // gradients on CUDA
#endif
  bool abandoned = false;  // a collective left running after a peer's failure (see ~Distributed)
};

namespace {

// The store's keys. A failing rank sets failed/<rank> to its line, then adds 1 to failures, so a
// check is one round trip until something failed.
const std::string kFailedKey = "attnmt/failed/";
const std::string kFailuresKey = "attnmt/failures";
const std::string kSeenKey = "attnmt/failure_seen";  // how many ranks have read a failure
const std::string kRankKey = "attnmt/rank/";          // + rank: its version and settings, at the join

// Once told, a process does not tell again (the trainer tells while its group is still up; the
// command's handler would otherwise tell a second time over a new connection).
std::atomic<bool> peers_told{false};

std::string rank_of(int rank, int world_size) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size);
}

std::string text_of(const std::vector<uint8_t>& bytes) { return {bytes.begin(), bytes.end()}; }
std::vector<uint8_t> bytes_of(const std::string& text) { return {text.begin(), text.end()}; }

c10::intrusive_ptr<c10d::TCPStore> open_tcp_store(const std::string& address, int port, bool server, size_t workers,
                                                  double seconds) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = server;
  opts.numWorkers = workers;
  opts.waitWorkers = false;  // the joins wait, and look for failures while they do
  opts.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  return c10::make_intrusive<c10d::TCPStore>(address, opts);
}

// Where this round's ranks keep their keys: torch.distributed's prefix under torchrun's agent store.
std::string worker_prefix(int restart_count) { return "/worker/attempt_" + std::to_string(restart_count); }

// This rank's connection to the rendezvous: rank 0 hosts it unless a launcher does (then every
// rank is a client, under the round's prefix).
c10::intrusive_ptr<c10d::Store> connect_store(const DistributedEnv& env, bool server, double seconds) {
  if (env.agent_store) {
    auto tcp = open_tcp_store(env.master_addr, env.master_port, /*server=*/false, static_cast<size_t>(env.world_size), seconds);
    return c10::make_intrusive<c10d::PrefixStore>(worker_prefix(env.restart_count), tcp);
  }
  return open_tcp_store(env.master_addr, env.master_port, server, static_cast<size_t>(env.world_size), seconds);
}

// The lowest other rank that published a failure, and its line. Store errors propagate.
std::optional<std::pair<int, std::string>> published_failure(c10d::Store& store, const DistributedEnv& env) {
  if (store.add(kFailuresKey, 0) == 0) return std::nullopt;
  for (int r = 0; r < env.world_size; ++r) {
    if (r == env.rank || !store.check({kFailedKey + std::to_string(r)})) continue;
    store.add(kSeenKey, 1);  // rank 0, failing, waits for every rank to have read it
    return std::make_pair(r, text_of(store.get(kFailedKey + std::to_string(r))));
  }
  return std::nullopt;
}

std::string failure_message(const std::pair<int, std::string>& failure, const DistributedEnv& env, const char* when) {
  return "distributed: " + rank_of(failure.first, env.world_size) + " " + when + ": " + failure.second;
}

void throw_if_peer_failed(c10d::Store& store, const DistributedEnv& env, const char* when) {
  if (const auto failure = published_failure(store, env)) throw PeerError(failure_message(*failure, env, when), 1);
}

// Sets this rank's line; rank 0 then keeps its store up until the others have read it (the count
// of readers reaches world_size - 1) or `linger_seconds` pass.
void publish_failure(c10d::Store& store, const DistributedEnv& env, const std::string& line, double linger_seconds) {
  store.set(kFailedKey + std::to_string(env.rank), bytes_of(line));
  store.add(kFailuresKey, 1);
  peers_told = true;
  if (env.rank != 0 || env.agent_store) return;  // the store outlives this process
  spdlog::info("[dist] rank 0 failed: keeping the rendezvous up for the other ranks to read why (at most {:g} s)",
               linger_seconds);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(linger_seconds * 1000));
  while (store.add(kSeenKey, 0) < env.world_size - 1 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// What every rank shows the others at the join.
std::string join_identity(const std::vector<std::string>& settings) {
  std::string text = std::string("attnmt ") + ATTNMT_VERSION + "\n";
  for (const auto& s : settings) text += s + "\n";
  return text;
}

// FNV-1a: a stable hash to name a config by in a message.
std::string config_hash(const std::string& text) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// "rank 1 of 2 differs from rank 0: ..." naming the version, or the config's hash and first
// differing key.
std::string describe_difference(const std::string& first, const std::string& other, int rank, int world_size) {
  const auto a = lines_of(first), b = lines_of(other);
  const std::string head = "distributed: " + rank_of(rank, world_size) + " differs from rank 0: ";
  if (a.empty() || b.empty() || a[0] != b[0]) {
    return head + "it runs " + (b.empty() ? "?" : b[0]) + ", rank 0 runs " + (a.empty() ? "?" : a[0]);
  }
  const auto body = [](const std::string& t) { return t.substr(t.find('\n') + 1); };
  std::string message = head + "config " + config_hash(body(other)) + " vs rank 0's " + config_hash(body(first));
  for (size_t i = 1; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "", y = i < b.size() ? b[i] : "";
    if (x == y) continue;
    const std::string key = (x.empty() ? y : x).substr(0, (x.empty() ? y : x).find('='));
    const auto value = [](const std::string& s) { return s.empty() ? std::string("(none)") : s.substr(s.find('=') + 1); };
    message += "; first difference: " + key + " = " + value(y) + " there, " + value(x) + " on rank 0";
    break;
  }
  return message;
}

std::string waited_message(double seconds, const std::string& who, const DistributedEnv& env) {
  return fmt::format("distributed: waited {:g} s for {} of {} at {}:{} (distributed.join_timeout)", std::round(seconds),
                     who, env.world_size, env.master_addr, env.master_port);
}

// Whether a TCP connection to host:port opens within about a second.
bool port_open(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    bool open = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!open && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof(error);
      open = ::poll(&p, 1, /*timeout_ms=*/1000) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
    }
    ::close(fd);
    if (open) return true;
  }
  return false;
}

// This rank's connection to the store (rank 0: the store and its connection). The others wait
// for rank 0's port to open until join_timeout has passed since `start` (rank 0 may start later)
// with a probe of their own: c10d's client gives up early on a refused connection, logging a line
// each time. A PeerError when it fails: there is no store to tell the others in.
c10::intrusive_ptr<c10d::Store> reach_store(const DistributedEnv& env, bool server, double join_timeout,
                                            std::chrono::steady_clock::time_point start) {
  const auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  server = server && !env.agent_store;
  if (!server) {
    while (!port_open(env.master_addr, env.master_port)) {
      if (waited() >= join_timeout) throw PeerError(waited_message(waited(), "rank 0", env), 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  try {
    // the port is open: this connects at once; the timeout is also the store's for Gloo's rendezvous
    return connect_store(env, server, join_timeout);
  } catch (const std::exception& e) {
    throw PeerError(fmt::format("distributed: {} could not {} the rendezvous at {}:{}: {}", rank_of(env.rank, env.world_size),
                                server ? "start" : "join", env.master_addr, env.master_port, first_line(e.what())),
                    1);
  }
}

// Every rank's identity is in the store, and the same as rank 0's; a PeerError otherwise (every
// rank finds the same one). Looks for published failures while it waits.
void join_ranks(c10d::Store& store, const DistributedEnv& env, const std::vector<std::string>& settings, double join_timeout,
                std::chrono::steady_clock::time_point start) {
  store.set(kRankKey + std::to_string(env.rank), bytes_of(join_identity(settings)));
  for (;;) {
    throw_if_peer_failed(store, env, "failed to start");
    std::vector<int> missing;
    for (int r = 0; r < env.world_size; ++r) {
      if (!store.check({kRankKey + std::to_string(r)})) missing.push_back(r);
    }
    if (missing.empty()) break;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited >= join_timeout) {
      std::string who = missing.size() == 1 ? "rank " : "ranks ";
      for (size_t i = 0; i < missing.size(); ++i) who += (i ? ", " : "") + std::to_string(missing[i]);
      throw PeerError(waited_message(waited, who, env), 1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const std::string first = text_of(store.get(kRankKey + "0"));
  for (int r = 1; r < env.world_size; ++r) {
    const std::string other = text_of(store.get(kRankKey + std::to_string(r)));
    if (other != first) throw PeerError(describe_difference(first, other, r, env.world_size), 2);
  }
}

// Gloo's rendezvous (the peers' addresses through the store, then a connection to each) blocks
// this thread with no way to interrupt it, for up to distributed.timeout: while it runs, a thread
// watches the store on its own connection, and if a peer publishes a failure, it ends this
// process with the peer's line (nothing is written yet at this point of a run).
class FailureWatch {
 public:
  FailureWatch(c10d::Store& store, const DistributedEnv& env) : store_(store), env_(env), thread_([this] { loop(); }) {}
  ~FailureWatch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; })) {
      std::optional<std::pair<int, std::string>> failure;
      try {
        failure = published_failure(store_, env_);
      } catch (const std::exception&) {
        return;  // the store is gone (rank 0 stopped): Gloo's rendezvous fails by itself
      }
      if (failure) {
        std::fprintf(stderr, "attnmt: error: %s\n", failure_message(*failure, env_, "failed to start").c_str());
        finish_process(1);
      }
    }
  }
  c10d::Store& store_;
  const DistributedEnv& env_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// Gloo's device on the address that routes to MASTER_ADDR (or GLOO_SOCKET_IFNAME's interface),
// logged.
std::shared_ptr<::gloo::transport::Device> gloo_device(const DistributedEnv& env) {
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    spdlog::info("[dist] {} on interface {} (GLOO_SOCKET_IFNAME), rendezvous {}", rank_of(env.rank, env.world_size),
                 ifname, where);
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  const auto route = local_route_to(env.master_addr, env.master_port);
  spdlog::info("[dist] {} on {} ({}), rendezvous {}", rank_of(env.rank, env.world_size), route.address,
               route.interface.empty() ? "no interface lists it" : route.interface, where);
  return c10d::ProcessGroupGloo::createDeviceForHostname(route.address);
}

}  // namespace

Distributed::Distributed(const DistributedEnv& env, const DistributedConfig& config, const torch::Device& device,
                         const std::vector<std::string>& settings)
    : env_(env), config_(config), device_(device) {
  if (env_.world_size <= 1) return;
  // A peer that dies closes its sockets: the next write must fail with an error we report, not
  // kill this process silently with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config_.timeout * 1000));
  impl_ = std::make_unique<Impl>();
  const auto start = std::chrono::steady_clock::now();
  impl_->store = reach_store(env_, env_.rank == 0, config_.join_timeout, start);
  impl_->watch = reach_store(env_, /*server=*/false, config_.join_timeout, start);
  try {
    join_ranks(*impl_->store, env_, settings, config_.join_timeout, start);
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    options->devices.push_back(gloo_device(env_));
    auto gloo_store = c10::make_intrusive<c10d::PrefixStore>("attnmt/gloo", impl_->store);
    {
      FailureWatch watch(*impl_->watch, env_);
      impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(gloo_store, env_.rank, env_.world_size, options);
    }
#ifdef ATTNMT_WITH_NCCL
    const bool want_nccl = config_.backend == DistBackend::nccl || (config_.backend == DistBackend::automatic && device_.is_cuda());
    if (want_nccl) {
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = timeout;
      auto nccl_store = c10::make_intrusive<c10d::PrefixStore>("attnmt/nccl", impl_->store);
      FailureWatch watch(*impl_->watch, env_);
      impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(nccl_store, env_.rank, env_.world_size, nccl_options);
    }
#else
    if (config_.backend == DistBackend::nccl) {
      throw InputError("distributed.backend: nccl asked for, but this attnmt was built without NCCL (use gloo)");
    }
#endif
  } catch (const Error& e) {
    tell_peers_of_failure(e);
    throw;
  } catch (const std::exception& e) {
    RuntimeError error("distributed: " + rank_of(env_.rank, env_.world_size) +
                       " could not create the process group: " + first_line(e.what()));
    tell_peers_of_failure(error);
    throw error;
  }
}

void Distributed::tell_peers_of_failure(const std::exception& error) {
  if (!impl_ || !impl_->watch || peers_told || dynamic_cast<const PeerError*>(&error) != nullptr) return;
  try {
    publish_failure(*impl_->watch, env_, first_line(error.what()), /*linger_seconds=*/10);
  } catch (const std::exception&) {
    // the store is gone (rank 0 stopped): nobody is left to tell
  }
}

Distributed::~Distributed() {
  // A collective given up after a peer's failure may still be blocked on a peer that is alive
  // (rank 0 waiting for the others to read its failure): the group's destructor would join its
  // threads, so wait for it, up to distributed.timeout. The process is about to exit: the group
  // is left to that.
  if (impl_ && impl_->abandoned) {
    (void)impl_->gloo.release();
#ifdef ATTNMT_WITH_NCCL
    (void)impl_->nccl.release();
#endif
  }
}

std::string Distributed::backend() const {
  if (!impl_) return "none";
#ifdef ATTNMT_WITH_NCCL
  if (impl_->nccl) return "nccl";
#endif
  return "gloo";
}

namespace {

// Runs a collective; any failure (a peer gone, a timeout) becomes one error naming this rank (c10::Error's what() starts with its message; the backtrace follows on later lines), or
// the PeerError of the rank that published why it failed.
template <typename F>
void collective(const DistributedEnv& env, c10d::Store& watch, const char* what, F&& f) {
  try {
    f();
  } catch (const PeerError&) {
    throw;
  } catch (const std::exception& e) {
    std::optional<std::pair<int, std::string>> failure;
    try {
      failure = published_failure(watch, env);
    } catch (const std::exception&) {
      // the store is gone with rank 0: the collective's own error is all there is
    }
    if (failure) throw PeerError(failure_message(*failure, env, "failed"), 1);
    // the other ranks' collectives fail by themselves (closed connections, the same timeout):
    // nothing to publish
    throw PeerError("distributed: " + rank_of(env.rank, env.world_size) + ": " + what +
                    " failed (another rank stopped, crashed or timed out): " + first_line(e.what()), 1);
  }
}

// Waits for a collective, and once a second looks in the store for a failure a peer published:
// a peer that failed while this rank waits here (rank 0 failing in its validation, say) keeps its
// connections open until the others have read why, so the collective alone would wait for
// distributed.timeout. Work::wait(timeout) throws when the time is up and the work still runs
// (and rethrows the work's own error once it has failed).
void await(Distributed::Impl& impl, const DistributedEnv& env, c10d::Work& work) {
  for (;;) {
    try {
      work.wait(std::chrono::milliseconds(1000));
      return;
    } catch (const std::exception&) {
      if (work.isCompleted()) throw;
    }
    std::optional<std::pair<int, std::string>> failure;
    try {
      failure = published_failure(*impl.watch, env);
    } catch (const std::exception&) {
      // the store is gone with rank 0: its connections are too, and the collective fails
    }
    if (failure) {
      impl.abandoned = true;
      throw PeerError(failure_message(*failure, env, "failed"), 1);
    }
  }
}

void reduce_doubles(Distributed::Impl& impl, const DistributedEnv& env, std::vector<double>& values, c10d::ReduceOp op) {
  auto t = torch::tensor(values, torch::kDouble);
  std::vector<at::Tensor> tensors{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  await(impl, env, *impl.gloo->allreduce(tensors, opts));
  auto acc = t.accessor<double, 1>();
  for (size_t i = 0; i < values.size(); ++i) values[i] = acc[static_cast<int64_t>(i)];
}

}  // namespace

void Distributed::allreduce_sum(std::vector<double>& values) {
  if (!active()) return;
  collective(env_, *impl_->watch, "all-reduce", [&] { reduce_doubles(*impl_, env_, values, c10d::ReduceOp::SUM); });
}

void Distributed::allreduce_max(std::vector<double>& values) {
  if (!active()) return;
  collective(env_, *impl_->watch, "all-reduce", [&] { reduce_doubles(*impl_, env_, values, c10d::ReduceOp::MAX); });
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
  const bool fp16 = config_.compress == GradCompress::fp16;
  double scale = 1;
  if (fp16) {
    double largest = 0;
    for (const auto& g : grads) {
      const auto [lowest, highest] = torch::aminmax(g);  // one pass, no |g| copy
      largest = std::max({largest, -lowest.item<double>(), highest.item<double>()});
    }
    std::vector<double> all{largest};
    collective(env_, *impl_->watch, "all-reduce", [&] { reduce_doubles(*impl_, env_, all, c10d::ReduceOp::MAX); });
    // Non-finite or all zero: scale 1, and the step sees the same inf/NaN as without compression.
    if (std::isfinite(all[0]) && all[0] > 0) {
      scale = std::ldexp(1.0, static_cast<int>(std::floor(std::log2(16384.0 / (env_.world_size * all[0])))));
    }
  }
  collective(env_, *impl_->watch, "gradient all-reduce", [&] {
    std::vector<size_t> members;
    int64_t bytes = 0;
    auto flush = [&] {
      if (members.empty()) return;
      std::vector<torch::Tensor> views;
      for (size_t i : members) views.push_back(grads[i].reshape({-1}));
      Bucket b;
      b.members = std::move(members);
      b.flat = torch::cat(views);
      if (fp16) b.flat = b.flat.mul_(scale).to(torch::kHalf);  // the cat's own buffer
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
      await(*impl_, env_, *b.work);
      if (b.flat.scalar_type() == torch::kHalf) b.flat = b.flat.to(torch::kFloat).div_(scale);
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
  collective(env_, *impl_->watch, "broadcast", [&] {
    auto size = torch::tensor({static_cast<int64_t>(is_main() ? bytes_on_rank0.size() : 0)}, torch::kLong);
    std::vector<at::Tensor> s{size};
    await(*impl_, env_, *impl_->gloo->broadcast(s));
    const int64_t n = size.item<int64_t>();
    auto data = torch::empty({n}, torch::kUInt8);
    if (is_main() && n > 0) std::memcpy(data.data_ptr<uint8_t>(), bytes_on_rank0.data(), static_cast<size_t>(n));
    std::vector<at::Tensor> d{data};
    if (n > 0) await(*impl_, env_, *impl_->gloo->broadcast(d));
    out.assign(reinterpret_cast<const char*>(data.data_ptr<uint8_t>()), static_cast<size_t>(n));
  });
  return out;
}

void Distributed::broadcast_tensors(const std::vector<torch::Tensor>& tensors) {
  if (!active()) return;
  torch::NoGradGuard no_grad;
  collective(env_, *impl_->watch, "broadcast", [&] {
    for (const auto& t : tensors) {
      auto host = t.is_cpu() ? t.contiguous() : t.cpu().contiguous();
      std::vector<at::Tensor> v{host};
      await(*impl_, env_, *impl_->gloo->broadcast(v));
      if (!host.is_same(t)) t.copy_(host);
    }
  });
}

void Distributed::barrier() {
  if (!active()) return;
  collective(env_, *impl_->watch, "barrier", [&] { await(*impl_, env_, *impl_->gloo->barrier()); });
}

void tell_peers_of_failure(const std::exception& error, double join_timeout) {
  if (peers_told || dynamic_cast<const PeerError*>(&error) != nullptr) return;
  DistributedEnv env;
  try {
    env = distributed_env_from_environment();
  } catch (const std::exception&) {
    return;  // not a rank: nobody to tell
  }
  if (env.world_size <= 1) return;
  const std::string line = first_line(error.what());
  spdlog::info("[dist] {} failed to start: telling the other ranks through {}:{} (at most {:g} s)",
               rank_of(env.rank, env.world_size), env.master_addr, env.master_port, join_timeout);
  try {
    auto store = connect_store(env, env.rank == 0, join_timeout);
    publish_failure(*store, env, line, join_timeout);
  } catch (const std::exception& e) {
    spdlog::warn("[dist] could not tell the other ranks: {}", first_line(e.what()));
  }
}

// ---------------------------------------------------------------------------------------------
// The launchers' rendezvous

struct RendezvousStore::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

RendezvousStore::RendezvousStore(const std::string& address, int port, bool host, double timeout)
    : impl_(std::make_unique<Impl>()) {
  ::signal(SIGPIPE, SIG_IGN);  // a closed connection is an error to report, not the end of the launcher
  const auto start = std::chrono::steady_clock::now();
  const std::string where = address + ":" + std::to_string(port);
  if (!host) {
    while (!port_open(address, port)) {
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited >= timeout) {
        throw PeerError(fmt::format("distributed: waited {:g} s for node 0's launcher at {} (distributed.join_timeout)",
                                    std::round(waited), where),
                        1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  try {
    impl_->store = open_tcp_store(address, port, host, /*workers=*/1, timeout);
  } catch (const std::exception& e) {
    throw RuntimeError(fmt::format("distributed: could not {} the rendezvous at {}: {}", host ? "start" : "join", where,
                                   first_line(e.what())));
  }
}

RendezvousStore::~RendezvousStore() = default;

void RendezvousStore::set(const std::string& key, const std::string& value) { impl_->store->set(key, bytes_of(value)); }
std::string RendezvousStore::get(const std::string& key) { return text_of(impl_->store->get(key)); }
int64_t RendezvousStore::add(const std::string& key, int64_t delta) { return impl_->store->add(key, delta); }
bool RendezvousStore::check(const std::string& key) { return impl_->store->check({key}); }

std::string RendezvousStore::rank_failure(int restart_count, int rank) {
  c10d::PrefixStore round(worker_prefix(restart_count), impl_->store);
  const std::string key = kFailedKey + std::to_string(rank);
  return round.check({key}) ? text_of(round.get(key)) : "";
}

#else  // no c10d

bool distributed_available() { return false; }

struct Distributed::Impl {};

Distributed::Distributed(const DistributedEnv& env, const DistributedConfig& config, const torch::Device& device,
                         const std::vector<std::string>&)
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
void Distributed::tell_peers_of_failure(const std::exception&) {}
void tell_peers_of_failure(const std::exception&, double) {}

struct RendezvousStore::Impl {};
RendezvousStore::RendezvousStore(const std::string&, int, bool, double) {
  throw InputError("distributed training: this attnmt was built without c10d/Gloo support (install libgloo-dev and rebuild)");
}
RendezvousStore::~RendezvousStore() = default;
void RendezvousStore::set(const std::string&, const std::string&) {}
std::string RendezvousStore::get(const std::string&) { return ""; }
int64_t RendezvousStore::add(const std::string&, int64_t) { return 0; }
bool RendezvousStore::check(const std::string&) { return false; }
std::string RendezvousStore::rank_failure(int, int) { return ""; }

#endif

}  // namespace attnmt
