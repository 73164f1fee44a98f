#include "runtime/lstm_cell.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "runtime/autocast.h"
#include "runtime/bf16_bits.h"
#include "runtime/fast_exp.h"
#include "runtime/matmul_bf16.h"

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
// hb (else nullptr): h rounded to bfloat16 as well (bits, nearest even), the next products' operand.
template <typename T, bool kSave, bool kBf16Copy = false>
__attribute__((target_clones("avx512f", "avx2", "default"))) void forward_rows(
    const T* __restrict gates, const T* __restrict c_prev, T* __restrict act, T* __restrict c, T* __restrict tc,
    T* __restrict h, int64_t begin, int64_t end, int64_t H, uint16_t* __restrict hb = nullptr) {
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
    // Rounded in a loop of its own: in the loop above, the 16-bit stores stop it vectorising.
    if constexpr (kBf16Copy) {
      for (int64_t j = 0; j < H; ++j) hb[n * H + j] = bf16_bits(static_cast<float>(h[n * H + j]));
    }
  }
}

// Rows [begin, end) of the backward pass: from dh (+ dh2 with kDh2), dc (the gradients of the
// outputs) to the gradients of the pre-activations (dgates, in D: T or uint16_t bfloat16 bits) and
// of c_prev (dc_prev). (Compile-time switches: a branch in the loop stops it vectorising.)
template <typename T, typename D = T, bool kDh2 = false>
__attribute__((target_clones("avx512f", "avx2", "default"))) void backward_rows(
    const T* __restrict act, const T* __restrict c_prev, const T* __restrict tc, const T* __restrict dh,
    const T* __restrict dh2, const T* __restrict dc_out, D* __restrict dgates, T* __restrict dc_prev, int64_t begin,
    int64_t end, int64_t H) {
  constexpr bool kRound = !std::is_same_v<D, T>;  // bfloat16 dgates: via a T row, then rounded
  std::vector<T> row(kRound ? static_cast<size_t>(4 * H) : 0);
  for (int64_t n = begin; n < end; ++n) {
    const T* s = act + n * 4 * H;
    T* d;
    if constexpr (kRound) {
      d = row.data();
    } else {
      d = dgates + n * 4 * H;
    }
    for (int64_t j = 0; j < H; ++j) {
      const int64_t k = n * H + j;
      const T i = s[j], f = s[H + j], g = s[2 * H + j], o = s[3 * H + j], t = tc[k];
      T dhk = dh[k];
      if constexpr (kDh2) dhk += dh2[k];
      const T dc = dc_out[k] + dhk * o * (T(1) - t * t);
      d[j] = dc * g * i * (T(1) - i);
      d[H + j] = dc * c_prev[k] * f * (T(1) - f);
      d[2 * H + j] = dc * i * (T(1) - g * g);
      d[3 * H + j] = dhk * t * o * (T(1) - o);
      dc_prev[k] = dc * f;
    }
    if constexpr (kRound) {
      D* out = dgates + n * 4 * H;
      for (int64_t j = 0; j < 4 * H; ++j) out[j] = bf16_bits(static_cast<float>(d[j]));
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
      at::parallel_for(0, N, grain(H), [&](int64_t b, int64_t e) {
        backward_rows<scalar_t>(a, cp, t, gh, nullptr, gc, dg, dcp, b, e, H);
      });
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

namespace {

struct LstmLayerFunction : torch::autograd::Function<LstmLayerFunction> {
  // x [S, B, In] time-major; returns h [S, B, H].
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w_ih,
                               const torch::Tensor& w_hh, const torch::Tensor& b_ih, const torch::Tensor& b_hh,
                               bool bf16) {
    const int64_t S = x.size(0), B = x.size(1), In = x.size(2), H = w_hh.size(1);
    const auto type = x.scalar_type();
    const auto gemm_type = bf16 ? torch::kBFloat16 : type;
    const auto xg = x.reshape({S * B, In}).to(gemm_type).contiguous();
    const auto wi = w_ih.to(gemm_type), wh = w_hh.to(gemm_type);
    // Every step's input gates in one product, the biases included; step t then adds h_{t-1} W_hh^T.
    auto gates = torch::empty({S * B, 4 * H}, x.options());
    matmul_into(xg, wi.t(), (b_ih + b_hh).to(type), gates, /*accumulate=*/false);
    gates = gates.view({S, B, 4 * H});
    auto h = torch::zeros({S + 1, B, H}, x.options());  // h[0] = 0, h[t + 1] = step t's output
    auto hg = bf16 ? torch::zeros({S + 1, B, H}, x.options().dtype(gemm_type)) : h;
    auto c = torch::zeros({S + 1, B, H}, x.options());
    auto act = torch::empty({S, B, 4 * H}, x.options()), tc = torch::empty({S, B, H}, x.options());
    for (int64_t t = 0; t < S; ++t) {
      matmul_into(hg[t], wh.t(), torch::Tensor(), gates[t], /*accumulate=*/true);
      AT_DISPATCH_FLOATING_TYPES(type, "lstm_layer_forward", [&] {
        const auto* g = gates[t].data_ptr<scalar_t>();
        const auto* cp = c[t].data_ptr<scalar_t>();
        auto* a = act[t].data_ptr<scalar_t>();
        auto *cn = c[t + 1].data_ptr<scalar_t>(), *tn = tc[t].data_ptr<scalar_t>(), *hn = h[t + 1].data_ptr<scalar_t>();
        auto* hb = bf16 ? reinterpret_cast<uint16_t*>(hg[t + 1].data_ptr()) : nullptr;
        at::parallel_for(0, B, grain(H), [&](int64_t b, int64_t e) {
          if (hb) {
            forward_rows<scalar_t, true, true>(g, cp, a, cn, tn, hn, b, e, H, hb);
          } else {
            forward_rows<scalar_t, true>(g, cp, a, cn, tn, hn, b, e, H);
          }
        });
      });
    }
    ctx->save_for_backward({xg, wi, wh, hg, c, act, tc});
    ctx->saved_data["in"] = In;
    return {h.narrow(0, 1, S)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &xg = saved[0], &wi = saved[1], &wh = saved[2], &hg = saved[3], &c = saved[4], &act = saved[5],
               &tc = saved[6];
    const int64_t S = act.size(0), B = act.size(1), H = tc.size(2), In = ctx->saved_data["in"].toInt();
    const auto type = act.scalar_type(), gemm_type = xg.scalar_type();
    const bool bf16 = gemm_type == torch::kBFloat16;
    const auto dout = grads[0].contiguous();  // [S, B, H]
    auto dgates = torch::empty({S, B, 4 * H}, act.options().dtype(gemm_type));
    auto dh = torch::zeros({B, H}, act.options()), dc = torch::zeros({B, H}, act.options());
    auto dc_prev = torch::empty({B, H}, act.options());
    for (int64_t t = S - 1; t >= 0; --t) {
      AT_DISPATCH_FLOATING_TYPES(type, "lstm_layer_backward", [&] {
        const auto *a = act[t].data_ptr<scalar_t>(), *cp = c[t].data_ptr<scalar_t>(), *tt = tc[t].data_ptr<scalar_t>();
        const auto *go = dout[t].data_ptr<scalar_t>(), *gh = dh.data_ptr<scalar_t>(), *gc = dc.data_ptr<scalar_t>();
        auto* dcp = dc_prev.data_ptr<scalar_t>();
        at::parallel_for(0, B, grain(H), [&](int64_t b, int64_t e) {
          if (bf16) {
            auto* dg = reinterpret_cast<uint16_t*>(dgates[t].data_ptr());
            backward_rows<scalar_t, uint16_t, true>(a, cp, tt, go, gh, gc, dg, dcp, b, e, H);
          } else {
            backward_rows<scalar_t, scalar_t, true>(a, cp, tt, go, gh, gc, dgates[t].data_ptr<scalar_t>(), dcp, b, e, H);
          }
        });
      });
      std::swap(dc, dc_prev);
      if (t > 0) matmul_into(dgates[t], wh, torch::Tensor(), dh, /*accumulate=*/false);  // d h_{t-1} = dgates_t W_hh
    }
    // The weights' gradients over all steps at once: [4H, S*B] x [S*B, *].
    const auto dg = dgates.view({S * B, 4 * H});
    auto dw_hh = torch::empty({4 * H, H}, act.options()), dw_ih = torch::empty({4 * H, In}, act.options());
    matmul_into(dg.t(), hg.narrow(0, 0, S).reshape({S * B, H}), torch::Tensor(), dw_hh, /*accumulate=*/false);
    matmul_into(dg.t(), xg, torch::Tensor(), dw_ih, /*accumulate=*/false);
    auto dx = torch::empty({S * B, In}, act.options());
    matmul_into(dg, wi, torch::Tensor(), dx, /*accumulate=*/false);
    auto db = dg.sum(0, /*keepdim=*/false, type);
    return {dx.view({S, B, In}), dw_ih, dw_hh, db, db.clone(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor lstm_layer(const torch::Tensor& x, const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                         const torch::Tensor& b_ih, const torch::Tensor& b_hh) {
  // Under bf16 autocast the products run in bfloat16; autocast itself is off inside, where the
  // products' types are chosen by hand.
  const bool bf16 = cpu_autocast_bf16();
  struct AutocastOff {
    bool was = cpu_autocast_enabled();
    AutocastOff() { set_cpu_autocast_enabled(false); }
    ~AutocastOff() { set_cpu_autocast_enabled(was); }
  } off;
  const auto type = x.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  return LstmLayerFunction::apply(x.transpose(0, 1).to(type), w_ih, w_hh, b_ih, b_hh, bf16)[0].transpose(0, 1);
}

}  // namespace attnmt
