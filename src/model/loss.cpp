#include "model/loss.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <mutex>
#include <type_traits>
#include <vector>

#include "runtime/matmul_bf16.h"
#include "runtime/softmax_rows.h"

namespace attnmt {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct ChunkedLoss {
  torch::Tensor loss;      // scalar fp32: smoothed loss summed over the rows
  torch::Tensor nll;       // [N] -log p(y) per row
  torch::Tensor grad_h, grad_w, grad_b;  // d loss / d (rows of hidden, W, b), when asked for
};

// rows [N, H] (real target positions only), y [N]. Per chunk of rows: logits x = h W^T + b, one
// pass over them (softmax_rows: the loss terms and g), then grad_h = g W, grad_W += g^T h,
// grad_b += sum_rows g. bf16: h, W and g in bfloat16, the products through oneDNN with fp32
// results (runtime/matmul_bf16.h), the softmax in fp32; rows are padded to a multiple of 16 with
// zeros, so that the products see few shapes.
ChunkedLoss chunked_loss(const torch::Tensor& rows, const torch::Tensor& weight, const torch::Tensor& bias,
                         const torch::Tensor& y, double eps, bool with_grad, bool bf16, int64_t chunk_rows) {
  const int64_t N = rows.size(0), H = rows.size(1), V = weight.size(0);
  const auto dtype = weight.scalar_type();
  const auto gemm_dtype = bf16 ? torch::kBFloat16 : dtype;
  const int64_t padded = bf16 ? (N + 15) / 16 * 16 : N;
  const auto w = weight.to(gemm_dtype);
  auto h_all = rows.to(gemm_dtype);
  if (padded > N) h_all = torch::cat({h_all, torch::zeros({padded - N, H}, h_all.options())});
  const auto y_all = y.contiguous();
  ChunkedLoss r;
  auto nll = torch::empty({N}, weight.options()), smooth = torch::empty({N}, weight.options());
  torch::Tensor grad_h, grad_w, grad_b;
  if (with_grad) {
    grad_h = torch::empty({padded, H}, weight.options());
    grad_w = torch::zeros_like(weight);
    grad_b = torch::zeros_like(bias);
  }
  auto logits = torch::empty({std::min(chunk_rows, padded), V}, weight.options());
  auto g_buffer = with_grad ? torch::empty({std::min(chunk_rows, padded), V}, w.options()) : torch::Tensor();
  const auto bias_c = bias.contiguous();
  for (int64_t start = 0; start < padded; start += chunk_rows) {
    const int64_t n = std::min(chunk_rows, padded - start), real = std::max<int64_t>(0, std::min(n, N - start));
    const auto h = h_all.narrow(0, start, n);
    auto x = logits.narrow(0, 0, n);
    matmul_into(h, w.t(), bias_c, x, /*accumulate=*/false);
    auto g = with_grad ? g_buffer.narrow(0, 0, n) : torch::Tensor();
    if (with_grad && real < n) g.narrow(0, real, n - real).zero_();  // padding rows: no gradient
    if (x.is_cpu()) {
      AT_DISPATCH_FLOATING_TYPES(dtype, "softmax_rows", [&] {
        using G = std::conditional_t<std::is_same_v<scalar_t, float>, uint16_t, scalar_t>;
        TORCH_CHECK((!bf16 || std::is_same_v<scalar_t, float>), "output_layer_loss: bf16 products need fp32 weights");
        auto* xp = x.data_ptr<scalar_t>();
        const auto* yp = y_all.data_ptr<int64_t>() + start;
        auto* nllp = nll.data_ptr<scalar_t>() + start;
        auto* smoothp = smooth.data_ptr<scalar_t>() + start;
        const auto e = static_cast<scalar_t>(eps);
        std::mutex mutex;
        at::parallel_for(0, real, 16, [&](int64_t begin, int64_t end) {
          if (!with_grad) {
            softmax_rows<scalar_t, scalar_t>(xp, yp, begin, end, V, e, nllp, smoothp, nullptr, nullptr);
            return;
          }
          // The bias's gradient: a sum per task, added under the lock.
          std::vector<scalar_t> colsum(static_cast<size_t>(V), 0);
          if (bf16) {
            auto* gp = reinterpret_cast<G*>(g.data_ptr());
            softmax_rows<scalar_t, G>(xp, yp, begin, end, V, e, nllp, smoothp, gp, colsum.data());
          } else {
            softmax_rows<scalar_t, scalar_t>(xp, yp, begin, end, V, e, nllp, smoothp, g.data_ptr<scalar_t>(),
                                             colsum.data());
          }
          std::lock_guard<std::mutex> lock(mutex);
          auto* b = grad_b.data_ptr<scalar_t>();
          for (int64_t v = 0; v < V; ++v) b[v] += colsum[static_cast<size_t>(v)];
        });
      });
    } else {
      // Other devices: the same quantities from LibTorch's operators.
      const auto xr = x.narrow(0, 0, real), yr = y_all.narrow(0, start, real);
      const auto lse = torch::logsumexp(xr, 1);
      nll.narrow(0, start, real).copy_(lse - xr.gather(1, yr.unsqueeze(1)).squeeze(1));
      smooth.narrow(0, start, real).copy_(lse - xr.mean(1));
      if (with_grad) {
        auto d = torch::softmax(xr, 1).sub_(eps / static_cast<double>(V));
        d.scatter_add_(1, yr.unsqueeze(1), torch::full({real, 1}, -(1.0 - eps), d.options()));
        grad_b.add_(d.sum(0));
        g.narrow(0, 0, real).copy_(d);
      }
    }
    if (!with_grad) continue;
    auto gh = grad_h.narrow(0, start, n);
    matmul_into(g, w, torch::Tensor(), gh, /*accumulate=*/false);
    matmul_into(g.t(), h, torch::Tensor(), grad_w, /*accumulate=*/true);
  }
  r.loss = ((1.0 - eps) * nll.sum() + eps * smooth.sum()).to(dtype);
  r.nll = nll;
  if (with_grad) {
    r.grad_h = grad_h.narrow(0, 0, N);
    r.grad_w = grad_w;
    r.grad_b = grad_b;
  }
  return r;
}

struct OutputLayerLoss : torch::autograd::Function<OutputLayerLoss> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& rows, const torch::Tensor& weight,
                               const torch::Tensor& bias, const torch::Tensor& y, double eps, bool bf16,
                               int64_t chunk_rows) {
    auto r = chunked_loss(rows, weight, bias, y, eps, /*with_grad=*/true, bf16, chunk_rows);
    ctx->saved_data["grad_h"] = r.grad_h.to(rows.scalar_type());
    ctx->saved_data["grad_w"] = r.grad_w;
    ctx->saved_data["grad_b"] = r.grad_b;
    ctx->mark_non_differentiable({r.nll});
    return {r.loss, r.nll};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto& g = grads[0];  // d objective / d loss (a scalar)
    return {ctx->saved_data["grad_h"].toTensor() * g, ctx->saved_data["grad_w"].toTensor() * g,
            ctx->saved_data["grad_b"].toTensor() * g, torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

LossResult output_layer_loss(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& bias,
                             const torch::Tensor& target, int64_t pad_id, double label_smoothing, bool bf16,
                             int64_t chunk_rows) {
  const int64_t B = hidden.size(0), T = hidden.size(1), H = hidden.size(2);
  const auto positions = target.reshape({-1}).ne(pad_id).nonzero().squeeze(1);  // real target positions
  const auto rows = hidden.reshape({B * T, H}).index_select(0, positions);
  const auto y = target.reshape({-1}).index_select(0, positions);
  const bool with_grad = torch::GradMode::is_enabled() &&
                         (hidden.requires_grad() || weight.requires_grad() || bias.requires_grad());
  torch::Tensor loss, nll;
  if (with_grad) {
    auto out = OutputLayerLoss::apply(rows, weight, bias, y, label_smoothing, bf16, chunk_rows);
    loss = out[0];
    nll = out[1];
  } else {
    auto r = chunked_loss(rows, weight, bias, y, label_smoothing, /*with_grad=*/false, bf16, chunk_rows);
    loss = r.loss;
    nll = r.nll;
  }
  LossResult result;
  result.loss = loss;
  result.nll_sum = nll.sum().item<double>();
  result.tokens = positions.size(0);
  result.sentence_nll = torch::zeros({B}, nll.options()).index_add_(0, positions.div(T, "floor"), nll.detach());
  return result;
}

}  // namespace attnmt
