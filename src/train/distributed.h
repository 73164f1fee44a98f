// Data-parallel training on LibTorch's own distributed engine: c10d process groups (Gloo on CPU,
// NCCL on CUDA builds that have it), rendezvous through a c10d::TCPStore on MASTER_ADDR:MASTER_PORT.
//
// How attnmt uses it (train/trainer.cpp):
//   - every rank builds the same epoch batches (make_batches is a pure function of the seed) with
//     N times the per-process batch size, and takes its contiguous 1/N slice of each one
//     (shard_batch): no overlap, nothing skipped, and the global batch is exactly what one
//     process with an N times larger batch would see;
//   - each rank back-propagates its share of the *global* token-averaged loss, and the gradients
//     are summed over ranks (allreduce_gradients, in buckets), so the update equals the
//     single-process one;
//   - decisions that must be taken together (skip a non-finite step, stop) go through a small
//     all-reduce of a few numbers each step (allreduce_sum / allreduce_max);
//   - rank 0 alone logs, validates and writes checkpoints; the others wait in the next
//     collective, which fails after distributed.timeout seconds, or as soon as a peer's
//     connection drops (a killed rank), with an error naming this rank.
// With world size 1 nothing is communicated and no c10d object exists.
//
// Starting on several hosts (what PyTorch leaves to the user, and where runs used to hang):
//   - Gloo's sockets are bound to the local address that routes to MASTER_ADDR, not to what the
//     host name resolves to (127.0.1.1 on a stock Debian host, which the peers cannot reach);
//     GLOO_SOCKET_IFNAME still picks the interface when set;
//   - the join is attnmt's own, on the store, before Gloo's: every rank publishes its version and
//     resolved config, waits at most distributed.join_timeout for the others, and refuses a rank
//     that differs;
//   - a rank that fails (before the join, at it, or later) publishes its one-line error in the
//     store (tell_peers_of_failure); the others look there while they wait at the join, in Gloo's
//     rendezvous and in every collective, and stop within a second or two with that line.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/error.h"

namespace attnmt {

// An error that is not told to the other ranks through the store: they find it out by themselves
// (a peer's published failure, a rank that differs or never came, a failed collective), or the
// store cannot be reached.
class PeerError : public Error {
 public:
  PeerError(const std::string& message, int exit_code) : Error(message, exit_code) {}
};

// torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// and, when a launcher started the rank (attnmt's train/launcher.h, or torchrun's elastic agent),
// TORCHELASTIC_USE_AGENT_STORE and TORCHELASTIC_RESTART_COUNT.
struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;  // processes on this machine (threads per process = cores / this)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // The store on MASTER_ADDR:MASTER_PORT is the launchers' (node 0's launcher hosts it), not rank
  // 0's: every rank connects as a client, under the prefix "/worker/attempt_<restart_count>", as
  // torch.distributed does under torchrun; each restart is a new round on the same store.
  bool agent_store = false;
  int restart_count = 0;
};

// Reads the variables; InputError naming the variable when one is missing or malformed.
DistributedEnv distributed_env_from_environment();

// Whether this attnmt was built with c10d support (Gloo headers were found at build time).
bool distributed_available();

// The local end of the route to host:port (a UDP socket connected there: no packet is sent) and
// the interface that has it: {"10.231.7.2", "veth-b"}. InputError when there is no route.
struct LocalRoute {
  std::string address;
  std::string interface;  // "" when no interface lists the address
};
LocalRoute local_route_to(const std::string& host, int port);

// What the ranks compare at the join: the resolved config as "key=value" lines, without the keys
// that may differ per host (threads: cores differ).
std::vector<std::string> shared_settings(const Config& config);

// A rank of a --distributed run that failed before it joined (bad config, missing data): its
// error's first line goes to the rendezvous store, for the other ranks to stop with. Rank 0 hosts
// the store, so it keeps it up until every other rank has read the line, at most join_timeout
// seconds. Nothing for a PeerError, when the environment is not a rank's, or when this process
// has told the others already; never throws.
void tell_peers_of_failure(const std::exception& error, double join_timeout);

