// Attention: the seed's worked example, and properties every registered variant must have.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "attention/inference_products.h"
#include "attention/registry.h"
#include "attention/score.h"
#include "config/loader.h"
#include "util/error.h"

using namespace attnmt;

namespace {

AttentionMemory memory_of(const torch::Tensor& keys, const torch::Tensor& values) {
  AttentionMemory m;
  m.keys = keys;
  m.values = values;
  m.mask = torch::ones({keys.size(0), keys.size(1)}, torch::kBool);
  m.lengths = m.mask.sum(1);
  return m;
}

void require_close(const torch::Tensor& actual, const std::vector<std::vector<double>>& expected, double tol) {
  REQUIRE(actual.size(0) == static_cast<int64_t>(expected.size()));
  auto a = actual.to(torch::kDouble);
  for (size_t i = 0; i < expected.size(); ++i) {
    for (size_t j = 0; j < expected[i].size(); ++j) {
      INFO("element [" << i << "][" << j << "]");
      REQUIRE(a[i][j].item<double>() == Approx(expected[i][j]).margin(tol));
    }
  }
}

}  // namespace

TEST_CASE("dot attention reproduces the seed's worked example", "[attention]") {
  // docs/attention.md, "A worked example to test against" (seed 002).
  auto opts = torch::dtype(torch::kDouble);
  auto query = torch::tensor({1.0, 0.0, 1.0, 2.0, 3.0, 1.0}, opts).view({2, 3});
  auto value = torch::tensor({2.0, 1.0, 1.0, 1.0, 4.0, 2.0}, opts).view({1, 2, 3}).expand({2, 2, 3});
  AttentionConfig config;
  config.type = "luong_dot";
  auto dot = make_attention(config, 3, 3);
  auto& attention = *dot;

  auto out = attention.forward(query, memory_of(value, value), {}, 0);
  require_close(out.weights, {{0.5, 0.5}, {3.3535013e-04, 9.9966465e-01}}, 1e-6);
  require_close(out.context, {{1.5, 2.5, 1.5}, {1.00033535, 3.99899395, 1.99966465}}, 1e-6);

  auto key = torch::tensor({1.0, 2.0, 2.0, 3.0, 1.0, 0.1}, opts).view({1, 2, 3}).expand({2, 2, 3});
  out = attention.forward(query, memory_of(key, value), {}, 0);
  require_close(out.weights, {{0.47502081, 0.52497919}, {0.7109495, 0.2890505}}, 1e-6);
  require_close(out.context, {{1.47502081, 2.57493756, 1.52497919}, {1.7109495, 1.86715149, 1.2890505}}, 1e-6);
}

TEST_CASE("masked_softmax gives exactly zero to padding and sums to one", "[attention]") {
  auto scores = torch::tensor({3.0, -1.0, 50.0, 2.0, 1.0, 0.5}, torch::kDouble).view({2, 3});
  auto mask = torch::tensor({1, 1, 0, 1, 0, 0}, torch::kBool).view({2, 3});
  auto w = masked_softmax(scores, mask);
  REQUIRE(w[0][2].item<double>() == 0.0);
  REQUIRE(w[1][1].item<double>() == 0.0);
  REQUIRE(w[1][2].item<double>() == 0.0);
  REQUIRE(w[1][0].item<double>() == 1.0);
  REQUIRE(w[0][0].item<double>() == Approx(1.0 / (1.0 + std::exp(-4.0))).epsilon(1e-12));
}

TEST_CASE("an unknown attention type lists the valid names", "[attention]") {
  AttentionConfig config;
  config.type = "luong_genral";
  try {
    make_attention(config, 4, 4);
    FAIL("no error");
  } catch (const InputError& e) {
    const std::string msg = e.what();
    REQUIRE(msg.find("luong_genral") != std::string::npos);
    for (const auto& name : attention_names()) REQUIRE(msg.find(name) != std::string::npos);
  }
}

