#include "model/lstm_cell.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/fast_exp.h"

namespace attnmt {

namespace {

template <typename T>
inline T fast_sigmoid(T x) {
  return T(1) / (T(1) + fast_exp(-x));
}
template <typename T>
inline T fast_tanh(T x) {
  return T(2) / (T(1) + fast_exp(T(-2) * x)) - T(1);  // 2 sigmoid(2x) - 1
}
inline double fast_tanh(double x) { return std::tanh(x); }

// Rows [begin, end) of the forward pass. kSave (training): act receives (i, f, g, o) and tc
// receives tanh(c), for the backward pass.
template <typename T, bool kSave>
__attribute__((target_clones("avx512f", "avx2", "default"))) void forward_rows(
    const T* __restrict gates, const T* __restrict c_prev, T* __restrict act, T* __restrict c, T* __restrict tc,
    T* __restrict h, int64_t begin, int64_t end, int64_t H) {
  for (int64_t n = begin; n < end; ++n) {
    const T* a = gates + n * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const T i = fast_sigmoid(a[j]), f = fast_sigmoid(a[H + j]);
      const T g = fast_tanh(a[2 * H + j]), o = fast_sigmoid(a[3 * H + j]);
      const T cn = f * c_prev[n * H + j] + i * g;
      const T t = fast_tanh(cn);
      if constexpr (kSave) {
        T* s = act + n * 4 * H;
        s[j] = i;
        s[H + j] = f;
        s[2 * H + j] = g;
        s[3 * H + j] = o;
        tc[n * H + j] = t;
      }
      c[n * H + j] = cn;
      h[n * H + j] = o * t;
    }
  }
}

// Rows [begin, end) of the backward pass: from dh, dc (the gradients of the outputs) to the
// gradients of the pre-activations (dgates) and of c_prev (dc_prev).
template <typename T>
__attribute__((target_clones("avx512f", "avx2", "default"))) void backward_rows(
    const T* __restrict act, const T* __restrict c_prev, const T* __restrict tc, const T* __restrict dh,
    const T* __restrict dc_out, T* __restrict dgates, T* __restrict dc_prev, int64_t begin, int64_t end, int64_t H) {
  for (int64_t n = begin; n < end; ++n) {
    const T* s = act + n * 4 * H;
    T* d = dgates + n * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t k = n * H + j;
      const T i = s[j], f = s[H + j], g = s[2 * H + j], o = s[3 * H + j], t = tc[k];
      const T dc = dc_out[k] + dh[k] * o * (T(1) - t * t);
      d[j] = dc * g * i * (T(1) - i);
      d[H + j] = dc * c_prev[k] * f * (T(1) - f);
      d[2 * H + j] = dc * i * (T(1) - g * g);
      d[3 * H + j] = dh[k] * t * o * (T(1) - o);
      dc_prev[k] = dc * f;
    }
  }
}

