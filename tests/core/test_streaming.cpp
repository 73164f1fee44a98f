// Streaming decoding (decoding/streaming.h): the READ/WRITE policy against a scripted step model,
// average lagging by hand, and real models: waiting for the whole source gives greedy search's output.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "decoding/search.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/streaming.h"
#include "data/tokenizer.h"
#include "model/seq2seq.h"
#include "program.h"
#include "small_models.h"

using namespace attnmt;

namespace {

// A copying model with a hand-written head: at step t it attends to position t and writes source
// token x_t; once t reaches the prefix's last real token, its head runs past what was read (no
// weight) -- unless the prefix is the whole sentence, where step n attends to the end of sentence
// and writes it. With `early_eos`, a prefix that is not the whole sentence ends the output at once.
class CopyModel : public StepModel {
 public:
  struct State : SearchState {
    std::vector<int64_t> prefix;  // with eos when complete
    int64_t t = 0;
    void index_select(const torch::Tensor&) override {}
  };
  explicit CopyModel(bool early_eos = false) : early_eos_(early_eos) {}
  std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor& lengths) override {
    auto s = std::make_unique<State>();
    for (int64_t i = 0; i < lengths[0].item<int64_t>(); ++i) s->prefix.push_back(src[0][i].item<int64_t>());
    ++starts;
    return s;
  }
  StepResult step(const torch::Tensor&, SearchState& base, bool want_attention) override {
    auto& s = static_cast<State&>(base);
    const auto S = static_cast<int64_t>(s.prefix.size());
    const bool complete = s.prefix.back() == eos_id();
    StepResult r;
    r.logits = torch::zeros({1, kVocab});
    r.attention = torch::zeros({1, S});
    int64_t token = eos_id();
    if (s.t < S) {
      r.attention[0][s.t] = 1.0;
      token = s.prefix[s.t];
    }
    if (early_eos_ && !complete) token = eos_id();
    r.logits[0][token] = 5.0;
    seen.emplace_back(s.t, complete ? S - 1 : S);
    ++s.t;
    ++steps;
    (void)want_attention;
    return r;
  }
  int64_t bos_id() const override { return 2; }
  int64_t eos_id() const override { return 3; }
  torch::Device device() const override { return torch::kCPU; }
  int64_t starts = 0, steps = 0;
  std::vector<std::pair<int64_t, int64_t>> seen;  // per step: (target position, source tokens visible)
  static constexpr int64_t kVocab = 20;

 private:
  bool early_eos_;
};

}  // namespace

TEST_CASE("average lagging by hand", "[streaming]") {
  // |x| = |y| = 4, g = 2 3 4 4: (2 - 0) + (3 - 1) + (4 - 2), tau = 3 -> 2
  CHECK(average_lagging({2, 3, 4, 4}, 4) == Approx(2.0));
  // waiting for the whole source: tau = 1, AL = |x|
  CHECK(average_lagging({5, 5, 5}, 5) == Approx(5.0));
  // |x| = 4, |y| = 2 (|x|/|y| = 2), never all read: (1 - 0) + (2 - 2), tau = 2 -> 0.5
  CHECK(average_lagging({1, 2}, 4) == Approx(0.5));
  // the ideal wait-1 of equal lengths lags one token
  CHECK(average_lagging({1, 2, 3, 4, 5, 6}, 6) == Approx(1.0));
  CHECK(average_lagging({}, 4) == 0.0);
}

TEST_CASE("streaming: a token is written once the head stops inside what was read", "[streaming]") {
  const std::vector<int64_t> source = {10, 11, 12, 13, 14};
  for (const int lookahead : {0, 1, 2, 10}) {
    CopyModel model;
    StreamingOptions options;
    options.lookahead = lookahead;
    const auto out = stream_sentence(model, source, options);
    INFO("lookahead " << lookahead);
    REQUIRE(out.tokens == source);
    REQUIRE(out.finished);
    // token t (head at t) is written once t + 1 + lookahead tokens are read (all five at most)
    std::vector<int64_t> expected;
    for (int64_t t = 0; t < 5; ++t) expected.push_back(std::min<int64_t>(5, t + 1 + lookahead));
    REQUIRE(out.delays == expected);
    REQUIRE(out.source_tokens == 5);
  }
}