namespace {

constexpr int64_t kB = 3, kS = 6, kD = 8;

struct Fixture {
  std::shared_ptr<Attention> attention;
  torch::Tensor memory, mask, queries;  // queries [steps, B, D]
};

// Small settings so that windows, heads and areas are exercised on S = 6.
AttentionConfig test_config(const std::string& name) {
  AttentionConfig config;
  config.type = name;
  config.window = 2;
  config.heads = 2;
  config.max_area = 2;
  config.chunk_size = 2;      // chunkwise: chunks cut at the sentence's start and end on S = 6
  config.max_positions = 4;   // luong_location: S = 6 exercises the shared tail scores
  config.hard_decode = false; // monotonic: the differentiable expected alignment (hard: own test)
  return config;
}

// Every registered name, plus the coverage option of the additive score.
std::vector<AttentionConfig> all_configs() {
  std::vector<AttentionConfig> configs;
  for (const auto& name : attention_names()) configs.push_back(test_config(name));
  auto coverage = test_config("bahdanau");
  coverage.coverage = true;
  coverage.coverage_loss = 1.0;
  configs.push_back(coverage);
  return configs;
}

std::string label(const AttentionConfig& c) { return c.type + (c.coverage ? "+coverage" : ""); }

// Variants whose weights are not a distribution: local_p (Gaussian-weighted, not renormalised,
// as in the paper), monotonic (expected alignment: the rest is "attend nowhere"), chunkwise and
// milk (their weights sum to the monotonic head's).
bool sums_to_one(const std::string& name) {
  return name != "local_p" && name != "monotonic" && name != "chunkwise" && name != "milk";
}

Fixture make_fixture(const AttentionConfig& config, torch::Dtype dtype, uint64_t seed) {
  torch::manual_seed(seed);
  Fixture f;
  f.attention = make_attention(config, kD, kD);
  f.attention->to(dtype);
  f.attention->eval();  // no noise / sampling: deterministic
  f.memory = torch::randn({kB, kS, kD}, torch::dtype(dtype));
  auto lengths = torch::tensor({kS, int64_t{4}, int64_t{1}}, torch::kLong);
  f.mask = torch::arange(kS).unsqueeze(0) < lengths.unsqueeze(1);
  f.queries = torch::randn({3, kB, kD}, torch::dtype(dtype));
  return f;
}

// Runs all steps; returns (sum of contexts weighted by fixed coefficients, weights of each step).
std::pair<torch::Tensor, std::vector<torch::Tensor>> run_steps(Fixture& f, const torch::Tensor& memory,
                                                               const torch::Tensor& queries) {
  auto mem = f.attention->prepare(memory, f.mask);
  auto state = f.attention->initial_state(mem);
  auto coeff = torch::linspace(-1.0, 1.0, kB * f.attention->context_size(), memory.options())
                   .view({kB, f.attention->context_size()});
  torch::Tensor total = torch::zeros({}, memory.options());
  std::vector<torch::Tensor> weights;
  for (int64_t t = 0; t < queries.size(0); ++t) {
    auto out = f.attention->forward(queries[t], mem, state, t);
    state = out.state;
    total = total + (out.context * coeff).sum();
    weights.push_back(out.weights);
  }
  return {total, weights};
}

}  // namespace

TEST_CASE("every registered attention: shapes, normalisation, exact masking", "[attention]") {
  for (const auto& config : all_configs()) {
    SECTION(label(config)) {
      auto f = make_fixture(config, torch::kFloat, 7);
      auto [total, weights] = run_steps(f, f.memory, f.queries);
      for (const auto& w : weights) {
        REQUIRE(w.sizes() == torch::IntArrayRef({kB, kS}));
        REQUIRE(w.masked_select(f.mask.logical_not()).abs().sum().item<double>() == 0.0);
        REQUIRE(w.min().item<double>() >= 0.0);
        auto sums = w.sum(1);
        for (int64_t b = 0; b < kB; ++b) {
          if (sums_to_one(config.type)) {
            REQUIRE(sums[b].item<double>() == Approx(1.0).margin(1e-5));
          } else {
            REQUIRE(sums[b].item<double>() <= 1.0 + 1e-5);
            REQUIRE(sums[b].item<double>() > 0.0);
          }
        }
      }
      REQUIRE(std::isfinite(total.item<double>()));
    }
  }
}

