#include "train/loss.h"

#include <algorithm>

namespace attnmt {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct ChunkedLoss {
  torch::Tensor loss;      // scalar fp32: smoothed loss summed over the rows
  torch::Tensor nll;       // [N] -log p(y) per row
  torch::Tensor grad_h, grad_w, grad_b;  // d loss / d (rows of hidden, W, b), when asked for
};

// rows [N, H] (real target positions only), y [N]. Per chunk of rows, with x = logits:
//   lse = max + log sum exp(x - max);  nll = lse - x_y;  smooth = lse - mean(x)
// and, when asked for, with p = softmax(x) and g = p - (1 - eps) onehot(y) - eps / V:
//   grad_h = g W,  grad_W = g^T h,  grad_b = sum_rows g.
// The [n, V] passes are kept few: exp(x - max) is formed in place of the logits and normalised
// only inside the products (diag(1/s) p W and p^T diag(1/s) h); mean(x) is h mean_v(W) + mean(b);
// the onehot and eps / V parts of g are rank-one corrections added outside.
ChunkedLoss chunked_loss(const torch::Tensor& rows, const torch::Tensor& weight, const torch::Tensor& bias,
                         const torch::Tensor& y, double eps, bool with_grad, bool bf16, int64_t chunk_rows) {
  const int64_t N = rows.size(0), V = weight.size(0);
  const auto dtype = weight.scalar_type();
  const auto gemm_dtype = bf16 ? torch::kBFloat16 : dtype;
  const auto w = weight.to(gemm_dtype);
  const auto h_all = rows.to(gemm_dtype);
  const auto h_exact = rows.to(dtype);
  torch::Tensor w_mean, b_mean, w_sum;
  if (eps > 0) {
    w_mean = weight.mean(0);  // [H]
    b_mean = bias.mean();
  }
  ChunkedLoss r;
  r.loss = torch::zeros({}, weight.options());
  r.nll = torch::empty({N}, weight.options());
  if (with_grad) {
    r.grad_h = torch::empty({N, rows.size(1)}, weight.options());
    r.grad_w = torch::zeros_like(weight);
    r.grad_b = torch::zeros_like(bias);
    w_sum = weight.sum(0);  // [H]
  }
  for (int64_t start = 0; start < N; start += chunk_rows) {
    const int64_t n = std::min(chunk_rows, N - start);
    const auto h = h_all.narrow(0, start, n), hx = h_exact.narrow(0, start, n);
    const auto target = y.narrow(0, start, n);
    auto x = bf16 ? torch::mm(h, w.t()).to(dtype).add_(bias) : torch::addmm(bias, h, w.t());  // [n, V]
    const auto x_y = x.gather(1, target.unsqueeze(1)).squeeze(1);                              // [n]
    const auto max = x.amax(1, /*keepdim=*/true);                                              // [n, 1]
    auto p = x.sub_(max).exp_();                                   // exp(x - max), in place of x
    const auto sum = p.sum(1, /*keepdim=*/true);                   // [n, 1]
    const auto lse = (max + sum.log()).squeeze(1);                 // [n]
    const auto nll = lse - x_y;
    r.nll.narrow(0, start, n).copy_(nll);
    auto loss = (1.0 - eps) * nll.sum();
    if (eps > 0) loss = loss + eps * (lse - torch::mv(hx, w_mean) - b_mean).sum();
    r.loss.add_(loss);
    if (!with_grad) continue;
    const auto inv_sum = sum.reciprocal();  // [n, 1]: softmax = p * inv_sum
    const auto pg = p.to(gemm_dtype);
    // softmax part
    auto grad_h = torch::mm(pg, w).to(dtype).mul_(inv_sum);                                    // [n, H]
    r.grad_w.add_(torch::mm(pg.t(), (hx * inv_sum).to(gemm_dtype)).to(dtype));                // [V, H]
    r.grad_b.add_(torch::mm(inv_sum.t().to(gemm_dtype), pg).to(dtype).squeeze(0));             // [V]
    // - (1 - eps) onehot(y)
    grad_h.sub_(weight.index_select(0, target), 1.0 - eps);
    r.grad_w.index_add_(0, target, hx * -(1.0 - eps));
    r.grad_b.index_add_(0, target, torch::full({n}, -(1.0 - eps), bias.options()));
    // - eps / V everywhere
    if (eps > 0) {
      const double c = eps / static_cast<double>(V);
      grad_h.sub_(w_sum.unsqueeze(0), c);
      r.grad_w.sub_(hx.sum(0).unsqueeze(0), c);
      r.grad_b.sub_(c * static_cast<double>(n));
    }
    r.grad_h.narrow(0, start, n).copy_(grad_h);
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
