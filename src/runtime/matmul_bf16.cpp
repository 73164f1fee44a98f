#include "runtime/matmul_bf16.h"

#include <ATen/ATen.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "runtime/autocast.h"

#include "build_features.h"
#ifdef ATTNMT_WITH_DNNL
#include "runtime/dnnl_engine.h"
#endif

namespace attnmt {

#ifdef ATTNMT_WITH_DNNL
namespace {

struct Kernel {
  dnnl::matmul::primitive_desc desc;
  dnnl::matmul primitive;
};

// Shapes, strides, bias and accumulation: a kernel is JIT-compiled once per key, not per call.
using Key = std::array<int64_t, 10>;
constexpr size_t kMaxKernels = 512;

std::shared_ptr<const Kernel> make_kernel(const Key& key) {
  using dnnl::memory;
  const auto m = key[0], k = key[1], n = key[2];
  memory::desc a({m, k}, memory::data_type::bf16, memory::dims{key[3], key[4]});
  memory::desc b({k, n}, memory::data_type::bf16, memory::dims{key[5], key[6]});
  memory::desc c({m, n}, memory::data_type::f32, memory::dims{key[7], 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (key[9] != 0) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  auto desc = key[8] != 0
                  ? dnnl::matmul::primitive_desc(
                        dnnl::matmul::desc(a, b, memory::desc({1, n}, memory::data_type::f32, memory::format_tag::ab), c),
                        attr, dnnl_cpu_engine())
                  : dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, dnnl_cpu_engine());
  return std::make_shared<const Kernel>(Kernel{desc, dnnl::matmul(desc)});
}

}  // namespace
#endif

bool matmul_bf16_f32(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias, const at::Tensor& c,
                     bool accumulate) {
#ifdef ATTNMT_WITH_DNNL
  if (!a.is_cpu() || !b.is_cpu() || !c.is_cpu() || a.dim() != 2 || b.dim() != 2 || c.dim() != 2 ||
      a.scalar_type() != at::kBFloat16 || b.scalar_type() != at::kBFloat16 || c.scalar_type() != at::kFloat ||
      a.size(1) != b.size(0) || c.size(0) != a.size(0) || c.size(1) != b.size(1) || c.stride(1) != 1) {
    return false;
  }
  if (bias.defined() && (!bias.is_cpu() || bias.scalar_type() != at::kFloat || bias.numel() != c.size(1))) return false;
  if (a.numel() == 0 || c.numel() == 0) {
    if (!accumulate) c.zero_();
    if (bias.defined() && c.numel() > 0) c.add_(bias);
    return true;
  }
  const Key key{a.size(0), a.size(1), b.size(1), a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), bias.defined() ? 1 : 0, accumulate ? 1 : 0};
  // One cache for the process (a primitive may run in several threads at once: the scratchpad is
  // the caller's). Training's replica threads start afresh each update, so a cache per thread
  // would build its kernels again every update.
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Kernel>> kernels;
  std::shared_ptr<const Kernel> kernel;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kernels.find(key);
    if (it != kernels.end()) kernel = it->second;
  }
  if (!kernel) {
    try {
      kernel = make_kernel(key);
    } catch (const dnnl::error&) {
      return false;  // no kernel for this CPU and type (bf16 wants AVX-512)
    }
    std::lock_guard<std::mutex> lock(mutex);
    // Row counts follow the batches' lengths: bounded, like oneDNN's own cache (1,024 primitives),
    // so that a long run does not keep every shape it met (kernels in use stay alive).
    if (kernels.size() >= kMaxKernels) kernels.clear();
    kernel = kernels.emplace(key, kernel).first->second;
  }
  const auto& desc = kernel->desc;
  auto& engine = dnnl_cpu_engine();
  const auto bias_f32 = bias.defined() ? bias.contiguous() : at::Tensor();
  auto scratch = at::empty({static_cast<int64_t>(desc.scratchpad_desc().get_size())}, c.options().dtype(at::kByte));
  using dnnl::memory;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(desc.src_desc(), engine, a.data_ptr())},
                                       {DNNL_ARG_WEIGHTS, memory(desc.weights_desc(), engine, b.data_ptr())},
                                       {DNNL_ARG_DST, memory(desc.dst_desc(), engine, c.data_ptr())},
                                       {DNNL_ARG_SCRATCHPAD, memory(desc.scratchpad_desc(), engine, scratch.data_ptr())}};
  if (bias_f32.defined()) args.emplace(DNNL_ARG_BIAS, memory(desc.bias_desc(), engine, bias_f32.data_ptr()));
  thread_local dnnl::stream stream(engine);
  kernel->primitive.execute(stream, args);
  stream.wait();
  return true;
#else
  (void)a, (void)b, (void)bias, (void)c, (void)accumulate;
  return false;
#endif
}

void matmul_into(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias, const at::Tensor& c,
                 bool accumulate) {
  auto& out = const_cast<at::Tensor&>(c);  // written in place, as the _out operators do
  if (a.scalar_type() == at::kBFloat16) {
    if (matmul_bf16_f32(a, b, bias, c, accumulate)) return;
    auto product = at::mm(a, b).to(c.scalar_type());
    if (bias.defined()) product.add_(bias);
    accumulate ? out.add_(product) : out.copy_(product);
  } else if (accumulate) {
    out.addmm_(a, b);
    if (bias.defined()) out.add_(bias);
  } else if (bias.defined()) {
    at::addmm_out(out, bias, a, b);
  } else {
    at::mm_out(out, a, b);
  }
}

bool cpu_autocast_bf16() {
  return cpu_autocast_enabled() && cpu_autocast_dtype() == at::kBFloat16;
}

}  // namespace attnmt
