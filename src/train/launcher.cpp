#include "train/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

#include "io/model_file.h"
#include "train/distributed.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/process.h"
#include "util/signals.h"

namespace attnmt {

namespace {

using Steady = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(20);        // the ranks' exits and the stop signals
constexpr auto kStorePoll = std::chrono::milliseconds(100);  // the round's failure, in the store
constexpr auto kGrace = std::chrono::seconds(2);             // after a failure: the ranks fail by themselves,
constexpr auto kTermToKill = std::chrono::seconds(3);        // then SIGTERM, then SIGKILL
constexpr auto kSecondaryWait = std::chrono::seconds(2);     // see Launcher::supervise

// Set once this process's launcher has started: from then on it tells the other launchers of
// failures itself, where it can (tell_launchers_of_failure does nothing).
std::atomic<bool> launcher_started{false};

std::string launch_key(int round, const std::string& name) {
  return "attnmt/launch/" + std::to_string(round) + "/" + name;
}

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

// MASTER_ADDR / MASTER_PORT of a run on several nodes; InputError naming what is wrong.
std::pair<std::string, int> master_endpoint(int nnodes) {
  const std::string head = "--nnodes " + std::to_string(nnodes) + ": environment variable ";
  const char* address = std::getenv("MASTER_ADDR");
  if (address == nullptr || *address == '\0') {
    throw InputError(head + "MASTER_ADDR is not set (node 0's address, where the launchers meet)");
  }
  const char* port = std::getenv("MASTER_PORT");
  if (port == nullptr || *port == '\0')
    throw InputError(head + "MASTER_PORT is not set (the port on node 0 where the launchers meet)");
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(port, &end, 10);
  if (errno != 0 || *end != '\0' || n < 1 || n > 65535) {
    throw InputError(head + "MASTER_PORT='" + port + "' is not a port (1..65535)");
  }
  return {address, static_cast<int>(n)};
}

std::string rank_name(int rank, int world_size) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size);
}

// A rank's exit status as the log and the errors say it.
std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return "died (signal " + std::to_string(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "stopped (status " + std::to_string(status) + ")";
}

// A round's failure as the launchers publish it: the rank and what happened to it, and the exit
// code the launchers end with when it is not restarted (2: bad input, never restarted).
struct Failure {
  int exit_code = 1;
  std::string what;  // "rank 1 of 2 died (signal 9)"
};

std::string failure_text(const Failure& f) { return std::to_string(f.exit_code) + "\n" + f.what; }

Failure parse_failure(const std::string& text) {
  const auto newline = text.find('\n');
  if (newline == std::string::npos) return {1, text};
  return {text.compare(0, newline, "2") == 0 ? 2 : 1, text.substr(newline + 1)};
}

// The step of the newest checkpoint in save_dir that opens (the one rank 0 resumes from: a damaged
// newest one falls back to the one before, as in the trainer); -1 when there is none.
int64_t newest_checkpoint_step(const std::string& save_dir) {
  for (const auto& path : list_step_checkpoints(save_dir)) {
    try {
      return CheckpointFile(path).header().progress.step;
    } catch (const std::exception&) {
      continue;
    }
  }
  return -1;
}

class Launcher {
 public:
  explicit Launcher(const LaunchOptions& options)
      : o_(options),
        world_size_(options.nnodes * options.nproc_per_node),
        pids_(static_cast<size_t>(options.nproc_per_node), -1) {
    launcher_started = true;  // whatever fails from here on, this launcher tells the others itself, if it can
    if (o_.nnodes == 1) {
      address_ = "127.0.0.1";
      port_ = free_local_port();
    } else {
      std::tie(address_, port_) = master_endpoint(o_.nnodes);
    }
    where_ = address_ + ":" + std::to_string(port_);
    // before the stop signals are taken: Ctrl-C while waiting here for node 0 ends the launcher
    store_ = std::make_unique<RendezvousStore>(address_, port_, /*host=*/o_.node_rank == 0, o_.join_timeout);
    signals_ = std::make_unique<StopSignals>();
  }

  void run() {
    bool resume = false;  // the command line's own --resume is in worker_args already
    for (int round = 0;; ++round) {
      join(round);
      start_ranks(round, resume);
      const auto failure = supervise(round);
      if (!failure) return;
      give_up_unless_restartable(*failure, round);
      const int64_t step = resume_step(round + 1);
      resume = step >= 0;
      spdlog::info("[dist] {}; restart {} of {} {}", failure->what, round + 1, o_.max_restarts,
                   resume ? "from step " + std::to_string(step) : std::string("from the start (no checkpoint yet)"));
    }
  }

 private:
  std::string key(int round, const std::string& name) const { return launch_key(round, name); }

