#include "config/training_progress.h"

namespace attnmt {

std::optional<std::string> reached_limit(const TrainConfig& t, const TrainingProgress& p) {
  if (t.max_steps > 0 && p.step >= t.max_steps) return "train.max_steps";
  if (t.max_epochs > 0 && p.epoch >= t.max_epochs) return "train.max_epochs";
  if (t.max_minutes > 0 && p.train_seconds >= 60.0 * t.max_minutes) return "train.max_minutes";
  if (t.patience > 0 && p.bad_validations >= t.patience) return "train.patience";
  return std::nullopt;
}

}  // namespace attnmt