TEST_CASE("wait-k: target token t is decoded from exactly min(k + t - 1, |x|) source tokens", "[streaming]") {
  const std::vector<int64_t> source = {10, 11, 12, 13, 14};
  for (const int k : {1, 2, 3, 5, 10}) {
    CopyModel model;
    StreamingOptions options;
    options.wait_k = k;
    const auto out = stream_sentence(model, source, options);
    INFO("k " << k);
    REQUIRE(out.tokens == source);
    std::vector<int64_t> expected;
    for (int64_t t = 1; t <= 5; ++t) expected.push_back(std::min<int64_t>(5, k + t - 1));
    REQUIRE(out.delays == expected);
    // The step that decided token t (the first at position t; later ones replay it after a read)
    // saw g(t) source tokens, never one more: the attention had nothing right of k + t - 1 to weigh.
    std::vector<int64_t> first_seen(6, -1);
    for (const auto& [t, visible] : model.seen) {
      if (first_seen[static_cast<size_t>(t)] < 0) first_seen[static_cast<size_t>(t)] = visible;
    }
    for (int64_t t = 0; t < 5; ++t) CHECK(first_seen[static_cast<size_t>(t)] == expected[static_cast<size_t>(t)]);
    // A prefix encoding per read: k tokens first, then one per written token until all are read.
    CHECK(model.starts == 1 + (5 - std::min(k, 5)));
  }
}

TEST_CASE("wait-k: an end of sentence before the source ends reads on", "[streaming]") {
  CopyModel model(/*early_eos=*/true);
  StreamingOptions options;
  options.wait_k = 1;
  const auto out = stream_sentence(model, {10, 11, 12}, options);
  REQUIRE(out.tokens == std::vector<int64_t>{10, 11, 12});
  REQUIRE(out.delays == std::vector<int64_t>{3, 3, 3});
}

TEST_CASE("streaming: an end of sentence before the source ends reads on", "[streaming]") {
  CopyModel model(/*early_eos=*/true);
  const auto out = stream_sentence(model, {10, 11, 12}, StreamingOptions());
  REQUIRE(out.tokens == std::vector<int64_t>{10, 11, 12});
  REQUIRE(out.delays == std::vector<int64_t>{3, 3, 3});
  REQUIRE(average_lagging(out.delays, 3) == Approx(3.0));
  REQUIRE(model.starts == 3);  // one encoding per prefix: 1, 2 and 3 tokens
}

TEST_CASE("streaming: the output stops at greedy search's maximum length", "[streaming]") {
  CopyModel model;
  StreamingOptions options;
  options.search.max_length = 2;
  const auto out = stream_sentence(model, {10, 11, 12, 13}, options);
  REQUIRE(out.tokens == std::vector<int64_t>{10, 11});
  REQUIRE_FALSE(out.finished);
}

TEST_CASE("streaming lines: blank lines stay blank, long lines are cut to max_source_tokens", "[streaming]") {
  const auto dir = test::temp_dir("stream_lines");
  TokenizerConfig config;
  config.type = TokenizerType::none;  // a token per word: ids 4.. for w0..w5, inside CopyModel's vocabulary
  config.vocab_size = 10;
  Tokenizer::train({"w0 w1 w2 w3 w4 w5"}, (dir / "w").string(), config, 1);
  auto tokenizer = std::make_shared<Tokenizer>((dir / "w.model").string());
  std::filesystem::remove_all(dir);
  CopyModel model;  // copies the source: the output is the (cut) input
  StreamingOptions options;
  options.workers = 1;
  options.lookahead = 100;
  options.max_source_tokens = 3;
  const auto out = stream_lines(model, {tokenizer, tokenizer}, {"w1 w2", "", " \t ", "w0 w1 w2 w3 w4"}, options);
  REQUIRE(out.size() == 4);
  CHECK(out[0].text == "w1 w2");
  CHECK(out[0].delays == std::vector<int64_t>{2, 2});
  for (const size_t blank : {1, 2}) {
    CHECK(out[blank].text.empty());
    CHECK(out[blank].delays.empty());
    CHECK(out[blank].source_tokens == 0);
  }
  CHECK(out[3].text == "w0 w1 w2");
  CHECK(out[3].source_tokens == 3);
  CHECK(model.starts == 2 + 3);  // one encoding per prefix read; none for the blank lines
}

