// int8 decoding (runtime/int8_gemm.h, decode.precision: int8): the kernel against products
// computed here in double, its error against fp32 within the bound its scales allow, the edge cases
// of quantisation, and decoding with it.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "decoding/search.h"
#include "decoding/seq2seq_step_model.h"
#include "model/seq2seq.h"
#include "runtime/int8_gemm.h"
#include "runtime/packed_linear.h"
#include "small_models.h"
#include "util/cpu_kernels.h"

using namespace attnmt;

namespace {

struct Int8Result {
  std::vector<float> y;
  Int8Rows rows;
};

Int8Result multiply(const Int8Matrix& w, const std::vector<float>& x, int64_t m) {
  Int8Result p;
  w.quantize(x.data(), m, p.rows);
  p.y.assign(static_cast<size_t>(m * w.rows()), -1.f);
  w.multiply(p.rows, 0, w.blocks(), p.y.data(), w.rows());
  return p;
}

int qx(const Int8Rows& rows, int64_t r, int64_t k) {
  return static_cast<int>(rows.values[static_cast<size_t>(r * rows.padded_cols + k)]) - 64;
}

std::vector<float> random_values(size_t n, float scale) {
  std::vector<float> v(n);
  auto t = torch::randn({static_cast<int64_t>(n)}, torch::TensorOptions().dtype(torch::kFloat)) * scale;
  std::copy(t.data_ptr<float>(), t.data_ptr<float>() + n, v.begin());
  return v;
}

// The checks every product must pass, from the definitions in runtime/int8_gemm.h:
//  - quantisation: sx = max|x| / 63, |x / sx - qx| <= 1/2 (+ rounding), |qx| <= 63; the same for W;
//  - the product: y = sx sw sum qx qw + b, the integer sum in exact arithmetic (here: int64);
//  - against fp32: |y - (x W^T + b)| <= sum_k (sx/2 |w_k| + sx |qx_k| sw/2), the error the
//    scales allow, plus the float rounding of the dequantisation.
void check_product(const std::vector<float>& w, const std::vector<float>& bias, const std::vector<float>& x,
                   int64_t m, int64_t n, int64_t k) {
  Int8Matrix matrix(w.data(), bias.empty() ? nullptr : bias.data(), n, k);
  REQUIRE(matrix.rows() == n);
  REQUIRE(matrix.cols() == k);
  for (int64_t j = 0; j < n; ++j) {
    double amax = 0;
    for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(static_cast<double>(w[j * k + i])));
    REQUIRE(matrix.scale(j) == Approx(amax / 127).epsilon(1e-6).margin(1e-30));
    for (int64_t i = 0; i < k; ++i) {
      const int q = matrix.value(j, i);
      REQUIRE(std::abs(q) <= 127);
      if (matrix.scale(j) > 0) REQUIRE(std::fabs(w[j * k + i] / matrix.scale(j) - q) <= 0.5 + 1e-4);
    }
  }
  auto p = multiply(matrix, x, m);
  for (int64_t r = 0; r < m; ++r) {
    double amax = 0;
    for (int64_t i = 0; i < k; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[r * k + i])));
    const double sx = p.rows.scales[static_cast<size_t>(r)];
    REQUIRE(sx == Approx(amax / 63).epsilon(1e-6).margin(1e-30));
    for (int64_t i = 0; i < k; ++i) {
      REQUIRE(std::abs(qx(p.rows, r, i)) <= 63);
      if (sx > 0) REQUIRE(std::fabs(x[r * k + i] / sx - qx(p.rows, r, i)) <= 0.5 + 1e-4);
    }
    for (int64_t j = 0; j < n; ++j) {
      const double sw = matrix.scale(j), b = bias.empty() ? 0.0 : bias[j];
      int64_t sum = 0;
      double exact = b, bound = 0, magnitude = std::fabs(b);
      for (int64_t i = 0; i < k; ++i) {
        sum += static_cast<int64_t>(qx(p.rows, r, i)) * matrix.value(j, i);
        const double wi = w[j * k + i], xi = x[r * k + i];
        exact += xi * wi;
        bound += sx / 2 * std::fabs(wi) + sx * std::abs(qx(p.rows, r, i)) * sw / 2;
        magnitude += std::fabs(xi * wi);
      }
      const double y = p.y[static_cast<size_t>(r * n + j)];
      const double dequantised = sx * sw * static_cast<double>(sum) + b;
      INFO("row " << r << " column " << j << " of " << m << " x " << n << " x " << k);
      // The kernel's own arithmetic: an exact integer sum, one float rounding of the scales and one
      // of the fused multiply-add.
      REQUIRE(std::fabs(y - dequantised) <= 4e-7 * (std::fabs(sx * sw * static_cast<double>(sum)) + std::fabs(b)) + 1e-30);
      REQUIRE(std::fabs(y - exact) <= bound + 4e-7 * magnitude + 1e-30);
    }
  }
}

}  // namespace

