// train.ema_decay: an exponential moving average of the parameters over the updates (Polyak
// averaging, as Marian's --exponential-smoothing and OpenNMT-py's -average_decay keep it). After
// update t, each parameter's average a follows the parameter p:
//     a <- d_t a + (1 - d_t) p,   d_t = min(decay, (1 + t) / (10 + t)),
// d_t being TensorFlow's ExponentialMovingAverage warm-up, so that early averages follow the
// weights instead of holding on to their random start. The average smooths the last updates' noise
// out of the weights; it costs a copy of the parameters and one pass over them per update.
// Where the averages go (train/trainer.cpp): validation, best.pt and the model part of every step
// checkpoint use them, so translate, average and export read them as any model; a step checkpoint
// also holds the trained weights, which --resume continues from (io/model_file.h).
#pragma once
#include <torch/torch.h>

#include <vector>

#include "model/seq2seq.h"

namespace attnmt {

class ParameterAverage {
 public:
  // decay in (0, 1); the averages start as copies of the model's parameters.
  ParameterAverage(Seq2Seq model, double decay);

  // The decay applied after update `step` (1-based).
  double decay_at(int64_t step) const;
  // Folds the parameters as they are after update `step` into the averages.
  void update(int64_t step);
  // The averages become copies of the parameters as they are now (resuming from a checkpoint
  // written without averaging).
  void restart();
  // Exchanges the parameters' values with the averages', in place: the optimizer's state and the
  // replicas keep pointing at the same tensors. A second call exchanges them back.
  void exchange();
  // The values outside the model, in the order of model->parameters(): the averages, or between
  // two exchange() calls the trained weights.
  const std::vector<torch::Tensor>& outside() const { return outside_; }

 private:
  std::vector<torch::Tensor> parameters_;
  std::vector<torch::Tensor> outside_;
  double decay_;
};

// While alive, the model holds the averages (no-op without averaging): validation and saves.
class AveragesInModel {
 public:
  explicit AveragesInModel(ParameterAverage* average) : average_(average) {
    if (average_) average_->exchange();
  }
  ~AveragesInModel() {
    if (average_) average_->exchange();
  }
  AveragesInModel(const AveragesInModel&) = delete;
  AveragesInModel& operator=(const AveragesInModel&) = delete;
  // The trained weights meanwhile (null without averaging), for a step checkpoint.
  const std::vector<torch::Tensor>* trained_weights() const { return average_ ? &average_->outside() : nullptr; }

 private:
  ParameterAverage* average_;
};

}  // namespace attnmt