TEST_CASE("streaming real models: waiting for the whole source equals greedy search", "[streaming]") {
  for (const std::string attention : {"chunkwise", "monotonic"}) {
    for (const bool bidirectional : {true, false}) {
      SECTION(attention + (bidirectional ? ", bidirectional" : ", unidirectional")) {
        torch::manual_seed(41);
        ModelConfig config = test::sized_config(8, 6, 12);
        config.encoder.bidirectional = bidirectional;
        config.encoder.layers = config.decoder.layers = 1;
        config.attention.type = attention;
        config.attention.chunk_size = 2;
        config.attention.score_bias_init = 1.0;  // an untrained head that stops often
        Seq2Seq model = test::eval_model(config, 20, 20);
        Seq2SeqStepModel step_model(model);
        SearchOptions search;
        search.beam_size = 1;
        search.max_length_ratio = 1.5;
        int64_t written_early = 0;
        for (int64_t n : {1, 4, 7}) {
          auto ids = torch::randint(4, 20, {n}, torch::kLong);
          std::vector<int64_t> source(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n);
          auto src = torch::cat({ids, torch::full({1}, step_model.eos_id(), torch::kLong)}).view({1, n + 1});
          const auto greedy = greedy_search(step_model, src, torch::full({1}, n + 1, torch::kLong), search);
          StreamingOptions options;
          options.search = search;
          options.lookahead = static_cast<int>(n);  // never satisfied before the end: waits for everything
          const auto waited = stream_sentence(step_model, source, options);
          INFO("n " << n);
          REQUIRE(waited.tokens == greedy[0][0].tokens);
          REQUIRE(waited.finished == greedy[0][0].finished);
          for (auto d : waited.delays) REQUIRE(d == n);
          options.lookahead = 0;
          const auto streamed = stream_sentence(step_model, source, options);
          for (size_t t = 0; t < streamed.delays.size(); ++t) {
            REQUIRE(streamed.delays[t] >= 1);
            REQUIRE(streamed.delays[t] <= n);
            if (t > 0) REQUIRE(streamed.delays[t] >= streamed.delays[t - 1]);
            written_early += streamed.delays[t] < n;
          }
        }
        CHECK(written_early > 0);  // the policy did write before the end
      }
    }
  }
}

TEST_CASE("wait-k on real models of any attention: k >= |x| equals greedy search", "[streaming]") {
  bool differs = false;  // over all models: wait-1 is not full-sentence decoding
  for (const std::string attention : {"luong_general", "bahdanau"}) {
    for (const bool bidirectional : {true, false}) {
      {
        INFO(attention << (bidirectional ? ", bidirectional" : ", unidirectional"));
        torch::manual_seed(43);
        ModelConfig config = test::sized_config(8, 6, 12);
        config.encoder.bidirectional = bidirectional;
        config.encoder.layers = config.decoder.layers = 1;
        config.attention.type = attention;
        Seq2Seq model = test::eval_model(config, 20, 20);
        Seq2SeqStepModel step_model(model);
        SearchOptions search;
        search.beam_size = 1;
        search.max_length_ratio = 1.5;
        for (int64_t n : {1, 4, 7}) {
          auto ids = torch::randint(4, 20, {n}, torch::kLong);
          std::vector<int64_t> source(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n);
          auto src = torch::cat({ids, torch::full({1}, step_model.eos_id(), torch::kLong)}).view({1, n + 1});
          const auto greedy = greedy_search(step_model, src, torch::full({1}, n + 1, torch::kLong), search);
          StreamingOptions options;
          options.search = search;
          options.wait_k = static_cast<int>(n);
          INFO("n " << n);
          for (const int k : {static_cast<int>(n), static_cast<int>(n) + 3}) {
            options.wait_k = k;
            const auto waited = stream_sentence(step_model, source, options);
            REQUIRE(waited.tokens == greedy[0][0].tokens);
            REQUIRE(waited.finished == greedy[0][0].finished);
            for (auto d : waited.delays) REQUIRE(d == n);
          }
          options.wait_k = 1;
          const auto streamed = stream_sentence(step_model, source, options);
          for (size_t t = 0; t < streamed.delays.size(); ++t) {
            // one read per written token at least (more where an early end of sentence read on)
            REQUIRE(streamed.delays[t] >= std::min<int64_t>(n, 1 + static_cast<int64_t>(t)));
            if (t > 0) REQUIRE(streamed.delays[t] >= std::min<int64_t>(n, streamed.delays[t - 1] + 1));
            REQUIRE(streamed.delays[t] <= n);
          }
          differs = differs || streamed.tokens != greedy[0][0].tokens;
        }
      }
    }
  }
  CHECK(differs);  // wait-1 decodes from prefixes: not the full-sentence output
}