TEST_CASE("int8 product: per-row scales and values, by hand", "[int8]") {
  // Row 0: max 2 -> sw = 2/127; 1 -> 63.5 -> 64 (half to even), -2 -> -127, 0.5 -> 31.75 -> 32.
  // Row 1: all zero -> sw = 0, values 0. Row 2: max 0.3 -> 0.1 -> 42.33 -> 42, 0.2 -> 84.67 -> 85.
  const std::vector<float> w = {1.f, -2.f, 0.5f, 0.f, 0.f, 0.f, 0.1f, 0.2f, -0.3f};
  Int8Matrix m(w.data(), nullptr, 3, 3);
  CHECK(m.scale(0) == Approx(2.0 / 127));
  CHECK(m.scale(1) == 0.f);
  CHECK(m.scale(2) == Approx(0.3 / 127));
  CHECK(std::vector<int>{m.value(0, 0), m.value(0, 1), m.value(0, 2)} == std::vector<int>{64, -127, 32});
  CHECK(std::vector<int>{m.value(1, 0), m.value(1, 1), m.value(1, 2)} == std::vector<int>{0, 0, 0});
  CHECK(std::vector<int>{m.value(2, 0), m.value(2, 1), m.value(2, 2)} == std::vector<int>{42, 85, -127});
  // Input [0.63, -0.126, 0]: sx = 0.01, qx = [63, -13 (-12.6), 0].
  const std::vector<float> x = {0.63f, -0.126f, 0.f};
  auto p = multiply(m, x, 1);
  CHECK(p.rows.scales[0] == Approx(0.01));
  CHECK(std::vector<int>{qx(p.rows, 0, 0), qx(p.rows, 0, 1), qx(p.rows, 0, 2)} == std::vector<int>{63, -13, 0});
  // y0 = 0.01 * 2/127 * (63*64 + 13*127) = 0.01 * 2/127 * 5683; y1 = 0 (zero row).
  CHECK(p.y[0] == Approx(0.01 * 2.0 / 127 * 5683).epsilon(1e-6));
  CHECK(p.y[1] == 0.f);
  CHECK(p.y[2] == Approx(0.01 * 0.3 / 127 * (63 * 42 - 13 * 85)).epsilon(1e-6));
}

TEST_CASE("int8 product equals its definition and stays within the scales' bound of fp32", "[int8]") {
  torch::manual_seed(1);
  INFO("int8 kernel: " << int8_kernel_name(Int8Matrix::kernel_in_use()));
  // Shapes around the kernel's blocks: 16 columns, 4 rows, 4 inputs, 48-row chunks.
  for (const int64_t m : {1, 3, 4, 5, 7, 53}) {
    for (const int64_t n : {1, 15, 16, 17, 40}) {
      for (const int64_t k : {1, 3, 4, 5, 37, 64}) {
        const auto w = random_values(static_cast<size_t>(n * k), 0.3f);
        const auto x = random_values(static_cast<size_t>(m * k), 1.0f);
        const auto b = random_values(static_cast<size_t>(n), 0.5f);
        check_product(w, (n + k) % 2 ? b : std::vector<float>{}, x, m, n, k);
      }
    }
  }
}

