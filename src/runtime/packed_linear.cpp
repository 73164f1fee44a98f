#include "runtime/packed_linear.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <mutex>
#include <unordered_map>

#include "runtime/int8_gemm.h"

#include "build_features.h"
#ifdef ATTNMT_WITH_DNNL
#include "runtime/dnnl_engine.h"
#endif

namespace attnmt {

struct PackedLinear::Impl {
  at::Tensor weight, bias;  // the fallback's operands (and the shapes)
  std::unique_ptr<const Int8Matrix> int8;  // decode.precision: int8
#ifdef ATTNMT_WITH_DNNL
  bool use_dnnl = false;
  dnnl::memory::data_type src_type = dnnl::memory::data_type::f32;
  dnnl::memory::desc weights_desc;
  dnnl::memory packed_weights;
  at::Tensor bias_f32;  // [N] contiguous fp32, or undefined
  mutable std::mutex mutex;
  // One primitive per row count: a decoder step's rows change as sentences finish.
  struct Kernel {
    dnnl::matmul::primitive_desc desc;
    dnnl::matmul primitive;
  };
  mutable std::unordered_map<int64_t, std::shared_ptr<const Kernel>> kernels;

  dnnl::matmul::primitive_desc make_desc(int64_t m, const dnnl::memory::desc& weights) const {
    using dnnl::memory;
    const auto k = weight.size(1), n = weight.size(0);
    memory::desc src({m, k}, src_type, memory::format_tag::ab);
    memory::desc dst({m, n}, memory::data_type::f32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per call: concurrent use is safe
    if (bias_f32.defined()) {
      memory::desc b({1, n}, memory::data_type::f32, memory::format_tag::ab);
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, b, dst), attr, dnnl_cpu_engine());
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, weights, dst), attr, dnnl_cpu_engine());
  }
  std::shared_ptr<const Kernel> kernel_for(int64_t m) const {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = kernels.find(m);
      if (it != kernels.end()) return it->second;
    }
    auto desc = make_desc(m, weights_desc);  // JIT-compiles a kernel (slow): outside the lock
    auto kernel = std::make_shared<const Kernel>(Kernel{desc, dnnl::matmul(desc)});
    std::lock_guard<std::mutex> lock(mutex);
    return kernels.emplace(m, std::move(kernel)).first->second;
  }
#endif
};

PackedLinear::PackedLinear(const at::Tensor& weight, const at::Tensor& bias, ProductPrecision precision)
    : impl_(std::make_unique<Impl>()) {
  impl_->weight = weight.detach();
  if (bias.defined()) impl_->bias = bias.detach();
  if (!weight.is_cpu() || weight.scalar_type() != at::kFloat || weight.dim() != 2) return;
  if (precision == ProductPrecision::kInt8) {
    const auto w = impl_->weight.contiguous();
    const auto b = bias.defined() ? impl_->bias.to(at::kFloat).contiguous() : at::Tensor();
    impl_->int8 = std::make_unique<const Int8Matrix>(w.data_ptr<float>(), b.defined() ? b.data_ptr<float>() : nullptr,
                                                    w.size(0), w.size(1));
    return;
  }
  const bool bf16 = precision == ProductPrecision::kBf16;
#ifdef ATTNMT_WITH_DNNL
  using dnnl::memory;
  const auto n = weight.size(0), k = weight.size(1);
  impl_->src_type = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  if (bias.defined()) impl_->bias_f32 = bias.detach().to(at::kFloat).contiguous();
  // The layout oneDNN prefers for 64 rows (a decoder batch); other row counts reuse it (checked:
  // the same brgemm kernel is chosen for 1 to 1,024 rows).
  try {
    memory::desc any({k, n}, impl_->src_type, memory::format_tag::any);
    impl_->weights_desc = impl_->make_desc(64, any).weights_desc();
    auto w = weight.detach().contiguous();
    memory user({{k, n}, memory::data_type::f32, memory::format_tag::ba}, dnnl_cpu_engine(), w.data_ptr());
    impl_->packed_weights = memory(impl_->weights_desc, dnnl_cpu_engine());
    dnnl::stream stream(dnnl_cpu_engine());
    dnnl::reorder(user, impl_->packed_weights).execute(stream, user, impl_->packed_weights);
    stream.wait();
    impl_->use_dnnl = true;
  } catch (const dnnl::error&) {
    // No oneDNN kernel for this CPU and type (bf16 wants AVX-512): LibTorch's fp32 products.
    impl_->use_dnnl = false;
  }
#else
  (void)bf16;
#endif
}

PackedLinear::PackedLinear(PackedLinear&&) noexcept = default;
PackedLinear& PackedLinear::operator=(PackedLinear&&) noexcept = default;
PackedLinear::~PackedLinear() = default;

bool PackedLinear::int8() const { return impl_->int8 != nullptr; }

bool PackedLinear::packed() const {
  if (impl_->int8) return true;
#ifdef ATTNMT_WITH_DNNL
  return impl_->use_dnnl;
#else
  return false;
#endif
}

