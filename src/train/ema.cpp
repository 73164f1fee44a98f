#include "train/ema.h"

#include <algorithm>

#include "util/error.h"

namespace attnmt {

ParameterAverage::ParameterAverage(Seq2Seq model, double decay) : parameters_(model->parameters()), decay_(decay) {
  if (!(decay > 0 && decay < 1)) throw RuntimeError("ParameterAverage: decay must be in (0, 1)");
  torch::NoGradGuard no_grad;
  outside_.reserve(parameters_.size());
  for (const auto& p : parameters_) outside_.push_back(p.detach().clone());
}

double ParameterAverage::decay_at(int64_t step) const {
  const double t = static_cast<double>(step);
  return std::min(decay_, (1 + t) / (10 + t));
}

void ParameterAverage::update(int64_t step) {
  torch::NoGradGuard no_grad;
  const double weight = 1 - decay_at(step);  // a + w (p - a): one pass
  for (size_t i = 0; i < parameters_.size(); ++i) outside_[i].lerp_(parameters_[i], weight);
}

void ParameterAverage::restart() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) outside_[i].copy_(parameters_[i]);
}

void ParameterAverage::exchange() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const auto held = parameters_[i].clone();
    parameters_[i].copy_(outside_[i]);
    outside_[i].copy_(held);
  }
}

}  // namespace attnmt