// Rows per task: enough work to be worth a thread, so small batches stay on one.
int64_t grain(int64_t H) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, H)); }

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct LstmCellFunction : torch::autograd::Function<LstmCellFunction> {
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& gates_in, const torch::Tensor& c_prev_in) {
    const auto gates = gates_in.contiguous(), c_prev = c_prev_in.contiguous();
    const int64_t N = gates.size(0), H = c_prev.size(1);
    auto act = torch::empty_like(gates), c = torch::empty_like(c_prev), tc = torch::empty_like(c_prev),
         h = torch::empty_like(c_prev);
    AT_DISPATCH_FLOATING_TYPES(gates.scalar_type(), "lstm_cell_forward", [&] {
      const auto* g = gates.data_ptr<scalar_t>();
      const auto* cp = c_prev.data_ptr<scalar_t>();
      auto* a = act.data_ptr<scalar_t>();
      auto *cn = c.data_ptr<scalar_t>(), *t = tc.data_ptr<scalar_t>(), *hn = h.data_ptr<scalar_t>();
      at::parallel_for(0, N, grain(H),
                       [&](int64_t b, int64_t e) { forward_rows<scalar_t, true>(g, cp, a, cn, t, hn, b, e, H); });
    });
    ctx->save_for_backward({act, c_prev, tc});
    return {h, c};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &act = saved[0], &c_prev = saved[1], &tc = saved[2];
    // Undefined output gradients (a state nothing used) arrive as zeros (materialised grads).
    const auto dh = grads[0].contiguous(), dc = grads[1].contiguous();
    const int64_t N = act.size(0), H = c_prev.size(1);
    auto dgates = torch::empty_like(act), dc_prev = torch::empty_like(c_prev);
    AT_DISPATCH_FLOATING_TYPES(act.scalar_type(), "lstm_cell_backward", [&] {
      const auto *a = act.data_ptr<scalar_t>(), *cp = c_prev.data_ptr<scalar_t>(), *t = tc.data_ptr<scalar_t>();
      const auto *gh = dh.data_ptr<scalar_t>(), *gc = dc.data_ptr<scalar_t>();
      auto *dg = dgates.data_ptr<scalar_t>(), *dcp = dc_prev.data_ptr<scalar_t>();
      at::parallel_for(0, N, grain(H),
                       [&](int64_t b, int64_t e) { backward_rows<scalar_t>(a, cp, t, gh, gc, dg, dcp, b, e, H); });
    });
    return {dgates, dc_prev};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> lstm_cell_unfused(const torch::Tensor& gates, const torch::Tensor& c_prev) {
  auto chunks = gates.chunk(4, 1);
  auto i = torch::sigmoid(chunks[0]);
  auto f = torch::sigmoid(chunks[1]);
  auto g = torch::tanh(chunks[2]);
  auto o = torch::sigmoid(chunks[3]);
  auto c = torch::addcmul(f * c_prev, i, g);
  return {o * torch::tanh(c), c};
}

std::pair<torch::Tensor, torch::Tensor> lstm_cell(const torch::Tensor& gates_in, const torch::Tensor& c_prev_in) {
  auto fusable = [](const torch::Tensor& t) {
    const auto type = t.scalar_type();
    return t.is_cpu() && t.dim() == 2 && (type == torch::kFloat || type == torch::kDouble || type == torch::kBFloat16);
  };
  if (!fusable(gates_in) || !fusable(c_prev_in) || gates_in.size(1) != 4 * c_prev_in.size(1) ||
      gates_in.size(0) != c_prev_in.size(0)) {
    return lstm_cell_unfused(gates_in, c_prev_in);
  }
  // bf16 gates (products under autocast) are widened: the states are kept in fp32.
  const auto type = gates_in.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  const auto gates = gates_in.to(type), c_prev = c_prev_in.to(type);
  if (torch::GradMode::is_enabled() && (gates.requires_grad() || c_prev.requires_grad())) {
    auto out = LstmCellFunction::apply(gates, c_prev);
    return {out[0], out[1]};
  }
  // Decoding: the forward pass alone, nothing kept for backward.
  const auto g = gates.contiguous(), cp = c_prev.contiguous();
  const int64_t N = g.size(0), H = cp.size(1);
  auto c = torch::empty_like(cp), h = torch::empty_like(cp);
  AT_DISPATCH_FLOATING_TYPES(type, "lstm_cell_inference", [&] {
    const auto *gp = g.data_ptr<scalar_t>(), *cpp = cp.data_ptr<scalar_t>();
    auto *cn = c.data_ptr<scalar_t>(), *hn = h.data_ptr<scalar_t>();
    at::parallel_for(0, N, grain(H), [&](int64_t b, int64_t e) {
      forward_rows<scalar_t, false>(gp, cpp, nullptr, cn, nullptr, hn, b, e, H);
    });
  });
  return {h, c};
}

}  // namespace attnmt
