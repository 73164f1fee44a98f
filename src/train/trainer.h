// Training: data, tokenizers, model, optimizer, the update loop, validation, checkpoints, logs.
#pragma once
#include <string>

#include "config/config.h"

namespace attnmt {

struct TrainRequest {
  Config config;
  std::string config_source;  // where the config came from (for messages)
  bool resume = false;        // continue from the newest checkpoint in train.save_dir
};

// Runs training to the end (max_steps / max_epochs / early stopping / SIGINT / SIGTERM).
// Throws InputError / RuntimeError.
void train(const TrainRequest& request);

}  // namespace attnmt
