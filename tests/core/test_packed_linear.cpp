// Packed decoding weights (runtime/packed_linear.h): the oneDNN products against LibTorch's.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <thread>

#include "decoding/search.h"
#include "program.h"
#include "decoding/seq2seq_step_model.h"
#include "model/seq2seq.h"
#include "runtime/packed_linear.h"
#include "small_models.h"
#include "util/cpu_kernels.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {
}  // namespace

TEST_CASE("PackedLinear fp32 computes x W^T + b for any row count", "[packed]") {
  if (!packed_linear_available()) ATTNMT_MISSING_DEPENDENCY("built without oneDNN: checking the LibTorch fallback");
  torch::manual_seed(1);
  auto w = torch::randn({300, 48}), b = torch::randn({300});
  PackedLinear with_bias(w, b, ProductPrecision::kFp32), no_bias(w, torch::Tensor(), ProductPrecision::kFp32);
  REQUIRE(with_bias.packed() == packed_linear_available());
  for (int64_t m : {0, 1, 3, 64, 130}) {
    INFO(m << " rows");
    auto x = torch::randn({m, 48});
    auto y = with_bias(x), y0 = no_bias(x);
    REQUIRE(y.sizes() == torch::IntArrayRef({m, 300}));
    if (m == 0) continue;
    REQUIRE(max_abs_diff(y, torch::addmm(b, x, w.t())) < 1e-4);
    REQUIRE(max_abs_diff(y0, torch::mm(x, w.t())) < 1e-4);
  }
  // A non-contiguous input (a column slice, as chunk() gives) is read correctly.
  auto wide = torch::randn({7, 96});
  auto x = wide.narrow(1, 48, 48);
  REQUIRE(max_abs_diff(with_bias(x), torch::addmm(b, x, w.t())) < 1e-4);
}

TEST_CASE("PackedLinear bf16 rounds both operands to bfloat16 and accumulates in fp32", "[packed]") {
  if (!packed_linear_available()) {  // the fallback has no bf16 path of its own
    ATTNMT_MISSING_DEPENDENCY("built without oneDNN: nothing to check");
    return;
  }
  torch::manual_seed(2);
  auto w = torch::randn({200, 64}), b = torch::randn({200});
  PackedLinear packed(w, b, ProductPrecision::kBf16);
  if (!packed.packed()) {
    ATTNMT_CPU_LACKS("oneDNN has no bfloat16 kernel for this CPU (" << kernel_flags(this_cpu_flags())
                                                                     << "): nothing to check");
    return;
  }
  auto x = torch::randn({5, 64});
  auto y = packed(x);
  // The same products computed independently: operands rounded to bfloat16, sums in double.
  auto round = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kDouble); };
  auto expected = (torch::mm(round(x), round(w).t()) + b.to(torch::kDouble)).to(torch::kFloat);
  REQUIRE(max_abs_diff(y, expected) < 1e-3);
  // ...and it is not the fp32 product: rounding moves these sums of 64 terms by ~1e-2.
  REQUIRE(max_abs_diff(y, torch::addmm(b, x, w.t())) > 1e-3);
}