namespace {

// The kernels this CPU runs (every level ATTNMT_CPU_ISA may choose here), and the oneDNN path
// (AMX-INT8's: on a CPU without AMX, oneDNN's best int8 brgemm) where the build has oneDNN.
std::vector<Int8Kernel> kernels_to_test() {
  auto kernels = int8_kernels_runnable(this_cpu_hardware_flags());
  if (packed_linear_available() && std::find(kernels.begin(), kernels.end(), Int8Kernel::kAmx) == kernels.end()) {
    kernels.push_back(Int8Kernel::kAmx);
  }
  return kernels;
}

// y for blocks [first, end) by one kernel, the other columns left at -1.
std::vector<float> product_by(const Int8Matrix& w, const std::vector<float>& x, int64_t m, Int8Kernel kernel,
                              int64_t first, int64_t end) {
  Int8Rows rows;
  w.quantize(x.data(), m, rows, kernel);
  std::vector<float> y(static_cast<size_t>(m * w.rows()), -1.f);
  w.multiply(rows, first, end, y.data(), w.rows(), kernel);
  if (Int8Matrix::multiply_whole(kernel, m)) {  // it writes every block: keep those asked for
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < w.rows(); ++c) {
        if (c < first * Int8Matrix::kBlock || c >= end * Int8Matrix::kBlock) y[static_cast<size_t>(r * w.rows() + c)] = -1.f;
      }
    }
  }
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("int8 kernels: every one this CPU has equals the portable loop bit for bit", "[int8][isa]") {
  const auto kernels = kernels_to_test();
  std::string ran;
  for (auto kernel : kernels) ran += (ran.empty() ? "" : ", ") + std::string(int8_kernel_name(kernel));
  WARN("int8 kernels run on this CPU (" << kernel_flags(this_cpu_hardware_flags()) << "): " << ran
                                        << (packed_linear_available() ? " (AMX-INT8: oneDNN's path, its best ISA here)" : ""));
  // A CPU whose flags promise more than the portable loop must run more than it.
  if (std::getenv("CI") && this_cpu_hardware_flags().count("avx2")) REQUIRE(kernels.size() > 1);
  torch::manual_seed(5);
  int64_t compared = 0;
  // The kernel test's 180 shapes (rows around the 4-row tiles and 48-row chunks, columns around the
  // 16-column blocks, inputs around the 4-byte groups), then decoding's own (a beam's 5 rows, a
  // batch's 64 and 320; a 256-wide state into 1,024 gates and 1,000 outputs).
  std::vector<std::array<int64_t, 3>> shapes;
  for (const int64_t m : {1, 3, 4, 5, 7, 53}) {
    for (const int64_t n : {1, 15, 16, 17, 40}) {
      for (const int64_t k : {1, 3, 4, 5, 37, 64}) shapes.push_back({m, n, k});
    }
  }
  for (const int64_t m : {5, 64, 320}) shapes.push_back({m, 1000, 256});
  shapes.push_back({9, 1024, 256});
  shapes.push_back({50, 129, 513});
  for (const auto& [m, n, k] : shapes) {
    const auto w = random_values(static_cast<size_t>(n * k), 0.3f);
    const auto x = random_values(static_cast<size_t>(m * k), 1.0f);
    const auto b = random_values(static_cast<size_t>(n), 0.5f);
    Int8Matrix matrix(w.data(), (n + k) % 2 ? b.data() : nullptr, n, k);
    const auto blocks = matrix.blocks();
    // All blocks, and a split as the threads make it (a middle range, odd counts of blocks).
    const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, blocks}, {blocks / 3, blocks - blocks / 4}};
    for (const auto& [first, end] : ranges) {
      if (first >= end) continue;
      const auto portable = product_by(matrix, x, m, Int8Kernel::kPortable, first, end);
      for (auto kernel : kernels) {
        INFO(int8_kernel_name(kernel) << ": " << m << " x " << n << " x " << k << ", blocks " << first << ".." << end);
        REQUIRE(same_bits(product_by(matrix, x, m, kernel, first, end), portable));
        ++compared;
      }
    }
  }
  CHECK(compared >= static_cast<int64_t>(kernels.size()) * 180);
  // Through PackedLinear as decoding calls it: rows not a multiple of oneDNN's rounding, and
  // outputs a multiple of 16 wide (oneDNN's sums written into the output and dequantised there).
  for (const int64_t m : {5, 17, 53, 64, 315}) {
    for (const int64_t n : {256, 1000}) {
      auto w = torch::randn({n, 96}) * 0.3, b = torch::randn({n}), x = torch::randn({m, 96});
      PackedLinear packed(w, b, ProductPrecision::kInt8);
      const auto portable = packed.int8_with(x, Int8Kernel::kPortable);
      for (auto kernel : kernels) {
        INFO("PackedLinear " << int8_kernel_name(kernel) << ": " << m << " x " << n);
        const auto y = packed.int8_with(x, kernel);
        REQUIRE(y.sizes() == portable.sizes());
        REQUIRE(torch::equal(y, portable));
      }
    }
  }
}

