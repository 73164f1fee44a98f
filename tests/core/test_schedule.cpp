// The training schedule (train/schedule.h): learning rates, what validations change, the budget.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "train/schedule.h"

using attnmt::LrSchedule;
using attnmt::TrainConfig;
using attnmt::TrainingProgress;
using attnmt::TrainingSchedule;

TEST_CASE("learning-rate schedules: warm-up, inverse square root, cosine", "[train][schedule]") {
  attnmt::TrainConfig t;
  t.learning_rate = 1e-3;
  t.min_learning_rate = 1e-5;
  SECTION("constant and plateau follow the current rate, warmed up linearly") {
    for (const auto schedule : {LrSchedule::constant, LrSchedule::plateau}) {
      t.lr_schedule = schedule;
      t.warmup_steps = 0;
      CHECK(attnmt::scheduled_learning_rate(t, 5e-4, 1) == 5e-4);
      t.warmup_steps = 4;
      CHECK(attnmt::scheduled_learning_rate(t, 5e-4, 1) == Approx(5e-4 / 4));
      CHECK(attnmt::scheduled_learning_rate(t, 5e-4, 3) == Approx(5e-4 * 3 / 4));
      CHECK(attnmt::scheduled_learning_rate(t, 5e-4, 4) == Approx(5e-4));
      CHECK(attnmt::scheduled_learning_rate(t, 5e-4, 100) == 5e-4);
    }
  }
  SECTION("inverse_sqrt: lr * min(step / warmup, sqrt(warmup / step))") {
    t.lr_schedule = LrSchedule::inverse_sqrt;
    t.warmup_steps = 100;
    for (int64_t step : {1, 50, 100, 101, 400, 10000}) {
      const double s = static_cast<double>(step);
      INFO("step " << step);
      CHECK(attnmt::scheduled_learning_rate(t, 123.0, step) == Approx(1e-3 * std::min(s / 100, std::sqrt(100 / s))));
    }
  }
  SECTION("cosine: from lr after the warm-up to min_learning_rate at max_steps, then flat") {
    t.lr_schedule = LrSchedule::cosine;
    t.warmup_steps = 10;
    t.max_steps = 110;
    CHECK(attnmt::scheduled_learning_rate(t, 123.0, 5) == Approx(1e-3 * 0.5));
    CHECK(attnmt::scheduled_learning_rate(t, 123.0, 10) == Approx(1e-3));
    CHECK(attnmt::scheduled_learning_rate(t, 123.0, 60) == Approx(1e-5 + (1e-3 - 1e-5) * 0.5));  // half way: cos = 0
    CHECK(attnmt::scheduled_learning_rate(t, 123.0, 35) ==
          Approx(1e-5 + (1e-3 - 1e-5) * 0.5 * (1 + std::cos(M_PI * 0.25))));
    CHECK(attnmt::scheduled_learning_rate(t, 123.0, 110) == Approx(1e-5));
    CHECK(attnmt::scheduled_learning_rate(t, 123.0, 500) == Approx(1e-5));
  }
}

TEST_CASE("validations: best model, plateau decay and early stopping by the scheduled ones only", "[train][schedule]") {
  TrainConfig t;
  t.lr_schedule = LrSchedule::plateau;
  t.lr_patience = 2;
  t.lr_decay = 0.5;
  t.min_learning_rate = 0.3;
  t.patience = 3;
  TrainingProgress p;
  p.learning_rate = 1.0;
  TrainingSchedule schedule(t, p);

  auto o = schedule.after_validation(10, /*scheduled=*/true);  // the first is the best
  CHECK(o.best);
  CHECK_FALSE(o.decayed_from);
  CHECK(p.best_score == 10);
  CHECK(p.best_model_score == 10);

  o = schedule.after_validation(9, true);  // 1 without improvement: no decay yet (lr_patience 2)
  CHECK_FALSE(o.best);
  CHECK_FALSE(o.decayed_from);
  CHECK(p.bad_validations == 1);

  // An end-of-run validation (a limit or a signal between scheduled ones) that improves: a new
  // best model, but the schedule's own best and counters stay, so a resumed run goes on unchanged.
  o = schedule.after_validation(11, /*scheduled=*/false);
  CHECK(o.best);
  CHECK(p.best_model_score == 11);
  CHECK(p.best_score == 10);
  CHECK(p.bad_validations == 1);
  CHECK(p.lr_bad_validations == 1);

  o = schedule.after_validation(9.5, true);  // 2 without improvement: 1.0 -> 0.5
  CHECK_FALSE(o.best);  // below best.pt's 11
  REQUIRE(o.decayed_from);
  CHECK(*o.decayed_from == 1.0);
  CHECK(o.decay_after == 2);
  CHECK(p.learning_rate == 0.5);
  CHECK(p.lr_bad_validations == 0);
  CHECK(p.bad_validations == 2);
  CHECK_FALSE(o.early_stop);
  CHECK(schedule.next_learning_rate() == 0.5);  // plateau: the current rate (no warm-up)

  o = schedule.after_validation(9.9, true);  // 3 without improvement: patience 3 reached
  CHECK(o.early_stop);
  CHECK(schedule.reached() == std::optional<std::string>("train.patience"));

  // An improvement resets both counters; the rate stays decayed.
  o = schedule.after_validation(10.5, true);
  CHECK_FALSE(o.best);  // best.pt's 11 is still higher
  CHECK(p.best_score == 10.5);
  CHECK(p.bad_validations == 0);
  CHECK(p.lr_bad_validations == 0);
  CHECK_FALSE(schedule.reached());

  // The decay stops at min_learning_rate: 0.5 -> 0.3, then no decay to report.
  schedule.after_validation(1, true);
  o = schedule.after_validation(1, true);
  REQUIRE(o.decayed_from);
  CHECK(p.learning_rate == 0.3);
  schedule.after_validation(1, true);
  o = schedule.after_validation(1, true);
  CHECK_FALSE(o.decayed_from);
  CHECK(p.learning_rate == 0.3);
}

TEST_CASE("only the plateau schedule decays on validations", "[train][schedule]") {
  for (const auto name : {LrSchedule::constant, LrSchedule::cosine, LrSchedule::inverse_sqrt}) {
    TrainConfig t;
    t.lr_schedule = name;
    t.lr_patience = 1;
    TrainingProgress p;
    p.learning_rate = 1.0;
    TrainingSchedule schedule(t, p);
    schedule.after_validation(5, true);
    const auto o = schedule.after_validation(4, true);
    CHECK_FALSE(o.decayed_from);
    CHECK(p.learning_rate == 1.0);
  }
}

TEST_CASE("step budget: the first limit that applies in steps", "[train][schedule]") {
  TrainConfig t;
  TrainingProgress p;
  TrainingSchedule schedule(t, p);
  t.max_steps = 0;
  t.max_epochs = 0;
  CHECK(schedule.step_budget(100) == 0);
  t.max_steps = 250;
  CHECK(schedule.step_budget(100) == 250);
  t.max_epochs = 2;
  CHECK(schedule.step_budget(100) == 200);
  t.max_steps = 0;
  CHECK(schedule.step_budget(100) == 200);
}