namespace {

at::Tensor int8_product(const Int8Matrix& w, const at::Tensor& x, Int8Kernel kernel) {
  const auto m = x.size(0), n = w.rows();
  if (m == 0) return at::empty({m, n}, x.options().dtype(at::kFloat));
  TORCH_CHECK(x.size(1) == w.cols(), "PackedLinear: input has ", x.size(1), " columns, weight ", w.cols());
  const auto input = x.to(at::kFloat).contiguous();
  thread_local Int8Rows buffer;  // reused: a decoder step makes a dozen of these products
  const Int8Rows& rows = buffer;  // (the worker threads below read the caller's)
  w.quantize(input.data_ptr<float>(), m, buffer, kernel);
  if (Int8Matrix::multiply_whole(kernel, m)) {
    // oneDNN threads it on this thread's team. Room for its rounded-up rows: where the row length
    // is its own (n a multiple of 16), it writes its sums into the output, dequantised in place.
    const int64_t room = n % Int8Matrix::kBlock == 0 ? Int8Matrix::product_rows(kernel, m) : m;
    auto out = at::empty({room, n}, x.options().dtype(at::kFloat));
    w.multiply(rows, 0, w.blocks(), out.data_ptr<float>(), n, kernel, room);
    return room == m ? out : out.narrow(0, 0, m);
  }
  auto out = at::empty({m, n}, x.options().dtype(at::kFloat));
  // Column blocks over the calling thread's team, in chunks of at least ~64K multiply-adds
  // (a beam's few rows by a small weight is not worth waking another thread for).
  const int64_t block_work = m * Int8Matrix::kBlock * w.cols();
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, block_work));
  float* y = out.data_ptr<float>();
  at::parallel_for(0, w.blocks(), grain,
                   [&](int64_t begin, int64_t end) { w.multiply(rows, begin, end, y, n, kernel); });
  return out;
}

}  // namespace

at::Tensor PackedLinear::operator()(const at::Tensor& x) const {
  const auto& im = *impl_;
  if (im.int8 && x.is_cpu() && x.dim() == 2) return int8_product(*im.int8, x, Int8Matrix::kernel_in_use());
#ifdef ATTNMT_WITH_DNNL
  if (im.use_dnnl && x.is_cpu() && x.scalar_type() == at::kFloat && x.dim() == 2) {
    using dnnl::memory;
    const auto m = x.size(0);
    if (m == 0) return at::empty({0, im.weight.size(0)}, x.options());
    TORCH_CHECK(x.size(1) == im.weight.size(1), "PackedLinear: input has ", x.size(1), " columns, weight ",
                im.weight.size(1));
    const int64_t rows = dnnl_row_count(m);  // rounded up: a kernel per row count
    auto kernel = im.kernel_for(rows);
    const auto* desc = &kernel->desc;
    const auto src_dtype = im.src_type == memory::data_type::bf16 ? at::kBFloat16 : at::kFloat;
    at::Tensor src;
    if (rows == m) {
      src = x.to(src_dtype).contiguous();
    } else {
      src = at::empty({rows, x.size(1)}, x.options().dtype(src_dtype));
      src.narrow(0, 0, m).copy_(x);
      src.narrow(0, m, rows - m).zero_();
    }
    auto out = at::empty({rows, im.weight.size(0)}, x.options());
    auto scratch = at::empty({static_cast<int64_t>(desc->scratchpad_desc().get_size())}, x.options().dtype(at::kByte));
    auto& engine = dnnl_cpu_engine();
    memory src_m(desc->src_desc(), engine, src.data_ptr());
    memory dst_m(desc->dst_desc(), engine, out.data_ptr());
    memory scratch_m(desc->scratchpad_desc(), engine, scratch.data_ptr());
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_m},
                                         {DNNL_ARG_WEIGHTS, im.packed_weights},
                                         {DNNL_ARG_DST, dst_m},
                                         {DNNL_ARG_SCRATCHPAD, scratch_m}};
    if (im.bias_f32.defined()) args.emplace(DNNL_ARG_BIAS, memory(desc->bias_desc(), engine, im.bias_f32.data_ptr()));
    thread_local dnnl::stream stream(engine);
    kernel->primitive.execute(stream, args);
    stream.wait();
    return rows == m ? out : out.narrow(0, 0, m);
  }
#endif
  return im.bias.defined() ? at::addmm(im.bias, x, im.weight.t()) : at::mm(x, im.weight.t());
}

at::Tensor PackedLinear::int8_with(const at::Tensor& x, Int8Kernel kernel) const {
  TORCH_CHECK(impl_->int8 && x.is_cpu() && x.dim() == 2, "PackedLinear::int8_with: an int8 weight and a CPU matrix");
  return int8_product(*impl_->int8, x, kernel);
}

bool packed_linear_available() {
#ifdef ATTNMT_WITH_DNNL
  return true;
#else
  return false;
#endif
}

}  // namespace attnmt
