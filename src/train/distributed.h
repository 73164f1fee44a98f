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
#pragma once
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace attnmt {

// torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
struct DistributedEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;  // processes on this machine (threads per process = cores / this)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
};

// Reads the variables; InputError naming the variable when one is missing or malformed.
DistributedEnv distributed_env_from_environment();

// Whether this attnmt was built with c10d support (Gloo headers were found at build time).
bool distributed_available();

class Distributed {
 public:
  // world_size 1: a no-op group. Otherwise joins the group (blocks until every rank is there, at
  // most config.timeout seconds). `device` is where the gradients live.
  Distributed(const DistributedEnv& env, const DistributedConfig& config, const torch::Device& device);
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
  void allreduce_gradients(const std::vector<torch::Tensor>& parameters);
  // Rank 0's bytes on every rank (checkpoints and tokenizer models travel this way, so the
  // other ranks need no shared file system).
  std::string broadcast_bytes(const std::string& bytes_on_rank0);
  // Overwrites every rank's tensors with rank 0's.
  void broadcast_tensors(const std::vector<torch::Tensor>& tensors);
  void barrier();
  // Wall seconds spent in allreduce_gradients so far: the transfer plus the wait for the slowest rank.
  double gradient_seconds() const { return gradient_seconds_; }

 private:
  struct Impl;
  DistributedEnv env_;
  DistributedConfig config_;
  torch::Device device_;
  std::unique_ptr<Impl> impl_;
  double gradient_seconds_ = 0;
};

// The examples of a global batch that `rank` of `world_size` trains on: the rank-th of
// world_size contiguous, near-equal slices (empty when the batch has fewer examples than ranks).
std::vector<size_t> shard_batch(const std::vector<size_t>& global_batch, int rank, int world_size);

// attnmt train --nproc N: starts N copies of this program (worker_args: its command line with
// --nproc removed and --distributed added) with RANK / WORLD_SIZE / LOCAL_RANK / LOCAL_WORLD_SIZE /
// MASTER_ADDR=127.0.0.1 / MASTER_PORT (a free port) set, forwards SIGINT/SIGTERM to them, and
// waits for all. When one fails, the others get 10 s to fail by themselves (their next collective
// does), then SIGTERM, then SIGKILL kill_after_seconds later; the Error thrown names the rank that
// failed first (exit code 2 if it failed on bad input, else 1).
void launch_local_workers(int nproc, const std::vector<std::string>& worker_args, double kill_after_seconds);

}  // namespace attnmt
