// The one stop rule over train.*'s limits (config/training_progress.h), torch-free.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "config/training_progress.h"

using namespace attnmt;

TEST_CASE("reached_limit names the first train.* limit a run has reached", "[train][schedule]") {
  struct Case {
    int max_steps, max_epochs;
    double max_minutes;
    int patience;
    int64_t step, epoch;
    double seconds;
    int64_t bad_validations;
    std::optional<std::string> expected;
  };
  const std::vector<Case> cases = {
      {0, 0, 0, 0, 1000000, 1000, 1e7, 100, std::nullopt},  // 0 = no limit, for each of them
      {100, 0, 0, 0, 99, 0, 0, 0, std::nullopt},
      {100, 0, 0, 0, 100, 0, 0, 0, "train.max_steps"},  // updates done: the 100th has been
      {0, 3, 0, 0, 0, 2, 0, 0, std::nullopt},
      {0, 3, 0, 0, 0, 3, 0, 0, "train.max_epochs"},
      {0, 0, 1.5, 0, 0, 0, 89.9, 0, std::nullopt},
      {0, 0, 1.5, 0, 0, 0, 90.0, 0, "train.max_minutes"},
      {0, 0, 0, 4, 0, 0, 0, 3, std::nullopt},
      {0, 0, 0, 4, 0, 0, 0, 4, "train.patience"},
      // several at once: steps first, then epochs, minutes, patience
      {10, 1, 1, 1, 10, 1, 60, 1, "train.max_steps"},
      {0, 1, 1, 1, 10, 1, 60, 1, "train.max_epochs"},
      {0, 0, 1, 1, 10, 1, 60, 1, "train.max_minutes"},
  };
  for (const auto& c : cases) {
    TrainConfig t;
    t.max_steps = c.max_steps;
    t.max_epochs = c.max_epochs;
    t.max_minutes = c.max_minutes;
    t.patience = c.patience;
    TrainingProgress p;
    p.step = c.step;
    p.epoch = c.epoch;
    p.train_seconds = c.seconds;
    p.bad_validations = c.bad_validations;
    INFO("limits " << c.max_steps << " " << c.max_epochs << " " << c.max_minutes << " " << c.patience << ", progress "
                   << c.step << " " << c.epoch << " " << c.seconds << " " << c.bad_validations);
    CHECK(reached_limit(t, p) == c.expected);
  }
}