TEST_CASE("every registered attention: finite-difference gradients in double", "[attention][gradcheck]") {
  for (const auto& config : all_configs()) {
    if (config.type == "hard") continue;  // argmax / sampling: learns by REINFORCE (its own test)
    SECTION(label(config)) {
      auto f = make_fixture(config, torch::kDouble, 11);
      auto memory = f.memory.clone().requires_grad_(true);
      auto queries = f.queries.clone().requires_grad_(true);
      auto [total, weights] = run_steps(f, memory, queries);
      total.backward();
      const double h = 1e-6;
      auto check = [&](torch::Tensor& x, const torch::Tensor& grad, const std::string& what) {
        auto flat = x.detach().view({-1});
        const int64_t n = flat.numel();
        for (int64_t k = 0; k < n; k += std::max<int64_t>(1, n / 17)) {
          const double orig = flat[k].item<double>();
          flat[k] = orig + h;
          auto plus = run_steps(f, memory.detach(), queries.detach()).first.item<double>();
          flat[k] = orig - h;
          auto minus = run_steps(f, memory.detach(), queries.detach()).first.item<double>();
          flat[k] = orig;
          const double numeric = (plus - minus) / (2 * h);
          INFO(what << " element " << k);
          REQUIRE(grad.view({-1})[k].item<double>() == Approx(numeric).margin(1e-6).epsilon(1e-5));
        }
      };
      torch::NoGradGuard no_grad;
      // static ignores the queries: an undefined gradient is a zero one.
      auto grad_of = [](const torch::Tensor& x) { return x.grad().defined() ? x.grad() : torch::zeros_like(x); };
      check(memory, grad_of(memory), "memory");
      check(queries, grad_of(queries), "query");
      for (auto& p : f.attention->named_parameters()) {
        INFO("parameter " << p.key());
        auto param = p.value();
        REQUIRE(param.grad().defined());
        check(param, param.grad(), p.key());
      }
    }
  }
}

TEST_CASE("every registered attention: per-step state follows the beams (index_select)", "[attention]") {
  // Beam search expands, reorders and prunes rows with index_select on the memory and the state;
  // the result must equal running the selected rows from the start.
  for (const auto& config : all_configs()) {
    SECTION(label(config)) {
      auto f = make_fixture(config, torch::kDouble, 5);
      torch::NoGradGuard no_grad;
      auto mem = f.attention->prepare(f.memory, f.mask);
      auto state = f.attention->initial_state(mem);
      std::vector<torch::Tensor> reference;
      auto s = state;
      for (int64_t t = 0; t < f.queries.size(0); ++t) {
        auto out = f.attention->forward(f.queries[t], mem, s, t);
        s = out.state;
        reference.push_back(out.weights);
      }
      const auto index = torch::tensor({int64_t{2}, int64_t{0}, int64_t{0}, int64_t{1}});
      auto out0 = f.attention->forward(f.queries[0], mem, state, 0);
      auto selected_mem = mem.index_select(index);
      auto selected_state = out0.state.index_select(index);
      for (int64_t t = 1; t < f.queries.size(0); ++t) {
        auto out = f.attention->forward(f.queries[t].index_select(0, index), selected_mem, selected_state, t);
        selected_state = out.state;
        REQUIRE(torch::allclose(out.weights, reference[t].index_select(0, index), 1e-12, 1e-12));
      }
    }
  }
}

TEST_CASE("keep_rows moves a memory's own rows in place and copies what others hold", "[attention]") {
  // Beam search drops finished sentences (rows in increasing order): the result must equal
  // index_select, tensors only this memory holds are moved within their storage (no allocation),
  // and a tensor someone else holds is left as it was.
  torch::manual_seed(11);
  const std::vector<int64_t> rows{1, 3, 4};
  const auto index = torch::tensor(rows, torch::kLong);
  AttentionMemory m;
  m.values = torch::randn({6, 5, 4});
  m.keys = m.values;  // the usual alias
  m.mask = torch::rand({6, 5}) > 0.3;
  m.lengths = m.mask.sum(1);
  const auto held = torch::randn({6, 3});  // another holder keeps a handle to this one
  m.extra = {held, torch::arange(12, torch::kLong).view({6, 2})};
  const auto want = m.index_select(index);
  const auto held_before = held.clone();
  const void* values_storage = m.values.storage().data();
  m.keep_rows(rows);
  REQUIRE(torch::equal(m.values, want.values));
  REQUIRE(m.keys.is_same(m.values));
  REQUIRE(torch::equal(m.mask, want.mask));
  REQUIRE(torch::equal(m.lengths, want.lengths));
  REQUIRE(torch::equal(m.extra[0], want.extra[0]));
  REQUIRE(torch::equal(m.extra[1], want.extra[1]));
  REQUIRE(m.values.storage().data() == values_storage);  // moved in place
  REQUIRE(torch::equal(held, held_before));              // copied, not moved
  REQUIRE(m.extra[0].storage().data() != held.storage().data());
  // Again on what the first call left: the same, still in place.
  const auto want2 = m.index_select(torch::tensor(std::vector<int64_t>{0, 2}, torch::kLong));
  m.keep_rows({0, 2});
  REQUIRE(torch::equal(m.values, want2.values));
  REQUIRE(torch::equal(m.extra[1], want2.extra[1]));
  REQUIRE(m.values.storage().data() == values_storage);
  // Rows out of order are copied, as index_select does.
  const auto want3 = m.index_select(torch::tensor(std::vector<int64_t>{1, 0}, torch::kLong));
  m.keep_rows({1, 0});
  REQUIRE(torch::equal(m.values, want3.values));
  REQUIRE(torch::equal(m.mask, want3.mask));
  REQUIRE(torch::equal(m.extra[1], want3.extra[1]));
  REQUIRE(m.values.storage().data() != values_storage);
}

