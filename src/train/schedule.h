// The training schedule: the learning rate of each update, what a validation changes (the best
// score, plateau decay, early stopping) and when a run stops. Torch-free and stateless beyond the
// TrainingProgress it is given (which checkpoints store), so that a run stopped anywhere and
// resumed goes on exactly as one never stopped.
#pragma once
#include <cstdint>
#include <optional>

#include "config/config.h"
#include "config/training_progress.h"

namespace attnmt {

// The learning rate of update `step` (1-based) under train.lr_schedule and train.warmup_steps:
//   constant, plateau  current (plateau's decayed rate; train.learning_rate for constant)
//   inverse_sqrt       learning_rate * sqrt(warmup / step) after the warm-up
//   cosine             min + (learning_rate - min) (1 + cos(pi (step - warmup) / (max_steps - warmup))) / 2,
//                      min = train.min_learning_rate, then min past max_steps
// each times step / warmup_steps during the warm-up (step <= warmup_steps).
double scheduled_learning_rate(const TrainConfig& train, double current, int64_t step);

// What one validation did to the schedule.
struct ValidationOutcome {
  bool best = false;                 // a new best model (best.pt is written)
  std::optional<double> decayed_from;  // plateau: the rate before a decay (progress.learning_rate is the new one)
  int64_t decay_after = 0;           // plateau: the validations without improvement that decayed it
  bool early_stop = false;           // train.patience reached: the run stops
};

class TrainingSchedule {
 public:
  TrainingSchedule(const TrainConfig& train, TrainingProgress& progress) : train_(train), progress_(progress) {}

  // The rate the next update runs at, and the rate of the last one (for the log).
  double next_learning_rate() const;
  double applied_learning_rate() const;

  // A validation's score (higher is better: BLEU, or minus the perplexity). scheduled: one every
  // train.valid_every updates, which drives the plateau decay and early stopping; the end-of-run
  // one (a limit or a signal between scheduled ones) may only give a new best model.
  ValidationOutcome after_validation(double score, bool scheduled);

  // The first train.* limit the run has reached (config/training_progress.h), or nullopt.
  std::optional<std::string> reached() const { return reached_limit(train_, progress_); }

  // The updates the first limit that applies in steps allows (0: none does), for the progress bar.
  int64_t step_budget(int64_t batches_per_epoch) const;

 private:
  const TrainConfig& train_;
  TrainingProgress& progress_;
};

}  // namespace attnmt