  // Every node's launcher is in the store for `round`, each started alike.
  void join(int round) {
    const std::string identity = fmt::format("attnmt {} with --nnodes {} --nproc {} --max-restarts {}", ATTNMT_VERSION,
                                             o_.nnodes, o_.nproc_per_node, o_.max_restarts);
    const std::string mine = "node/" + std::to_string(o_.node_rank);
    if (store_->add(key(round, mine + "/launchers"), 1) > 1) {
      throw InputError(fmt::format("distributed: two launchers at {} say --node-rank {}", where_, o_.node_rank));
    }
    store_->set(key(round, mine), identity);
    const auto start = Steady::now();
    for (;;) {
      if (const int sig = signals_->take()) {
        throw Error(fmt::format("distributed: SIG{} received while waiting for the other nodes", sigabbrev_np(sig)), 1);
      }
      if (const auto failure = published_failure(round)) {  // a launcher that failed to start
        leave(round, Error("distributed: " + failure->what, failure->exit_code));
      }
      std::string missing;
      int count = 0;
      for (int n = 0; n < o_.nnodes; ++n) {
        if (store_->check(key(round, "node/" + std::to_string(n)))) continue;
        missing += (count++ ? ", " : "") + std::to_string(n);
      }
      if (count == 0) break;
      const double waited = std::chrono::duration<double>(Steady::now() - start).count();
      if (waited >= o_.join_timeout) {
        throw Error(fmt::format("distributed: waited {:g} s for node{} {} of {} at {} (distributed.join_timeout)",
                                std::round(waited), count > 1 ? "s" : "", missing, o_.nnodes, where_),
                    1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const std::string first = store_->get(key(round, "node/0"));
    for (int n = 1; n < o_.nnodes; ++n) {
      const std::string other = store_->get(key(round, "node/" + std::to_string(n)));
      if (other != first) {
        leave(round,
              InputError(fmt::format("distributed: node {} of {} differs from node 0: it runs {}, node 0 runs {}", n,
                                     o_.nnodes, other, first)));
      }
    }
  }

  // Ends this launcher with `error`, which every launcher of the round has found out or been
  // told: each says it has read it, and node 0's, whose exit takes the store away, waits for the
  // others to have (at most 10 s).
  [[noreturn]] void leave(int round, const Error& error) {
    try {
      const int64_t seen = store_->add(key(round, "seen"), 1);
      const auto until = Steady::now() + std::chrono::seconds(10);
      for (int64_t n = seen; o_.node_rank == 0 && n < o_.nnodes && Steady::now() < until;
           n = store_->add(key(round, "seen"), 0)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    } catch (const std::exception&) {
      // the store is gone: nobody is left to wait for
    }
    throw error;
  }

  void start_ranks(int round, bool resume) {
    std::vector<std::string> argv = {self_executable()};
    argv.insert(argv.end(), o_.worker_args.begin(), o_.worker_args.end());
    if (resume && std::find(argv.begin(), argv.end(), "--resume") == argv.end()) argv.push_back("--resume");
    for (int local = 0; local < o_.nproc_per_node; ++local) {
      const int rank = o_.node_rank * o_.nproc_per_node + local;
      try {
        pids_[static_cast<size_t>(local)] =
            spawn_child(argv, {{"RANK", std::to_string(rank)},
                               {"LOCAL_RANK", std::to_string(local)},
                               {"WORLD_SIZE", std::to_string(world_size_)},
                               {"LOCAL_WORLD_SIZE", std::to_string(o_.nproc_per_node)},
                               {"GROUP_RANK", std::to_string(o_.node_rank)},
                               {"MASTER_ADDR", address_},
                               {"MASTER_PORT", std::to_string(port_)},
                               {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                               {"TORCHELASTIC_RESTART_COUNT", std::to_string(round)},
                               {"TORCHELASTIC_MAX_RESTARTS", std::to_string(o_.max_restarts)}});
      } catch (const Error& e) {
        // the other nodes' ranks would wait for these at their join: the round fails for all
        const Failure failure{1, "node " + std::to_string(o_.node_rank) + " could not start " +
                                     rank_name(rank, world_size_) + ": " + e.what()};
        publish(round, failure);
        signal_ranks(SIGKILL);
        while (running() > 0) reap(round, nullptr);
        throw RuntimeError("distributed: " + failure.what);
      }
      spdlog::info("[train] {}: pid {}", rank_name(rank, world_size_), pids_[static_cast<size_t>(local)]);
    }
  }

  int running() const {
    return static_cast<int>(std::count_if(pids_.begin(), pids_.end(), [](pid_t p) { return p > 0; }));
  }

  void signal_ranks(int sig) {
    for (pid_t p : pids_) {
      if (p > 0) ::kill(p, sig);
    }
  }

  void publish(int round, const Failure& failure) {
    if (published_) return;
    published_ = true;
    try {
      if (store_->add(key(round, "failures"), 1) == 1) store_->set(key(round, "failure"), failure_text(failure));
    } catch (const std::exception&) {
      // the store is gone: the other launchers find that out by themselves
    }
  }

  // The round's failure, once a launcher has published it.
  std::optional<Failure> published_failure(int round) {
    if (store_->add(key(round, "failures"), 0) == 0) return std::nullopt;
    return parse_failure(store_->get(key(round, "failure")));  // set right after the count: get waits for it
  }

  // Waits for this node's ranks that have exited (none blocks). A rank killed by a signal, or one
  // that published an error of its own, is the round's failure and is published at once; a rank
  // that failed without a word of its own most likely stopped because another did (its collective
  // broke), so it becomes `secondary`, published only if nothing else is.
  void reap(int round, std::optional<Failure>* secondary) {
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid < 0 && errno == EINTR) continue;
      if (pid <= 0) return;
      const auto it = std::find(pids_.begin(), pids_.end(), pid);
      if (it == pids_.end()) continue;
      *it = -1;
      const int rank = o_.node_rank * o_.nproc_per_node + static_cast<int>(it - pids_.begin());
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok || secondary == nullptr)
        spdlog::info("[dist] {} {}", rank_name(rank, world_size_), describe_exit(status));
      if (ok || secondary == nullptr) continue;  // secondary == nullptr: the round has failed, this rank is stopping
      failed_locally_ = true;
      const int code = WIFEXITED(status) && WEXITSTATUS(status) == 2 ? 2 : 1;
      std::string line;
      try {
        line = store_->rank_failure(round, rank);
      } catch (const std::exception&) {
        // the store is gone: supervise finds out
      }
      if (WIFSIGNALED(status)) {
        publish(round, {1, rank_name(rank, world_size_) + " " + describe_exit(status)});
      } else if (!line.empty()) {
        publish(round, {code, rank_name(rank, world_size_) + " failed: " + line});
      } else if (!*secondary) {
        *secondary = Failure{code, rank_name(rank, world_size_) + " " + describe_exit(status) +
                                       " without an error of its own (no launcher named another rank)"};
        secondary_at_ = Steady::now();
      }
    }
  }

  // Watches the round until every rank of every node has exited 0 (nullopt), or it fails: then
  // this node's ranks are stopped and the failure returned.
  std::optional<Failure> supervise(int round) {
    published_ = failed_locally_ = false;
    std::optional<Failure> failure, secondary;
    auto next_look = Steady::now();
    auto term_at = Steady::time_point::max(), kill_at = Steady::time_point::max(),
         finish_by = Steady::time_point::max();
    bool told_finished = false;
    for (;;) {
      if (const int sig = signals_->take()) {
        stop_signal_ = sig;
        signal_ranks(sig);  // the ranks agree to stop at the same step; rank 0 saves
      }
      reap(round, failure ? nullptr : &secondary);
      const auto now = Steady::now();
      try {
        if (!failure && secondary && now - secondary_at_ >= kSecondaryWait) {
          publish(round, *secondary);
          next_look = now;
        }
        if (!failure && now >= next_look) {
          failure = published_failure(round);
          next_look = now + kStorePoll;
          if (failure) {
            spdlog::info("[dist] {}: stopping this node's ranks", failure->what);
            term_at = now + kGrace;
            kill_at = term_at + kTermToKill;
          }
        }
        if (!failure && running() == 0 && !failed_locally_) {
          if (!told_finished) {
            store_->add(key(round, "finished"), 1);
            told_finished = true;
            finish_by = now + std::chrono::milliseconds(static_cast<int64_t>(o_.join_timeout * 1000));
          }
          // node 0's launcher is the store: it leaves once every node's ranks are done
          if (store_->add(key(round, "finished"), 0) >= o_.nnodes) return std::nullopt;
          if (now >= finish_by) {
            spdlog::warn("[dist] this node's ranks are done; not every other node said so within {:g} s",
                         o_.join_timeout);
            return std::nullopt;
          }
        }
      } catch (const std::exception& e) {
        if (!failure && running() == 0 && !failed_locally_ && told_finished) return std::nullopt;  // node 0 left, done
        if (!failure) {
          failure = Failure{1, "the rendezvous at " + where_ + " is gone (node 0's launcher stopped): " +
                                   std::string(e.what()).substr(0, std::string(e.what()).find('\n'))};
          store_lost_ = true;
          term_at = now + kGrace;
          kill_at = term_at + kTermToKill;
        }
      }
      if (failure) {
        if (running() == 0) return failure;
        if (now >= term_at) {
          signal_ranks(SIGTERM);
          term_at = Steady::time_point::max();
        } else if (now >= kill_at) {
          signal_ranks(SIGKILL);
          kill_at = Steady::time_point::max();
        }
      }
      std::this_thread::sleep_for(kPoll);
    }
  }

  // Ends the run with the failure when it is not to be restarted.
  void give_up_unless_restartable(const Failure& failure, int round) {
    std::string why;
    if (failure.exit_code == 2) {
      why = "not restarted: a restart cannot mend bad input";
    } else if (stop_signal_ != 0) {
      why = std::string("not restarted: stopping on SIG") + sigabbrev_np(stop_signal_);
    } else if (store_lost_) {
      why = "not restarted";
    } else if (o_.max_restarts == 0) {
      why = "not restarted (--max-restarts 0)";
    } else if (round >= o_.max_restarts) {
      why =
          "no restarts left (" + std::to_string(o_.max_restarts) + " of " + std::to_string(o_.max_restarts) + " used)";
    } else {
      return;
    }
    leave(round, Error("distributed: " + failure.what + "; " + why, failure.exit_code));
  }

  // The step `round`'s ranks resume from (-1: none, they start over): node 0's launcher reads it in
  // train.save_dir and tells the others.
  int64_t resume_step(int round) {
    try {
      if (o_.node_rank == 0) {
        const int64_t step = newest_checkpoint_step(o_.save_dir);
        store_->set(key(round, "from_step"), std::to_string(step));
        return step;
      }
      return std::stoll(store_->get(key(round, "from_step")));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      const std::string what = e.what();
      throw RuntimeError("distributed: cannot restart: the rendezvous at " + where_ + ": " +
                         what.substr(0, what.find('\n')));
    }
  }

  LaunchOptions o_;
  int world_size_;
  std::string address_;
  int port_ = 0;
  std::string where_;  // address:port
  std::unique_ptr<RendezvousStore> store_;
  std::unique_ptr<StopSignals> signals_;
  std::vector<pid_t> pids_;      // this node's ranks, by local rank; -1 once exited
  bool published_ = false;       // this launcher has published the round's failure (or tried)
  bool failed_locally_ = false;  // one of this node's ranks exited non-zero this round
  Steady::time_point secondary_at_;
  int stop_signal_ = 0;  // SIGINT / SIGTERM received: no more restarts
  bool store_lost_ = false;
};

}  // namespace

void validate(const LaunchOptions& o) {
  if (o.nproc_per_node < 1) throw InputError("--nproc must be at least 1");
  if (o.nnodes < 1) throw InputError("--nnodes must be at least 1");
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) {
    throw InputError("--node-rank " + std::to_string(o.node_rank) + " is not in 0.." + std::to_string(o.nnodes - 1) +
                     " (--nnodes " + std::to_string(o.nnodes) + ")");
  }
  if (o.max_restarts < 0) throw InputError("--max-restarts must be 0 or more");
  if (o.nnodes > 1) master_endpoint(o.nnodes);
}

