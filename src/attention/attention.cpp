#include "attention/attention.h"

#include "attention/inference_products.h"

#include <algorithm>
#include <cstring>

namespace attnmt {

namespace {
// constant_pad_nd's padding that appends `rows` along dimension 1 of a `dims`-dimensional tensor
// (pairs from the last dimension backwards).
std::vector<int64_t> pad_dim1(int64_t dims, int64_t rows) {
  std::vector<int64_t> pad(static_cast<size_t>(2 * (dims - 1)), 0);
  pad[static_cast<size_t>(2 * (dims - 2) + 1)] = rows;
  return pad;
}
}  // namespace

namespace {
torch::Tensor select_defined(const torch::Tensor& t, const torch::Tensor& index) {
  return t.defined() ? t.index_select(0, index) : t;
}
}  // namespace

AttentionMemory AttentionMemory::index_select(const torch::Tensor& index) const {
  AttentionMemory out;
  out.values = select_defined(values, index);
  // keys often alias values: keep the alias instead of copying twice
  out.keys = keys.defined() && keys.is_same(values) ? out.values : select_defined(keys, index);
  out.mask = select_defined(mask, index);
  out.lengths = select_defined(lengths, index);
  out.extra.reserve(extra.size());
  for (const auto& t : extra) out.extra.push_back(select_defined(t, index));
  out.group = group;
  return out;
}

void AttentionMemory::keep_rows(const std::vector<int64_t>& rows) {
  // Moving rows down in place is right only when each goes to an index at or below its own and
  // none is read after it is overwritten: rows strictly increasing. Any other order copies.
  bool increasing = true;
  for (size_t i = 1; i < rows.size(); ++i) increasing = increasing && rows[i - 1] < rows[i];
  std::vector<torch::Tensor*> fields{&values, &keys, &mask, &lengths};
  for (auto& t : extra) fields.push_back(&t);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> done;  // (before, after), for aliases
  torch::Tensor index;
  for (auto* field : fields) {
    auto& t = *field;
    if (!t.defined()) continue;
    const auto same = std::find_if(done.begin(), done.end(), [&](const auto& d) { return d.first.is_same(t); });
    if (same != done.end()) {
      t = same->second;
      continue;
    }
    const auto before = t;
    // Handles to this tensor: `before`, and each field that is it (keys often alias values).
    const auto handles = 1 + std::count_if(fields.begin(), fields.end(), [&](auto* f) { return f->is_same(before); });
    const bool alone = increasing && t.device().is_cpu() && t.dim() >= 1 && t.is_contiguous() && t.storage_offset() == 0 &&
                       t.storage().use_count() == 1 && static_cast<int64_t>(t.use_count()) == handles;
    if (alone) {
      const auto row_bytes = static_cast<size_t>(t.numel() / std::max<int64_t>(1, t.size(0))) * t.element_size();
      auto* base = static_cast<char*>(t.data_ptr());
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto from = static_cast<size_t>(rows[i]);
        if (from != i) std::memmove(base + i * row_bytes, base + from * row_bytes, row_bytes);
      }
      // Shrunk in place (resize_ keeps the storage): a narrow() view would keep the old tensor
      // alive as its base outside inference mode, and the next call would have to copy.
      auto sizes = t.sizes().vec();
      sizes[0] = static_cast<int64_t>(rows.size());
      t.resize_(sizes);
    } else {
      if (!index.defined()) index = torch::tensor(rows, torch::kLong);
      t = t.index_select(0, index.to(t.device()));
    }
    done.emplace_back(before, t);
  }
}

torch::Tensor AttentionMemory::row_mask() const {
  // One copy (repeat_interleave builds an index and gathers by it, several operators per step).
  return group == 1 ? mask : mask.unsqueeze(1).expand({mask.size(0), group, mask.size(1)}).reshape({-1, mask.size(1)});
}

AttentionState AttentionState::index_select(const torch::Tensor& index) const {
  AttentionState out;
  out.tensors.reserve(tensors.size());
  for (const auto& t : tensors) out.tensors.push_back(select_defined(t, index));
  return out;
}

