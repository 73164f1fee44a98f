// Training: data, tokenizers, model, optimizer, the update loop, validation, checkpoints, logs.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/launcher.h"

namespace attnmt {

struct TrainRequest {
  Config config;
  std::string config_source;  // where the config came from (for messages)
  bool resume = false;        // continue from the newest checkpoint in train.save_dir
  bool distributed = false;   // one rank of a data-parallel run (torchrun's environment variables)
  // Set: be this node's launcher (--nproc, --nnodes, --max-restarts; train/launcher.h), which
  // starts the ranks (its save_dir and join_timeout are taken from `config`).
  std::optional<LaunchOptions> launch;
};

// Runs training to the end (max_steps / max_epochs / early stopping / SIGINT / SIGTERM), in this
// process, as one rank of a distributed run, or (launch) by starting this node's ranks.
// Throws InputError / RuntimeError.
void train(const TrainRequest& request);

}  // namespace attnmt