class Distributed {
 public:
  // world_size 1: a no-op group. Otherwise joins the group: waits for every rank at most
  // config.join_timeout seconds (a PeerError naming the ranks that did not come, or the first
  // that differs from rank 0 in version or `settings` (shared_settings), or that failed), then
  // creates the process group. `device` is where the gradients live.
  Distributed(const DistributedEnv& env, const DistributedConfig& config, const torch::Device& device,
              const std::vector<std::string>& settings = {});
  ~Distributed();
  Distributed(const Distributed&) = delete;
  Distributed& operator=(const Distributed&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  bool is_main() const { return env_.rank == 0; }
  bool active() const { return env_.world_size > 1; }
  std::string backend() const;  // "none", "gloo", "nccl"

  // Element-wise sum / max over ranks, in place (small control vectors: a few numbers per step).
  void allreduce_sum(std::vector<double>& values);
  void allreduce_max(std::vector<double>& values);
  // Sums the gradients of `parameters` over ranks, in buckets of distributed.bucket_mb; an
  // undefined gradient takes part as zeros (a rank may have had no data in a step).
  // distributed.compress fp16 halves the bytes that travel (the all-reduce's time where the link
  // is the limit): every rank multiplies its gradients by the same power of two s, chosen from the
  // largest |gradient| over all ranks (an all-reduce of one number) so that the sum of the ranks'
  // largest stays below 2^14 (fp16's maximum is 65504), reduces them as fp16 and divides by s.
  // Scaling by a power of two is exact; what is lost is fp16's 11-bit mantissa and anything below
  // 2^-24 of the scaled range (~1e-12 of the largest gradient). Gloo 1.13 has no bf16 all-reduce
  // ("Invalid scalar type"), and fp16's narrower range is what the scale is for.
  void allreduce_gradients(const std::vector<torch::Tensor>& parameters);
  // Rank 0's bytes on every rank (checkpoints and tokenizer models travel this way, so the
  // other ranks need no shared file system).
  std::string broadcast_bytes(const std::string& bytes_on_rank0);
  // Overwrites every rank's tensors with rank 0's.
  void broadcast_tensors(const std::vector<torch::Tensor>& tensors);
  void barrier();
  // After an error on this rank: its first line to the store for the others (rank 0 waits up to
  // 10 s for them to read it: its exit would take the store away). Nothing for a PeerError.
  void tell_peers_of_failure(const std::exception& error);
  // Wall seconds spent in allreduce_gradients so far: the transfer plus the wait for the slowest rank.
  double gradient_seconds() const { return gradient_seconds_; }

  struct Impl;  // the c10d objects (distributed.cpp)

 private:
  DistributedEnv env_;
  DistributedConfig config_;
  torch::Device device_;
  std::unique_ptr<Impl> impl_;
  double gradient_seconds_ = 0;
};

// The launchers' rendezvous (train/launcher.h): a c10d TCPStore on MASTER_ADDR:MASTER_PORT that
// node 0's launcher hosts, and the other launchers and every rank connect to. Keys are the
// launchers' own, apart from rank_failure, which reads what a rank of a round published there.
// Every call may throw (the store is gone: node 0's launcher stopped).
class RendezvousStore {
 public:
  // host: node 0's launcher, listening on `port`. Otherwise waits for the port to open at most
  // `timeout` seconds (PeerError "waited N s for node 0 at ADDR:PORT"). `timeout` is also each
  // call's limit.
  RendezvousStore(const std::string& address, int port, bool host, double timeout);
  ~RendezvousStore();
  RendezvousStore(const RendezvousStore&) = delete;
  RendezvousStore& operator=(const RendezvousStore&) = delete;

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);  // waits for the key at most `timeout`
  int64_t add(const std::string& key, int64_t delta);
  bool check(const std::string& key);
  // The line `rank` published in round `restart_count` before it exited (tell_peers_of_failure),
  // "" when it published none (killed, or stopped by another rank's failure).
  std::string rank_failure(int restart_count, int rank);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The examples of a global batch that `rank` of `world_size` trains on: the rank-th of
// world_size contiguous, near-equal slices (empty when the batch has fewer examples than ranks).
std::vector<size_t> shard_batch(const std::vector<size_t>& global_batch, int rank, int world_size);

}  // namespace attnmt
