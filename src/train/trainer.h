// Training: data, tokenizers, model, optimizer, the update loop, validation, checkpoints, logs.
#pragma once
#include <string>
#include <vector>

#include "config/config.h"

namespace attnmt {

struct TrainRequest {
  Config config;
  std::string config_source;  // where the config came from (for messages)
  bool resume = false;        // continue from the newest checkpoint in train.save_dir
  bool distributed = false;   // one rank of a data-parallel run (torchrun's environment variables)
  int nproc = 1;              // > 1: start this many local ranks (train/distributed.h) and wait
  std::vector<std::string> worker_args;  // nproc > 1: the ranks' command line (argv[1..])
};

// Runs training to the end (max_steps / max_epochs / early stopping / SIGINT / SIGTERM), in this
// process, as one rank of a distributed run, or (nproc > 1) by starting the local ranks.
// Throws InputError / RuntimeError.
void train(const TrainRequest& request);

}  // namespace attnmt