void tell_launchers_of_failure(const LaunchOptions& options, const std::exception& error) {
  if (launcher_started || options.nnodes <= 1) return;
  try {
    validate(options);
  } catch (const std::exception&) {
    return;  // no valid node to speak for
  }
  const auto* known = dynamic_cast<const Error*>(&error);
  const int code = known != nullptr && known->exit_code() == 2 ? 2 : 1;
  std::string line = error.what();
  line = line.substr(0, line.find('\n'));
  const auto [address, port] = master_endpoint(options.nnodes);
  spdlog::info("[dist] node {} of {} failed to start: telling the other launchers through {}:{} (at most {:g} s)",
               options.node_rank, options.nnodes, address, port, options.join_timeout);
  try {
    const bool host = options.node_rank == 0;
    RendezvousStore store(address, port, host, options.join_timeout);
    const Failure failure{code, "node " + std::to_string(options.node_rank) + " of " + std::to_string(options.nnodes) +
                                    " failed to start: " + line};
    if (store.add(launch_key(0, "failures"), 1) == 1) store.set(launch_key(0, "failure"), failure_text(failure));
    store.add(launch_key(0, "seen"), 1);  // as Launcher::leave counts: every launcher, this one too
    if (!host) return;
    // node 0's launcher is the store: it stays until the others have read why
    const auto until = Steady::now() + std::chrono::milliseconds(static_cast<int64_t>(options.join_timeout * 1000));
    while (store.add(launch_key(0, "seen"), 0) < options.nnodes && Steady::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  } catch (const std::exception& e) {
    spdlog::warn("[dist] could not tell the other launchers: {}",
                 std::string(e.what()).substr(0, std::string(e.what()).find('\n')));
  }
}

void launch_workers(const LaunchOptions& options) {
  validate(options);
  Launcher(options).run();
}

}  // namespace attnmt
