#include "io/average.h"

#include <torch/torch.h>

#include <map>
#include <sstream>

#include "config/loader.h"
#include "io/model_file.h"
#include "util/error.h"

namespace attnmt {

namespace {

// The model and tokenizer part of a config, as YAML: what must agree for weights to be averaged.
std::string architecture(const Config& c) {
  Config p;
  p.model = c.model;
  p.tokenizer = c.tokenizer;
  return config_to_yaml(p);
}

// The first line of `b` that differs from `a`'s.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream x(a), y(b);
  std::string la, lb;
  while (true) {
    const bool ha = static_cast<bool>(std::getline(x, la)), hb = static_cast<bool>(std::getline(y, lb));
    if (!ha || !hb || la != lb) return hb ? lb : la;
  }
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(' '));
  return s;
}

}  // namespace

void average_model_files(const std::vector<std::string>& inputs, const std::string& output) {
  if (inputs.empty()) throw InputError("average: no model files given");
  torch::NoGradGuard no_grad;
  // Loaded without a shortlist (no lexicon needed); the file keeps its stored config.
  const std::vector<std::string> no_shortlist{"decode.shortlist=false"};
  auto first = load_model(inputs.front(), "", "cpu", no_shortlist);
  const auto first_arch = architecture(first.config);
  std::map<std::string, torch::Tensor> sums;
  auto add = [&](const LoadedModel& m) {
    for (const auto& p : m.model->named_parameters()) {
      auto v = p.value().to(torch::kDouble);
      auto it = sums.find(p.key());
      if (it == sums.end()) sums.emplace(p.key(), v.clone()); else it->second.add_(v);
    }
    for (const auto& b : m.model->named_buffers()) {
      if (!b.value().is_floating_point()) continue;  // counters and masks: the first file's
      auto v = b.value().to(torch::kDouble);
      auto it = sums.find("buffer." + b.key());
      if (it == sums.end()) sums.emplace("buffer." + b.key(), v.clone()); else it->second.add_(v);
    }
  };
  add(first);
  TrainingProgress progress = CheckpointFile(first.checkpoint).header().progress;
  for (size_t i = 1; i < inputs.size(); ++i) {
    auto m = load_model(inputs[i], "", "cpu", no_shortlist);
    const auto arch = architecture(m.config);
    if (arch != first_arch) {
      throw InputError("average: '" + m.checkpoint + "' is another architecture than '" + first.checkpoint + "' (" +
                       trim(first_difference(first_arch, arch)) + ")");
    }
    if (!m.tokenizers.src->same_vocabulary(*first.tokenizers.src) ||
        !m.tokenizers.tgt->same_vocabulary(*first.tokenizers.tgt)) {
      throw InputError("average: '" + m.checkpoint + "' has other tokenizer models than '" + first.checkpoint + "'");
    }
    add(m);
    const auto p = CheckpointFile(m.checkpoint).header().progress;
    if (p.step > progress.step) progress = p;
  }
  const double n = static_cast<double>(inputs.size());
  for (auto& p : first.model->named_parameters()) p.value().copy_(sums.at(p.key()).div(n));
  for (auto& b : first.model->named_buffers()) {
    if (b.value().is_floating_point()) b.value().copy_(sums.at("buffer." + b.key()).div(n));
  }
  CheckpointFile file(first.checkpoint);
  save_checkpoint(output, file.header().config, first.model, nullptr, progress, {first.tokenizers, file.lexicon()});
}

}  // namespace attnmt