TEST_CASE("int8 product: zero rows, one huge value, saturation at +-127 and +-63", "[int8]") {
  const int64_t n = 20, k = 300, m = 6;
  std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(m * k)), b(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    b[j] = 0.25f * static_cast<float>(j);
    for (int64_t i = 0; i < k; ++i) {
      float v = 0.01f * static_cast<float>((i * 7 + j * 3) % 19) - 0.09f;
      if (j == 1) v = 0;                              // a zero weight row: y = b
      if (j == 2) v = (i == 5) ? 1e4f : v;            // one huge value: the rest rounds to 0
      if (j == 3) v = 1.f;                            // every product at +127 ...
      if (j == 4) v = -1.f;                           // ... and at -127
      w[j * k + i] = v;
    }
  }
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      float v = 0.1f * static_cast<float>((i * 5 + r) % 13) - 0.6f;
      if (r == 1) v = 0;               // a zero input row
      if (r == 2) v = 1.f;             // every input at +63 (the most a pair of products reaches:
      if (r == 3) v = -1.f;            // 2 x 127 x 127, still inside vpmaddubsw's int16)
      if (r == 4) v = (i == 0) ? -3e5f : 1e-3f;
      x[r * k + i] = v;
    }
  }
  check_product(w, b, x, m, n, k);
  Int8Matrix matrix(w.data(), b.data(), n, k);
  auto p = multiply(matrix, x, m);
  for (int64_t r = 0; r < m; ++r) CHECK(p.y[r * n + 1] == b[1]);
  for (int64_t j = 0; j < n; ++j) CHECK(p.y[1 * n + j] == b[j]);
  // Saturated both ways: 300 products of +-1 exactly.
  CHECK(p.y[2 * n + 3] == Approx(k + b[3]).epsilon(1e-6));
  CHECK(p.y[2 * n + 4] == Approx(-k + b[4]).epsilon(1e-6));
  CHECK(p.y[3 * n + 3] == Approx(-k + b[3]).epsilon(1e-6));
  CHECK(p.y[3 * n + 4] == Approx(k + b[4]).epsilon(1e-6));
  // A NaN in an input row makes that row's outputs NaN, as fp32 would; the others are unaffected.
  x[5 * k + 7] = std::nanf("");
  auto q = multiply(matrix, x, m);
  for (int64_t j = 0; j < n; ++j) {
    CHECK(std::isnan(q.y[5 * n + j]));
    CHECK(q.y[0 * n + j] == p.y[0 * n + j]);
  }
  // The same edge cases through every kernel this CPU has: the same bits (NaN where portable's is).
  const auto portable = product_by(matrix, x, m, Int8Kernel::kPortable, 0, matrix.blocks());
  for (auto kernel : kernels_to_test()) {
    INFO(int8_kernel_name(kernel));
    const auto y = product_by(matrix, x, m, kernel, 0, matrix.blocks());
    for (size_t i = 0; i < y.size(); ++i) {
      if (std::isnan(portable[i])) {
        CHECK(std::isnan(y[i]));
      } else {
        CHECK(std::memcmp(&y[i], &portable[i], sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("PackedLinear int8: any row count, several threads, non-contiguous input", "[int8][packed]") {
  torch::manual_seed(2);
  auto w = torch::randn({300, 48}) * 0.2, b = torch::randn({300});
  PackedLinear packed(w, b, ProductPrecision::kInt8);
  REQUIRE(packed.packed());
  REQUIRE(packed.int8());
  const auto reference = [&](const torch::Tensor& x) { return torch::addmm(b, x, w.t()); };
  for (int64_t m : {0, 1, 5, 64, 130}) {
    auto x = torch::randn({m, 48});
    auto y = packed(x);
    REQUIRE(y.sizes() == torch::IntArrayRef({m, 300}));
    if (m == 0) continue;
    // 7-bit inputs, 8-bit weights: errors of a few percent of the largest output (the bound by the
    // scales is checked above).
    CHECK((y - reference(x)).abs().max().item<double>() < 0.05 * reference(x).abs().max().item<double>());
    CHECK_FALSE(torch::allclose(y, reference(x), 1e-5, 1e-5));
  }
  auto wide = torch::randn({7, 96});
  auto x = wide.narrow(1, 48, 48);
  CHECK((packed(x) - reference(x)).abs().max().item<double>() < 0.05 * reference(x).abs().max().item<double>());
  // Each row is quantised on its own: a row's result does not depend on the rows beside it.
  auto rows = torch::randn({9, 48});
  auto together = packed(rows);
  for (int64_t r = 0; r < 9; ++r) CHECK(torch::equal(together[r], packed(rows.narrow(0, r, 1))[0]));
  std::vector<torch::Tensor> outputs(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    threads.emplace_back([&, i] {
      at::set_num_threads(1);
      for (int r = 0; r < 30; ++r) outputs[i] = packed(rows);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& o : outputs) CHECK(torch::equal(o, together));
}

namespace {

Seq2Seq small_model(RnnType rnn, DecoderStyle style) {
  torch::manual_seed(4);
  return test::eval_model(test::styled_config(24, 12, 24, rnn, style), 40, 60);
}

// The hypothesis' log-probability from the same int8 step model, fed its tokens one sentence at a
// time: what beam search scored over many rows must be what the model gives the tokens alone.
double rescore(Seq2SeqStepModel& step_model, const torch::Tensor& src, const torch::Tensor& len,
               const Hypothesis& hyp) {
  auto state = step_model.start(src, len);
  std::vector<int64_t> out = hyp.tokens;
  if (hyp.finished) out.push_back(step_model.eos_id());
  auto prev = torch::full({1}, step_model.bos_id(), torch::kLong);
  double total = 0;
  for (const auto token : out) {
    auto logits = step_model.step(prev, *state, false).logits;
    total += logits.log_softmax(-1)[0][token].item<double>();
    prev = torch::full({1}, token, torch::kLong);
  }
  return total;
}

}  // namespace

TEST_CASE("int8 decoding: close to fp32, and beam scores equal the int8 model's rescoring", "[int8][model]") {
  for (const RnnType rnn : {RnnType::lstm, RnnType::gru}) {
    for (const DecoderStyle style : {DecoderStyle::luong, DecoderStyle::bahdanau, DecoderStyle::conditional}) {
      SECTION(name_string(rnn) + " " + name_string(style)) {
        auto model = small_model(rnn, style);
        torch::NoGradGuard no_grad;
        Seq2SeqStepModel fp32(model, DecodePrecision::fp32, true), int8(model, DecodePrecision::int8, true), int8_unpacked(model, DecodePrecision::int8, false);
        REQUIRE(int8.packed());
        REQUIRE(int8_unpacked.packed());  // int8 has its own packed weights
        auto src = torch::randint(4, 40, {3, 6}, torch::kLong);
        auto len = torch::tensor({6, 4, 2}, torch::kLong);
        auto a = fp32.start(src, len), b = int8.start(src, len);
        auto prev = torch::full({3}, model->vocab().bos_id, torch::kLong);
        for (int t = 0; t < 4; ++t) {
          auto la = fp32.step(prev, *a, false).logits, lb = int8.step(prev, *b, false).logits;
          REQUIRE_FALSE(torch::equal(la, lb));  // it does run in int8
          REQUIRE((la.log_softmax(-1) - lb.log_softmax(-1)).abs().max().item<double>() < 0.05);
          prev = la.argmax(1);
        }
        SearchOptions options;
        options.beam_size = 4;
        options.n_best = 4;
        options.length_penalty = 0.0;
        auto beams = beam_search(int8, src, len, options);
        for (int64_t s = 0; s < 3; ++s) {
          const auto one_src = src.narrow(0, s, 1).narrow(1, 0, len[s].item<int64_t>());
          for (const auto& hyp : beams[s]) {
            INFO("sentence " << s);
            CHECK(hyp.log_prob == Approx(rescore(int8, one_src, len.narrow(0, s, 1), hyp)).margin(1e-4));
          }
        }
      }
    }
  }
}