TEST_CASE("PackedLinear bf16 on the kernel test's shapes: within fp32 accumulation's bound of the rounded operands",
          "[packed][isa]") {
  const auto& hardware = this_cpu_hardware_flags();
  const auto kernel = bf16_kernel(this_cpu_flags());
  WARN("bf16 products on this CPU (" << kernel_flags(hardware) << (cpu_isa_forced() ? ", ATTNMT_CPU_ISA=" : "")
                                     << (cpu_isa_forced() ? cpu_isa_name(this_cpu_isa()) : "")
                                     << "): " << bf16_kernel_name(kernel));
  if (!packed_linear_available()) {
    ATTNMT_MISSING_DEPENDENCY("built without oneDNN: no bf16 products to check");
    return;
  }
  torch::manual_seed(6);
  for (const int64_t m : {1, 3, 4, 5, 7, 53}) {
    for (const int64_t n : {1, 15, 16, 17, 40}) {
      for (const int64_t k : {1, 3, 4, 5, 37, 64}) {
        auto w = torch::randn({n, k}) * 0.3, b = torch::randn({n}) * 0.5, x = torch::randn({m, k});
        PackedLinear packed(w, b, ProductPrecision::kBf16);
        // Where the CPU has native bf16 products they must run. Elsewhere oneDNN emulates them on
        // AVX-512 (decoding does not ask it to: seq2seq_step_model.cpp), or has none (AVX2).
        if (kernel != Bf16Kernel::kEmulated) REQUIRE(packed.packed());
        if (!packed.packed()) continue;
        const auto y = packed(x).to(torch::kDouble);
        // A product of two bfloat16 values is exact in fp32 (8 + 8 significant bits), so the only
        // error is the fp32 sum's: at most (k + 1) 2^-24 times the sum of the magnitudes.
        auto round = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kDouble); };
        const auto exact = torch::mm(round(x), round(w).t()) + b.to(torch::kDouble);
        const auto magnitude = torch::mm(round(x).abs(), round(w).abs().t()) + b.to(torch::kDouble).abs();
        const auto bound = magnitude * (static_cast<double>(k + 1) * std::ldexp(1.0, -24)) + 1e-30;
        INFO(m << " x " << n << " x " << k);
        REQUIRE(((y - exact).abs() <= bound).all().item<bool>());
      }
    }
  }
}

TEST_CASE("PackedLinear runs in several threads at once", "[packed]") {
  torch::manual_seed(3);
  auto w = torch::randn({500, 32}), b = torch::randn({500});
  PackedLinear packed(w, b, ProductPrecision::kFp32);
  std::vector<torch::Tensor> inputs, outputs(4);
  for (int64_t m : {3, 17, 64, 17}) inputs.push_back(torch::randn({m, 32}));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < inputs.size(); ++i) {
    threads.emplace_back([&, i] {
      at::set_num_threads(1);
      torch::Tensor y;
      for (int r = 0; r < 50; ++r) y = packed(inputs[i]);
      outputs[i] = y;
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < inputs.size(); ++i) REQUIRE(max_abs_diff(outputs[i], torch::addmm(b, inputs[i], w.t())) < 1e-4);
}

TEST_CASE("decoding on packed weights gives LibTorch's log-probabilities and translations", "[packed][model]") {
  for (const RnnType rnn : {RnnType::lstm, RnnType::gru}) {
    for (const DecoderStyle style : {DecoderStyle::luong, DecoderStyle::bahdanau, DecoderStyle::conditional}) {
      SECTION(name_string(rnn) + " " + name_string(style)) {
        torch::manual_seed(4);
        auto model = test::eval_model(test::styled_config(24, 12, 24, rnn, style), 40, 60);
        torch::NoGradGuard no_grad;
        Seq2SeqStepModel plain(model, DecodePrecision::fp32, false), packed(model, DecodePrecision::fp32, true);
        REQUIRE_FALSE(plain.packed());
        REQUIRE(packed.packed() == packed_linear_available());
        auto src = torch::randint(4, 40, {3, 6}, torch::kLong);
        auto len = torch::tensor({6, 4, 2}, torch::kLong);
        auto a = plain.start(src, len), b = packed.start(src, len);
        auto prev = torch::full({3}, VocabSizes{}.bos_id, torch::kLong);
        for (int t = 0; t < 5; ++t) {
          auto la = plain.step(prev, *a, false).logits, lb = packed.step(prev, *b, false).logits;
          REQUIRE(max_abs_diff(la, lb) < 1e-4);
          prev = la.argmax(1);
        }
        SearchOptions options;
        options.beam_size = 3;
        auto ha = beam_search(plain, src, len, options), hb = beam_search(packed, src, len, options);
        for (int64_t s = 0; s < 3; ++s) {
          REQUIRE(ha[s][0].tokens == hb[s][0].tokens);
          REQUIRE(ha[s][0].score == Approx(hb[s][0].score).margin(1e-4));
        }
      }
    }
  }
}
