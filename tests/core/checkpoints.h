// A checkpoint's model tensors, and two checkpoints compared bit for bit (the exact-resume tests).
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

// Every parameter and buffer of two checkpoints bit for bit.
inline void check_same_tensors(const std::filesystem::path& a_path, const std::filesystem::path& b_path) {
  const auto a = checkpoint_tensors(a_path);
  const auto b = checkpoint_tensors(b_path);
  REQUIRE(a.size() == b.size());
  REQUIRE(a.size() > 10);
  for (const auto& [name, t] : a) {
    INFO(name);
    REQUIRE(b.count(name));
    CHECK(torch::equal(t, b.at(name)));  // bit-identical
  }
}

}  // namespace attnmt::test