TEST_CASE("decoding's product loops equal the tensor expressions", "[attention]") {
  // inference_products.h: scores and contexts for rows that read memory row n / group, against the
  // same products in double on a memory expanded to one row per query row. D = 37 and 512
  // exercise the loops' tail and their whole lanes.
  torch::manual_seed(11);
  for (int64_t D : {int64_t{37}, int64_t{512}}) {
    for (int64_t group : {int64_t{1}, int64_t{4}}) {
      INFO("D " << D << ", group " << group);
      const int64_t B = 3, S = 7, N = B * group;
      auto keys = torch::randn({B, S, D});
      auto query = torch::randn({N, D});
      auto weights = torch::rand({N, S});
      auto rows = torch::arange(B).repeat_interleave(group);
      auto expanded = keys.index_select(0, rows).to(torch::kDouble);
      auto want_scores = (expanded * query.to(torch::kDouble).unsqueeze(1)).sum(2);
      auto want_context = (weights.to(torch::kDouble).unsqueeze(2) * expanded).sum(1);
      torch::InferenceMode inference;
      REQUIRE(inference_products_apply(query, keys));
      auto scores = inference_dot_scores(query, keys, group);
      auto context = inference_weighted_sum(weights, keys, group);
      REQUIRE(torch::allclose(scores.to(torch::kDouble), want_scores, 1e-5, 1e-4));
      REQUIRE(torch::allclose(context.to(torch::kDouble), want_context, 1e-5, 1e-4));
      // Non-contiguous operands are read as their values.
      auto strided_query = torch::randn({D, N}).t();
      REQUIRE(torch::allclose(inference_dot_scores(strided_query, keys, group),
                              dot_scores(strided_query.contiguous(), keys.index_select(0, rows)), 1e-5, 1e-4));
    }
  }
  // With the memory's mask, the padding after each row's last attended position is not read: the
  // attended scores and every context bit for bit as without the mask (the weights there are 0),
  // the rest of the scores 0. Padding filled with infinity shows any read of it (0 * inf is NaN).
  // Rows: a prefix mask, one with a hole (read up to its last true position), one all false (read
  // whole, as without the mask).
  for (int64_t group : {int64_t{1}, int64_t{5}}) {
    INFO("masked, group " << group);
    const int64_t B = 3, S = 9, D = 37, N = B * group;
    auto mask = torch::zeros({B, S}, torch::kBool);
    mask[0].slice(0, 0, 4).fill_(true);
    mask[1][0] = true;
    mask[1][6] = true;
    const std::vector<int64_t> read{4, 7, S};
    auto keys = torch::randn({B, S, D});
    for (int64_t b = 0; b < 2; ++b) keys[b].slice(0, read[static_cast<size_t>(b)]).fill_(std::numeric_limits<float>::infinity());
    auto query = torch::randn({N, D});
    auto row_mask = mask.unsqueeze(1).expand({B, group, S}).reshape({N, S});
    torch::InferenceMode inference;
    auto plain_scores = inference_dot_scores(query, keys, group);
    auto masked_scores = inference_dot_scores(query, keys, group, mask);
    for (int64_t n = 0; n < N; ++n) {
      const int64_t r = read[static_cast<size_t>(n / group)];
      REQUIRE(torch::equal(masked_scores[n].slice(0, 0, r), plain_scores[n].slice(0, 0, r)));
      REQUIRE(masked_scores[n].slice(0, r).eq(0).all().item<bool>());
    }
    // Weights as attention makes them (0 where masked); the all-false row's are drawn.
    auto weights = masked_softmax(masked_scores, row_mask);
    weights.slice(0, 2 * group) = torch::rand({group, S});
    auto zeroed = keys.masked_fill(mask.logical_not().unsqueeze(2), 0.0);
    zeroed[2] = keys[2];
    REQUIRE(torch::equal(inference_weighted_sum(weights, keys, group, mask), inference_weighted_sum(weights, zeroed, group)));
  }
  // Where a gradient is wanted, or not in float, the tensor expressions run (autograd sees them).
  auto q = torch::randn({2, 4}, torch::requires_grad());
  REQUIRE_FALSE(inference_products_apply(q, torch::randn({2, 3, 4})));
  REQUIRE_FALSE(inference_products_apply(torch::randn({2, 4}, torch::kDouble), torch::randn({2, 3, 4}, torch::kDouble)));
}

