// Decoding with a vocabulary shortlist (decode.shortlist): the step model's logits are the full
// model's at the shortlist's tokens, search maps columns back to tokens, and a shortlist of the
// whole vocabulary changes nothing.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <set>

#include "data/lexicon.h"
#include "data/tokenizer.h"
#include "decoding/search.h"
#include "decoding/seq2seq_step_model.h"
#include "model/seq2seq.h"
#include "runtime/packed_linear.h"
#include "util/error.h"
#include "small_models.h"

using namespace attnmt;

namespace {

Seq2Seq small_model(VocabSizes& vocab) {
  torch::manual_seed(5);
  auto config = test::sized_config(24, 12, 24);
  config.attention.type = "luong_general";
  vocab.src = 40;
  vocab.tgt = 200;
  return test::eval_model(config, vocab.src, vocab.tgt);
}

// Source id s translates to target (s % 7) + 10 only; nothing is frequent.
std::shared_ptr<const Lexicon> narrow_lexicon() {
  std::vector<std::vector<Lexicon::Translation>> rows(40);
  for (int s = 0; s < 40; ++s) rows[static_cast<size_t>(s)] = {{(s % 7) + 10, 1.0f}};
  return std::make_shared<const Lexicon>(Lexicon::from_rows(40, 200, {}, rows));
}

}  // namespace

TEST_CASE("shortlist: logits are the full model's at the shortlist's tokens, search emits only those",
          "[shortlist][model]") {
  VocabSizes vocab;
  auto model = small_model(vocab);
  torch::NoGradGuard no_grad;
  for (const bool packed : {false, true}) {
    INFO("packed weights " << packed);
    Seq2SeqStepModel full(model, DecodePrecision::fp32, packed), listed(model, DecodePrecision::fp32, packed);
    listed.use_shortlist(narrow_lexicon(), /*first=*/0, /*best=*/1);
    auto src = torch::tensor({{4, 5, 11, 3}, {8, 9, 3, 0}}, torch::kLong);
    auto len = torch::tensor({4, 3}, torch::kLong);
    auto a = full.start(src, len), b = listed.start(src, len);
    auto prev = torch::full({2}, vocab.bos_id, torch::kLong);
    auto ra = full.step(prev, *a, false), rb = listed.step(prev, *b, false);
    REQUIRE(rb.vocabulary.defined());
    // source ids 0 (padding), 3, 4, 5, 8, 9, 11 give 10, 13, 14, 15, 11, 12, 14; eos 3, unk 1; then
    // rounded up to 64 rows with the lowest unused ids (nothing is frequent)
    const std::set<int64_t> core = {1, 3, 10, 11, 12, 13, 14, 15};
    std::vector<int64_t> cols(rb.vocabulary.data_ptr<int64_t>(), rb.vocabulary.data_ptr<int64_t>() + rb.vocabulary.numel());
    CHECK(cols.size() == 64);
    for (auto id : core) CHECK(std::count(cols.begin(), cols.end(), id) == 1);
    CHECK(cols.back() == 63);  // the core ids are all below 64: the list is 0..63
    CHECK(torch::allclose(rb.logits, ra.logits.index_select(1, rb.vocabulary), 1e-4, 1e-4));
    const std::set<int64_t> allowed(cols.begin(), cols.end());
    for (const int beam : {1, 4}) {
      SearchOptions options;
      options.beam_size = beam;
      for (const auto& nbest : search(listed, src, len, options)) {
        for (auto tok : nbest[0].tokens) CHECK(allowed.count(tok) == 1);
      }
    }
  }
}

TEST_CASE("shortlist: search maps columns back to token ids", "[shortlist][search]") {
  // A model that scores columns, with a vocabulary that is not the identity: the best column
  // is 1, token 7; then column 0, token eos.
  struct Listed : StepModel {
    struct State : SearchState {
      void index_select(const torch::Tensor&) override {}
    };
    int steps = 0;
    std::unique_ptr<SearchState> start(const torch::Tensor&, const torch::Tensor&) override {
      return std::make_unique<State>();
    }
    StepResult step(const torch::Tensor& prev, SearchState&, bool) override {
      StepResult r;
      const int64_t n = prev.size(0);
      r.logits = steps++ == 0 ? torch::tensor({0.0f, 5.0f, 1.0f}).repeat({n, 1}) : torch::tensor({5.0f, 0.0f, 1.0f}).repeat({n, 1});
      r.vocabulary = torch::tensor({3, 7, 9}, torch::kLong);
      return r;
    }
    int64_t bos_id() const override { return 2; }
    int64_t eos_id() const override { return 3; }
    torch::Device device() const override { return torch::kCPU; }
  };
  auto src = torch::tensor({{5, 3}}, torch::kLong);
  auto len = torch::tensor({2}, torch::kLong);
  SearchOptions options;
  options.beam_size = 1;
  Listed greedy_model;
  auto g = greedy_search(greedy_model, src, len, options);
  CHECK(g[0][0].tokens == std::vector<int64_t>{7});
  CHECK(g[0][0].finished);
  options.beam_size = 2;
  Listed beam_model;
  auto b = beam_search(beam_model, src, len, options);
  CHECK(b[0][0].tokens == std::vector<int64_t>{7});
  CHECK(b[0][0].finished);
}

TEST_CASE("shortlist: the whole vocabulary decodes exactly as no shortlist", "[shortlist][model]") {
  VocabSizes vocab;
  auto model = small_model(vocab);
  torch::NoGradGuard no_grad;
  auto lex = std::make_shared<Lexicon>(*narrow_lexicon());
  for (int f = 0; f < 200; ++f) lex->frequent.push_back(f);
  Seq2SeqStepModel full(model, DecodePrecision::fp32, true), listed(model, DecodePrecision::fp32, true);
  listed.use_shortlist(lex, /*first=*/200, /*best=*/0);
  auto src = torch::randint(4, 40, {3, 6}, torch::kLong);
  auto len = torch::tensor({6, 4, 2}, torch::kLong);
  for (const int beam : {1, 3}) {
    SearchOptions options;
    options.beam_size = beam;
    auto ha = search(full, src, len, options), hb = search(listed, src, len, options);
    for (int64_t s = 0; s < 3; ++s) {
      CHECK(ha[s][0].tokens == hb[s][0].tokens);
      CHECK(ha[s][0].score == Approx(hb[s][0].score).margin(1e-5));
    }
  }
}

TEST_CASE("shortlist: a lexicon for other vocabularies is refused", "[shortlist]") {
  VocabSizes vocab;
  auto model = small_model(vocab);
  Seq2SeqStepModel m(model);
  auto lex = std::make_shared<Lexicon>(*narrow_lexicon());
  lex->tgt_vocab = 201;
  CHECK_THROWS_AS(m.use_shortlist(lex, 10, 10), InputError);
}
