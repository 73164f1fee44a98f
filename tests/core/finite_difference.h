// Finite-difference checks shared by the gradient tests.
#pragma once
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <string>

namespace attnmt::test {

// Compares x's autograd gradient `grad` with central differences (step 1e-6, double) of `loss`
// at about `samples` elements of x spread over it.
template <class Loss>
void check_central_differences(const torch::Tensor& x, const torch::Tensor& grad, Loss&& loss, const std::string& what,
                               int64_t samples = 13) {
  const double h = 1e-6;
  torch::NoGradGuard no_grad;
  auto flat = x.detach().view({-1});
  for (int64_t k = 0; k < flat.numel(); k += std::max<int64_t>(1, flat.numel() / samples)) {
    const double orig = flat[k].item<double>();
    flat[k] = orig + h;
    const double plus = loss().template item<double>();
    flat[k] = orig - h;
    const double minus = loss().template item<double>();
    flat[k] = orig;
    INFO(what << " element " << k);
    CHECK(grad.view({-1})[k].item<double>() == Approx((plus - minus) / (2 * h)).margin(1e-6).epsilon(1e-5));
  }
}

}  // namespace attnmt::test