TEST_CASE("attention that shares the memory across beams equals K copies of it", "[attention]") {
  // Beam search keeps one memory row per sentence for its K beams (AttentionMemory::group) where
  // the variant allows it: weights, contexts and state must equal those over K copies, in float
  // (decoding's loops) and in double (the tensor expressions).
  constexpr int64_t K = 3;
  int shared = 0;
  for (const auto& config : all_configs()) {
    for (auto dtype : {torch::kFloat, torch::kDouble}) {
      auto f = make_fixture(config, dtype, 7);
      if (!f.attention->shares_memory_across_beams()) continue;
      INFO(label(config) << (dtype == torch::kFloat ? " float" : " double"));
      ++shared;
      torch::InferenceMode inference;
      auto mem = f.attention->prepare(f.memory, f.mask);
      auto rows = torch::arange(kB).repeat_interleave(K);
      auto copies = mem.index_select(rows);
      auto state_copies = f.attention->initial_state(mem).index_select(rows);
      auto grouped = mem;
      grouped.group = K;
      auto state_grouped = f.attention->initial_state(mem).index_select(rows);
      REQUIRE(torch::equal(grouped.row_mask(), copies.mask));
      const double tol = dtype == torch::kFloat ? 1e-5 : 1e-12;
      for (int64_t t = 0; t < 3; ++t) {
        auto query = torch::randn({kB * K, kD}, torch::dtype(dtype));
        auto want = f.attention->forward(query, copies, state_copies, t);
        auto got = f.attention->forward(query, grouped, state_grouped, t);
        REQUIRE(torch::allclose(got.weights, want.weights, tol, tol));
        REQUIRE(torch::allclose(got.context, want.context, tol, tol));
        state_copies = want.state;
        state_grouped = got.state;
      }
      // Dropping a sentence keeps its group whole: memory row 2 for rows 6..8.
      auto kept = grouped.index_select(torch::tensor({int64_t{2}, int64_t{0}}));
      REQUIRE(kept.group == K);
      REQUIRE(torch::equal(kept.values[0], mem.values[2]));
    }
  }
  REQUIRE(shared >= 2 * 6);  // the global variants (dot, general, scaled dot, concat, bahdanau, +coverage)
}

TEST_CASE("every shipped config loads and builds its attention", "[attention][config]") {
  // configs/**/*.yaml: parsed, validated, and the attention of the model it describes constructed
  // (so a size mismatch or bad option would fail here, not after data preparation).
  namespace fs = std::filesystem;
  int count = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(ATTNMT_SOURCE_DIR) / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    auto config = load_config_file(entry.path().string());
    REQUIRE_NOTHROW(check_attention(config.model));
    ++count;
  }
  REQUIRE(count >= static_cast<int>(attention_names().size()));
}

TEST_CASE("every registered attention has a Multi30k config", "[attention][config]") {
  namespace fs = std::filesystem;
  for (const auto& name : attention_names()) {
    const auto path = fs::path(ATTNMT_SOURCE_DIR) / "configs" / "multi30k_de_en" / (name + ".yaml");
    INFO(path.string());
    REQUIRE(fs::exists(path));
    REQUIRE(load_config_file(path.string()).model.attention.type == name);
  }
}

