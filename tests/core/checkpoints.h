// A checkpoint's model tensors, and two checkpoints compared bit for bit (the exact-resume tests).
// With train.ema_decay the model tensors are the averages; the trained weights are compared too.
#pragma once
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <string>

#include "io/model_file.h"

namespace attnmt::test {

// Every parameter and buffer of a checkpoint's model, by name.
inline std::map<std::string, torch::Tensor> checkpoint_tensors(const std::filesystem::path& path) {
  auto m = attnmt::load_model(path.parent_path().string(), path.string(), "cpu");
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : m.model->named_parameters()) out[p.key()] = p.value();
  for (const auto& b : m.model->named_buffers()) out["buffer." + b.key()] = b.value();
  return out;
}

// A step checkpoint's trained weights (train.ema_decay), by parameter name; empty without them.
inline std::map<std::string, torch::Tensor> trained_tensors(const std::filesystem::path& path) {
  auto m = attnmt::load_model(path.parent_path().string(), path.string(), "cpu");
  std::map<std::string, torch::Tensor> out;
  attnmt::CheckpointFile file(path.string());
  if (!file.load_trained_weights(m.model)) return out;
  for (const auto& p : m.model->named_parameters()) out[p.key()] = p.value();
  return out;
}

inline void check_same(const std::map<std::string, torch::Tensor>& a, const std::map<std::string, torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [name, t] : a) {
    INFO(name);
    REQUIRE(b.count(name));
    CHECK(torch::equal(t, b.at(name)));  // bit-identical
  }
}

// Every parameter and buffer of two checkpoints bit for bit, and their trained weights if any.
inline void check_same_tensors(const std::filesystem::path& a_path, const std::filesystem::path& b_path) {
  const auto a = checkpoint_tensors(a_path);
  REQUIRE(a.size() > 10);
  check_same(a, checkpoint_tensors(b_path));
  check_same(trained_tensors(a_path), trained_tensors(b_path));
}

}  // namespace attnmt::test