AttentionMemory AttentionMemory::cat(const AttentionMemory& a, const AttentionMemory& b) {
  TORCH_CHECK(a.group == b.group, "AttentionMemory::cat: memories of groups ", a.group, " and ", b.group);
  const int64_t a_len = a.values.size(1), b_len = b.values.size(1), length = std::max(a_len, b_len);
  auto padded = [&](const torch::Tensor& t, int64_t own) {
    return own < length && t.dim() >= 2 && t.size(1) == own ? torch::constant_pad_nd(t, pad_dim1(t.dim(), length - own)) : t;
  };
  auto both = [&](const torch::Tensor& x, const torch::Tensor& y) {
    TORCH_CHECK(x.defined() == y.defined(), "AttentionMemory::cat: a tensor defined in one memory only");
    return x.defined() ? torch::cat({padded(x, a_len), padded(y, b_len)}, 0) : torch::Tensor();
  };
  AttentionMemory m;
  m.values = both(a.values, b.values);
  m.keys = a.keys.is_same(a.values) && b.keys.is_same(b.values) ? m.values : both(a.keys, b.keys);
  m.mask = both(a.mask, b.mask);  // constant_pad_nd pads a bool tensor with false
  m.lengths = both(a.lengths, b.lengths);
  TORCH_CHECK(a.extra.size() == b.extra.size(), "AttentionMemory::cat: memories of different variants");
  for (size_t i = 0; i < a.extra.size(); ++i) m.extra.push_back(both(a.extra[i], b.extra[i]));
  m.group = a.group;
  return m;
}

AttentionState Attention::cat_states(const AttentionState& a, int64_t a_length, const AttentionState& b,
                                     int64_t b_length) const {
  const int64_t length = std::max(a_length, b_length);
  const auto x = a_length < length ? grow_state(a, length - a_length) : a;
  const auto y = b_length < length ? grow_state(b, length - b_length) : b;
  TORCH_CHECK(x.tensors.size() == y.tensors.size(), "Attention::cat_states: states of different variants");
  AttentionState out;
  for (size_t i = 0; i < x.tensors.size(); ++i) {
    out.tensors.push_back(x.tensors[i].defined() ? torch::cat({x.tensors[i], y.tensors[i]}, 0) : torch::Tensor());
  }
  return out;
}

AttentionMemory Attention::extend(const AttentionMemory& memory, const torch::Tensor& row) {
  auto added = prepare(row.unsqueeze(1), torch::ones({row.size(0), 1}, row.options().dtype(torch::kBool)));
  if (!memory.values.defined()) return added;
  AttentionMemory m;
  auto append = [](const torch::Tensor& a, const torch::Tensor& b) {
    return a.defined() ? torch::cat({a, b}, 1) : torch::Tensor();
  };
  m.values = append(memory.values, added.values);
  m.keys = memory.keys.is_same(memory.values) ? m.values : append(memory.keys, added.keys);
  m.mask = append(memory.mask, added.mask);
  m.lengths = memory.lengths + 1;
  for (size_t i = 0; i < memory.extra.size(); ++i) m.extra.push_back(append(memory.extra[i], added.extra.at(i)));
  m.group = memory.group;
  return m;
}

AttentionState Attention::grow_state(const AttentionState& state, int64_t rows) const {
  AttentionState grown;
  for (const auto& t : state.tensors) {
    grown.tensors.push_back(t.defined() && t.dim() >= 2 ? torch::constant_pad_nd(t, pad_dim1(t.dim(), rows)) : t);
  }
  return grown;
}

AttentionMemory Attention::prepare(const torch::Tensor& memory, const torch::Tensor& mask) {
  AttentionMemory m;
  m.values = memory;
  m.keys = memory;
  m.mask = mask;
  m.lengths = mask.sum(1);
  return m;
}

torch::Tensor masked_softmax(const torch::Tensor& scores, const torch::Tensor& mask) {
  return scores.masked_fill(mask.logical_not(), -std::numeric_limits<double>::infinity())
      .softmax(-1);
}

torch::Tensor first_position_alignment(const AttentionMemory& memory) {
  auto alpha0 = torch::zeros(memory.mask.sizes(), memory.values.options());
  alpha0.select(1, 0).fill_(1.0);
  return alpha0;
}

torch::Tensor weighted_sum(const torch::Tensor& weights, const torch::Tensor& values, int64_t group,
                           const torch::Tensor& mask) {
  if (inference_products_apply(weights, values)) return inference_weighted_sum(weights, values, group, mask);
  // sum_i [B, S, 1] * [B, S, Dm] -> [B, Dm]. Not bmm: LibTorch's CPU bmm (and its backward)
  // loops over the batch with one small GEMM per sentence, several times slower at these sizes.
  if (group == 1) return (weights.unsqueeze(2) * values).sum(1);
  // [B, G, S, 1] * [B, 1, S, Dm] summed over S -> [B * G, Dm]
  return (weights.view({-1, group, weights.size(1), 1}) * values.unsqueeze(1)).sum(2).flatten(0, 1);
}

}  // namespace attnmt