namespace {

// Every step's weights and the contexts' weighted sum of a fresh fixture of `config` (seeded), in
// training or evaluation mode.
struct Steps {
  torch::Tensor contexts;
  std::vector<torch::Tensor> weights;
};
Steps run_fixture(const AttentionConfig& config, bool training) {
  auto f = make_fixture(config, torch::kFloat, 11);
  f.attention->train(training);
  torch::manual_seed(5);  // the same noise, sampling and dropout masks for both configs compared
  auto [total, weights] = run_steps(f, f.memory, f.queries);
  return {total, weights};
}

bool same(const Steps& a, const Steps& b) {
  if (!torch::equal(a.contexts, b.contexts)) return false;
  for (size_t t = 0; t < a.weights.size(); ++t) {
    if (!torch::equal(a.weights[t], b.weights[t])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("what the registry says a variant supports is what it does", "[attention][registry]") {
  for (const auto& name : attention_names()) {
    SECTION(name) {
      const auto& traits = attention_traits(name);
      auto config = test_config(name);
      // hard_decode: the key changes what the variant decodes exactly where the registry says so.
      auto hard = config;
      hard.hard_decode = true;
      REQUIRE(same(run_fixture(config, false), run_fixture(hard, false)) == !traits.hard_decode);
      // Streaming needs a hard stop.
      if (traits.streams) REQUIRE(traits.hard_decode);
      REQUIRE(attention_streams(hard) == traits.streams);
      REQUIRE_FALSE(attention_streams(config));
      // dropout: drops weights (in the context; the weights shown stay whole) where the registry
      // says so; elsewhere training refuses the key.
      auto dropped = config;
      dropped.dropout = 0.5;
      REQUIRE(same(run_fixture(config, true), run_fixture(dropped, true)) == !traits.dropout);
      ModelConfig model;
      model.encoder.hidden_size = kD / 2;
      model.encoder.bidirectional = true;
      model.decoder.hidden_size = kD;
      model.attention = dropped;
      if (traits.dropout) {
        REQUIRE_NOTHROW(check_attention(model));
      } else {
        REQUIRE_THROWS_WITH(check_attention(model),
                            Catch::Contains("model.attention.dropout: '" + name + "' has no heads' weights to drop"));
      }
      // latency_loss: the head's latency trained where the registry says so, refused elsewhere.
      ModelConfig timed = model;
      timed.attention = config;
      timed.attention.latency_loss = 0.1;
      if (traits.latency) {
        REQUIRE_NOTHROW(check_attention(timed));
      } else {
        REQUIRE_THROWS_WITH(check_attention(timed),
                            Catch::Contains("model.attention.latency_loss: '" + name + "' has no monotonic head") &&
                                Catch::Contains(attention_names_with(&AttentionTraits::latency)));
      }
      // coverage: built where the registry says so, refused (naming the variants that have it) elsewhere.
      auto covered = config;
      covered.coverage = true;
      if (traits.coverage) {
        REQUIRE(make_attention(covered, kD, kD) != nullptr);
      } else {
        REQUIRE_THROWS_WITH(make_attention(covered, kD, kD),
                            Catch::Contains("model.attention.coverage: '" + name + "' has no coverage term") &&
                                Catch::Contains(attention_names_with(&AttentionTraits::coverage)));
      }
    }
  }
}

TEST_CASE("docs/attention.md's table of what each variant supports is the registry's", "[attention][registry][docs]") {
  std::ifstream in(std::string(ATTNMT_SOURCE_DIR) + "/docs/attention.md");
  REQUIRE(in);
  std::map<std::string, std::vector<std::string>> rows;  // type -> its cells
  bool in_section = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("### ", 0) == 0) in_section = line == "### What each variant supports";
    if (!in_section || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    REQUIRE(cells.size() == 5);
    rows[cells[0].substr(1, cells[0].size() - 2)] = cells;
  }
  REQUIRE(rows.size() == attention_names().size());
  for (const auto& name : attention_names()) {
    INFO(name);
    REQUIRE(rows.count(name) == 1);
    const auto& cells = rows[name];
    const auto& traits = attention_traits(name);
    CHECK((cells[1] == "yes") == traits.coverage);
    CHECK((cells[2] == "yes") == traits.dropout);
    CHECK((cells[3] == "yes") == traits.hard_decode);
    CHECK((cells[4].rfind("yes", 0) == 0) == traits.streams);
    CHECK((cells[1] + cells[2] + cells[3] + cells[4]).find_first_not_of(" yes,withhard_decode:true`") == std::string::npos);
  }
}
