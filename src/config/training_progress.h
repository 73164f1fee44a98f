// How far a training run has got, and the one stop rule over train.*'s limits. Torch-free: the
// trainer's schedule decides by it, checkpoints store the progress (io/model_file.h), and
// `attnmt compare` reads a run's state by it (analysis/compare.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "config/config.h"

namespace attnmt {

struct TrainingProgress {
  int64_t step = 0;              // updates done
  int64_t epoch = 0;             // current epoch (0-based)
  int64_t batch_in_epoch = 0;    // next batch of the current epoch
  double best_score = 0;         // best valid metric of the scheduled validations (every valid_every)
  bool has_best = false;
  double best_model_score = 0;   // best.pt's valid metric: of every validation, the end-of-run ones too
  bool has_best_model = false;
  int64_t bad_validations = 0;   // validations since the last improvement (early stopping)
  int64_t lr_bad_validations = 0;  // same, since the last LR decay
  double learning_rate = 0;
  int64_t skipped_steps = 0;     // non-finite losses skipped
  double train_seconds = 0;      // wall time spent training so far (all runs)
  int64_t target_tokens = 0;     // target tokens trained on so far
  int64_t world_size = 1;        // processes that trained (batch_in_epoch counts their global batches)
};

// The limit of train.* (max_steps, max_epochs, max_minutes, patience) that a run with this
// progress has reached ("train.max_steps", ...), or nullopt while it may go on. The one stop rule:
// training stops on it, and `attnmt compare` tells a finished run from one to continue by it.
std::optional<std::string> reached_limit(const TrainConfig& train, const TrainingProgress& progress);

}  // namespace attnmt
