#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace attnmt {

double scheduled_learning_rate(const TrainConfig& train, double current, int64_t step) {
  const double s = static_cast<double>(std::max<int64_t>(step, 1));
  const double warmup = train.warmup_steps;
  double lr = current;
  if (train.lr_schedule == LrSchedule::inverse_sqrt) {
    lr = train.learning_rate * std::sqrt(warmup / std::max(s, warmup));
  } else if (train.lr_schedule == LrSchedule::cosine) {
    const double span = std::max(1.0, static_cast<double>(train.max_steps) - warmup);
    const double done = std::clamp((s - warmup) / span, 0.0, 1.0);
    lr = train.min_learning_rate +
         (train.learning_rate - train.min_learning_rate) * 0.5 * (1.0 + std::cos(M_PI * done));
  }
  if (train.warmup_steps > 0 && s <= warmup) lr *= s / warmup;
  return lr;
}

double TrainingSchedule::next_learning_rate() const {
  return scheduled_learning_rate(train_, progress_.learning_rate, progress_.step + 1);
}

double TrainingSchedule::applied_learning_rate() const {
  return scheduled_learning_rate(train_, progress_.learning_rate, std::max<int64_t>(progress_.step, 1));
}

ValidationOutcome TrainingSchedule::after_validation(double score, bool scheduled) {
  ValidationOutcome outcome;
  outcome.best = !progress_.has_best_model || score > progress_.best_model_score;
  if (outcome.best) {
    progress_.best_model_score = score;
    progress_.has_best_model = true;
  }
  if (!scheduled) return outcome;  // leaves the schedule as it is
  if (!progress_.has_best || score > progress_.best_score) {
    progress_.best_score = score;
    progress_.has_best = true;
    progress_.bad_validations = 0;
    progress_.lr_bad_validations = 0;
  } else {  // a scheduled validation without improvement
    ++progress_.bad_validations;
    ++progress_.lr_bad_validations;
    if (train_.lr_schedule == LrSchedule::plateau && progress_.lr_bad_validations >= train_.lr_patience) {
      const double lr = std::max(train_.min_learning_rate, progress_.learning_rate * train_.lr_decay);
      if (lr < progress_.learning_rate) {
        outcome.decayed_from = progress_.learning_rate;
        outcome.decay_after = progress_.lr_bad_validations;
        progress_.learning_rate = lr;
      }
      progress_.lr_bad_validations = 0;
    }
  }
  outcome.early_stop = train_.patience > 0 && progress_.bad_validations >= train_.patience;
  return outcome;
}

int64_t TrainingSchedule::step_budget(int64_t batches_per_epoch) const {
  const int64_t by_epochs = train_.max_epochs > 0 ? train_.max_epochs * batches_per_epoch : 0;
  if (train_.max_steps > 0 && by_epochs > 0) return std::min<int64_t>(train_.max_steps, by_epochs);
  return train_.max_steps > 0 ? train_.max_steps : by_epochs;
}

}  // namespace attnmt
