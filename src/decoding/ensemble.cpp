#include "decoding/ensemble.h"

#include <limits>
#include <numeric>
#include <stdexcept>

namespace attnmt {

namespace {

// The members' states, moved together.
class EnsembleState : public SearchState {
 public:
  std::vector<std::unique_ptr<SearchState>> members;
  void index_select(const torch::Tensor& index) override {
    for (auto& m : members) m->index_select(index);
  }
  void reorder_beams(const torch::Tensor& index) override {
    for (auto& m : members) m->reorder_beams(index);
  }
  void expand_beams(const torch::Tensor& index, int64_t beam_size) override {
    for (auto& m : members) m->expand_beams(index, beam_size);
  }
};

}  // namespace

EnsembleStepModel::EnsembleStepModel(std::vector<StepModel*> members, std::vector<double> weights,
                                     int64_t target_vocab_size)
    : members_(std::move(members)), weights_(std::move(weights)), vocab_size_(target_vocab_size) {
  if (members_.empty() || members_.size() != weights_.size()) {
    throw std::invalid_argument("EnsembleStepModel: one weight per member, at least one member");
  }
  const double total = std::accumulate(weights_.begin(), weights_.end(), 0.0);
  for (auto& w : weights_) {
    if (!(w > 0)) throw std::invalid_argument("EnsembleStepModel: weights must be > 0");
    w /= total;
  }
}

std::unique_ptr<SearchState> EnsembleStepModel::start(const torch::Tensor& src, const torch::Tensor& lengths) {
  auto state = std::make_unique<EnsembleState>();
  for (auto* m : members_) state->members.push_back(m->start(src, lengths));
  return state;
}

bool EnsembleStepModel::merges_states() const {
  for (const auto* m : members_) {
    if (!m->merges_states()) return false;
  }
  return true;
}

void EnsembleStepModel::merge(SearchState& into, SearchState& from) {
  auto& a = static_cast<EnsembleState&>(into);
  auto& b = static_cast<EnsembleState&>(from);
  for (size_t i = 0; i < members_.size(); ++i) members_[i]->merge(*a.members[i], *b.members[i]);
}

StepResult EnsembleStepModel::step(const torch::Tensor& prev_tokens, SearchState& state, bool want_attention) {
  auto& s = static_cast<EnsembleState&>(state);
  StepResult out;
  out.log_probs = true;
  for (size_t i = 0; i < members_.size(); ++i) {
    auto r = members_[i]->step(prev_tokens, *s.members[i], want_attention && i == 0);
    auto lp = r.logits.to(torch::kFloat);
    if (!r.log_probs) lp = lp.log_softmax(-1);
    if (r.vocabulary.defined()) {  // a shortlist: its columns into the full vocabulary, -inf elsewhere
      auto full = torch::full({lp.size(0), vocab_size_}, -std::numeric_limits<float>::infinity(), lp.options());
      full.index_copy_(1, r.vocabulary.to(lp.device()), lp);
      lp = full;
    }
    lp.mul_(weights_[i]);
    out.logits = i == 0 ? lp : out.logits.add_(lp);
    if (i == 0) out.attention = r.attention;
  }
  return out;
}

}  // namespace attnmt
