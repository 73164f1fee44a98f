// The streaming encoder (decoding/streaming.h, model/encoder.h EncoderImpl::step): a unidirectional
// model reads its source a token at a time, and its streamed output (tokens, delays) is the one of
// encoding every prefix again, for wait-k and the hard-attention policy, on tiny models of several
// attention types (input feeding, stacked LSTM and GRU encoders, decoders kept or restarted).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "attention/registry.h"
#include "data/tokenizer.h"
#include "decoding/search.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/streaming.h"
#include "model/seq2seq.h"
#include "small_models.h"

using namespace attnmt;

namespace {

// Forwards to a model and counts what streaming asked of it.
class CountingStepModel : public StepModel {
 public:
  explicit CountingStepModel(StepModel& inner) : inner_(inner) {}
  std::unique_ptr<SearchState> start(const torch::Tensor& src, const torch::Tensor& lengths) override {
    ++starts;
    return inner_.start(src, lengths);
  }
  StepResult step(const torch::Tensor& prev, SearchState& state, bool want_attention) override {
    ++steps;
    return inner_.step(prev, state, want_attention);
  }
  int64_t bos_id() const override { return inner_.bos_id(); }
  int64_t eos_id() const override { return inner_.eos_id(); }
  torch::Device device() const override { return inner_.device(); }
  bool streams_source() const override { return inner_.streams_source(); }
  std::unique_ptr<SearchState> start_stream() override { return inner_.start_stream(); }
  void read(SearchState& state, int64_t token) override {
    ++reads;
    inner_.read(state, token);
  }
  void restart_decoder(SearchState& state) override { inner_.restart_decoder(state); }
  bool keeps_decoder_across_reads() const override { return inner_.keeps_decoder_across_reads(); }
  void advance(const torch::Tensor& prev, SearchState& state) override {
    ++replayed;
    inner_.advance(prev, state);
  }
  int64_t starts = 0, reads = 0, replayed = 0, steps = 0;

 private:
  StepModel& inner_;
};

struct StreamModelCase {
  std::string name;
  ModelConfig config;
};

std::vector<StreamModelCase> unidirectional_models() {
  ModelConfig base = test::sized_config(8, 10, 10);
  base.encoder.bidirectional = false;
  base.encoder.layers = base.decoder.layers = 1;
  std::vector<StreamModelCase> cases;
  auto add = [&](const std::string& name, auto edit) {
    ModelConfig c = base;
    edit(c);
    cases.push_back({name, c});
  };
  add("luong_general, input feeding, 2-layer LSTM encoder, encoder init", [](ModelConfig& c) {
    c.attention.type = "luong_general";
    c.decoder.input_feeding = true;
    c.encoder.layers = c.decoder.layers = 2;
    c.decoder.init = DecoderInit::encoder;
  });
  add("bahdanau, GRU encoder", [](ModelConfig& c) {
    c.attention.type = "bahdanau";
    c.decoder.style = DecoderStyle::bahdanau;
    c.encoder.rnn = RnnType::gru;
  });
  add("multi_head, bridge init", [](ModelConfig& c) {
    c.attention.type = "multi_head";
    c.attention.heads = 2;
  });
  add("area (memory prepared again per read)", [](ModelConfig& c) { c.attention.type = "area"; });
  for (const std::string type : {"monotonic", "chunkwise"}) {
    for (const DecoderInit init : {DecoderInit::zero, DecoderInit::bridge}) {
      add(type + ", " + name_string(init) + " init", [&](ModelConfig& c) {
        c.attention.type = type;
        c.attention.chunk_size = 2;
        c.attention.score_bias_init = 1.0;  // an untrained head that stops often
        c.decoder.init = init;
        c.encoder.layers = 2;
      });
    }
  }
  return cases;
}

// An untrained model ends most outputs at once, and an end of sentence reads on: with eos less
// likely, the policies write before the source ends.
Seq2Seq model_writing_early(const ModelConfig& config) {
  Seq2Seq model = test::eval_model(config, 20, 20);
  torch::NoGradGuard no_grad;
  model->output_bias()[Tokenizer::kEos].fill_(-2.0);
  return model;
}

}  // namespace

TEST_CASE("streaming encoder: a token at a time equals encoding the prefix", "[streaming]") {
  for (const bool packed : {false, true}) {
    torch::manual_seed(7);
    Seq2Seq model = test::eval_model(unidirectional_models()[0].config, 20, 20);
    torch::InferenceMode inference;
    DecodingSeq2Seq decoding(model, packed ? ExecutionMode::packed(ProductPrecision::kFp32) : ExecutionMode::libtorch());
    REQUIRE(model->streams_source());
    const int64_t n = 6;
    auto src = torch::randint(4, 20, {1, n}, torch::kLong);
    EncoderStream stream;
    AttentionMemory memory;
    for (int64_t g = 1; g <= n; ++g) {
      decoding.read_source(src[0].slice(0, g - 1, g), stream, memory);
      const auto full = decoding.encode(src.slice(1, 0, g), torch::full({1}, g, torch::kLong));
      INFO("packed " << packed << ", prefix " << g);
      REQUIRE(memory.values.sizes() == full.memory.values.sizes());
      CHECK(torch::allclose(memory.values, full.memory.values, 1e-6, 1e-6));
      CHECK(torch::allclose(memory.keys, full.memory.keys, 1e-6, 1e-6));
      CHECK(torch::equal(memory.mask, full.memory.mask));
      CHECK(torch::equal(memory.lengths, full.memory.lengths));
      const auto state = model->start_decoder(stream, memory);
      for (size_t l = 0; l < state.rnn.h.size(); ++l) {
        CHECK(torch::allclose(state.rnn.h[l], full.state.rnn.h[l], 1e-6, 1e-6));
        CHECK(torch::allclose(state.rnn.c[l], full.state.rnn.c[l], 1e-6, 1e-6));
      }
    }
  }
}

TEST_CASE("streaming encoder: the incremental path writes what re-encoding every prefix writes", "[streaming]") {
  for (const auto& m : unidirectional_models()) {
    INFO(m.name);
    torch::manual_seed(11);
    Seq2Seq model = model_writing_early(m.config);
    Seq2SeqStepModel step_model(model);
    REQUIRE(step_model.streams_source());
    const bool hard = m.config.attention.type == "monotonic" || m.config.attention.type == "chunkwise";
    CHECK(step_model.keeps_decoder_across_reads() == (hard && m.config.decoder.init == DecoderInit::zero));
    StreamingOptions options;
    options.search.beam_size = 1;
    options.search.max_length_ratio = 1.5;
    std::vector<std::pair<int, int>> policies;  // (wait_k, lookahead)
    for (int k : {1, 2, 3}) policies.emplace_back(k, 0);
    if (hard) policies.insert(policies.end(), {{0, 0}, {0, 1}});
    int64_t early = 0;  // tokens written before the whole source was read
    for (int64_t n : {1, 3, 6, 9}) {
      auto ids = torch::randint(4, 20, {n}, torch::kLong);
      const std::vector<int64_t> source(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n);
      for (const auto& [k, lookahead] : policies) {
        INFO("n " << n << ", wait-k " << k << ", lookahead " << lookahead);
        options.wait_k = k;
        options.lookahead = lookahead;
        options.incremental = false;
        CountingStepModel again(step_model);
        const auto reference = stream_sentence(again, source, options);
        CHECK(again.reads == 0);
        options.incremental = true;
        CountingStepModel streamed(step_model);
        const auto out = stream_sentence(streamed, source, options);
        REQUIRE(out.tokens == reference.tokens);
        REQUIRE(out.delays == reference.delays);
        REQUIRE(out.finished == reference.finished);
        CHECK(streamed.starts == 0);      // never a prefix encoded again
        // every token read once, eos included (up to the last read when cut at the maximum length)
        const int64_t last = out.finished ? n : out.delays.back();
        CHECK(streamed.reads == last + (last == n ? 1 : 0));
        if (step_model.keeps_decoder_across_reads() && k == 0) CHECK(streamed.replayed == 0);
        for (auto d : out.delays) early += d < n;
      }
    }
    CHECK(early > 0);  // the policies did write before the end
  }
}

namespace {

// The models whose whole-sentence memory cut to its first rows is that prefix's memory: a global
// attention without a per-position state, luong_general (input feeding, 2 layers, encoder init) and
// bahdanau (GRU).
std::vector<StreamModelCase> global_attention_models() {
  std::vector<StreamModelCase> global;
  for (const auto& m : unidirectional_models()) {
    if (m.config.attention.type == "luong_general" || m.config.attention.type == "bahdanau") global.push_back(m);
  }
  REQUIRE(global.size() == 2);
  return global;
}

// memory cut to its first g rows: the source x_1..x_g (eos included once g covers it).
AttentionMemory first_rows(const AttentionMemory& memory, int64_t g) {
  REQUIRE(memory.extra.empty());
  AttentionMemory m;
  m.values = memory.values.slice(1, 0, g);
  m.keys = memory.keys.is_same(memory.values) ? m.values : memory.keys.slice(1, 0, g);
  m.mask = memory.mask.slice(1, 0, g);
  m.lengths = torch::full({1}, g, torch::kLong);
  m.group = memory.group;
  return m;
}

// wait-k's prefix policy by its definition, on the whole sentence's memory: the decoder starts from
// the encoded first min(k, |x|) tokens; step t attends to the rows read by then (cut from the whole
// sentence's memory: a unidirectional encoder's prefix states are its own); a token is written and
// one more read, or, at an end of sentence before the source ends, one more read and the same step
// decoded again from the state before it.
StreamedSentence prefix_by_definition(DecodingSeq2Seq& decoding, const std::vector<int64_t>& source, int k,
                                      const SearchOptions& search, int64_t eos, int64_t bos) {
  const auto n = static_cast<int64_t>(source.size());
  std::vector<int64_t> with_eos = source;
  with_eos.push_back(eos);
  auto encode_first = [&](int64_t g) {  // x_1..x_g, eos after the last
    const int64_t rows = g + (g == n ? 1 : 0);
    auto src = torch::tensor(std::vector<int64_t>(with_eos.begin(), with_eos.begin() + rows), torch::kLong).view({1, rows});
    return decoding.encode(src, torch::full({1}, rows, torch::kLong));
  };
  const auto whole = encode_first(n);
  StreamedSentence out;
  out.source_tokens = n;
  const int64_t max_length = max_target_length(n + 1, search);
  int64_t read = std::min<int64_t>(n, k);
  DecoderStepState state = encode_first(read).state;
  int64_t prev = bos, t = 0;
  while (true) {
    const DecoderStepState before = state;
    const auto memory = first_rows(whole.memory, read + (read == n ? 1 : 0));
    const auto logits = decoding.logits(decoding.step_hidden(torch::full({1}, prev, torch::kLong), memory, state, t, nullptr));
    const int64_t token = logits.reshape({-1}).argmax().item<int64_t>();
    if (token == eos) {
      if (read == n) break;
      ++read;
      state = before;
      continue;
    }
    out.tokens.push_back(token);
    out.delays.push_back(read);
    if (static_cast<int64_t>(out.tokens.size()) >= max_length) {
      out.finished = false;
      break;
    }
    prev = token;
    ++t;
    if (read < n) ++read;
  }
  return out;
}

}  // namespace

TEST_CASE("wait-k prefix policy: the decoder kept across reads, each step attending to exactly what was read",
          "[streaming]") {
  for (const auto& m : global_attention_models()) {
    INFO(m.name);
    torch::manual_seed(13);
    Seq2Seq model = model_writing_early(m.config);
    torch::InferenceMode inference;
    DecodingSeq2Seq decoding(model, ExecutionMode::libtorch());
    Seq2SeqStepModel step_model(model);
    StreamingOptions options;
    options.search.beam_size = 1;
    options.search.max_length_ratio = 1.5;
    options.wait_k_policy = WaitKPolicy::prefix;
    int64_t early = 0, differs = 0;
    for (int64_t n : {1, 3, 6, 9}) {
      auto ids = torch::randint(4, 20, {n}, torch::kLong);
      const std::vector<int64_t> source(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n);
      for (int k : {1, 2, 3}) {
        INFO("n " << n << ", wait-" << k);
        options.wait_k = k;
        options.wait_k_policy = WaitKPolicy::prefix;
        CountingStepModel counted(step_model);
        const auto out = stream_sentence(counted, source, options);
        const auto expected = prefix_by_definition(decoding, source, k, options.search, step_model.eos_id(),
                                                   step_model.bos_id());
        REQUIRE(out.tokens == expected.tokens);
        REQUIRE(out.delays == expected.delays);
        REQUIRE(out.finished == expected.finished);
        CHECK(counted.replayed == 0);  // no written token decoded again
        CHECK(counted.starts == 0);
        for (auto d : out.delays) early += d < n;
        options.wait_k_policy = WaitKPolicy::replay;
        differs += stream_sentence(step_model, source, options).tokens != out.tokens;
      }
      // k >= |x|: everything read first, then greedy search on the whole sentence.
      options.wait_k = static_cast<int>(n) + 2;
      options.wait_k_policy = WaitKPolicy::prefix;
      auto src = torch::cat({ids, torch::full({1}, step_model.eos_id(), torch::kLong)}).view({1, n + 1});
      const auto greedy = greedy_search(step_model, src, torch::full({1}, n + 1, torch::kLong), options.search);
      const auto waited = stream_sentence(step_model, source, options);
      CHECK(waited.tokens == greedy[0][0].tokens);
    }
    CHECK(early > 0);    // the policy did write before the end
    CHECK(differs > 0);  // and is not the replay policy
  }
}

TEST_CASE("streaming as the source arrives: any cut into pushes writes what the whole source at once writes",
          "[streaming]") {
  // SentenceStream is what SimulEval's protocol drives in serve (a word's subwords arrive together,
  // run() after each): cut the source into random pushes and compare with one push.
  std::mt19937 rng(5);
  for (const auto& m : unidirectional_models()) {
    INFO(m.name);
    torch::manual_seed(17);
    Seq2Seq model = model_writing_early(m.config);
    Seq2SeqStepModel step_model(model);
    const bool hard = m.config.attention.type == "monotonic" || m.config.attention.type == "chunkwise";
    struct Policy {
      int wait_k, lookahead;
      WaitKPolicy policy;
      bool incremental;
    };
    std::vector<Policy> policies;
    for (int k : {1, 3}) {
      policies.push_back({k, 0, WaitKPolicy::replay, true});
      policies.push_back({k, 0, WaitKPolicy::replay, false});
      policies.push_back({k, 0, WaitKPolicy::prefix, true});
    }
    if (hard) policies.insert(policies.end(), {{0, 0, WaitKPolicy::replay, true}, {0, 1, WaitKPolicy::replay, false}});
    int64_t cut = 0, early = 0, early_cut = 0;
    for (int max_length : {0, 4}) {  // 4: some outputs are cut at the maximum length
      for (int64_t n : {1, 3, 6, 9}) {
        auto ids = torch::randint(4, 20, {n}, torch::kLong);
        const std::vector<int64_t> source(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n);
        for (const auto& p : policies) {
          INFO("n " << n << ", wait-k " << p.wait_k << ", lookahead " << p.lookahead << ", prefix "
                    << (p.policy == WaitKPolicy::prefix) << ", incremental " << p.incremental << ", max_length "
                    << max_length);
          StreamingOptions options;
          options.search.beam_size = 1;
          options.search.max_length_ratio = 1.5;
          options.search.max_length = max_length;
          options.wait_k = p.wait_k;
          options.lookahead = p.lookahead;
          options.wait_k_policy = p.policy;
          options.incremental = p.incremental;
          const auto whole = stream_sentence(step_model, source, options);
          for (int trial = 0; trial < 3; ++trial) {
            SentenceStream stream(step_model, options);
            size_t at = 0;
            while (at < source.size()) {
              const size_t size = std::uniform_int_distribution<size_t>(1, 3)(rng);
              const size_t end = std::min(source.size(), at + size);
              stream.push(std::vector<int64_t>(source.begin() + at, source.begin() + end));
              at = end;
              if (at == source.size()) stream.end_source();
              stream.run();
              // Nothing written from source that has not arrived, and nothing done before the end
              // but a cut at decode.max_length (which more source cannot lift).
              for (auto d : stream.output().delays) REQUIRE(d <= static_cast<int64_t>(at));
              REQUIRE(stream.read() <= static_cast<int64_t>(at));
              if (at < source.size() && stream.done()) {
                REQUIRE(static_cast<int>(stream.output().tokens.size()) == max_length);
                early_cut += 1;
              }
            }
            REQUIRE(stream.done());
            CHECK(stream.output().tokens == whole.tokens);
            CHECK(stream.output().delays == whole.delays);
            CHECK(stream.output().finished == whole.finished);
            CHECK(stream.output().capped == whole.capped);
            CHECK(stream.output().source_tokens == n);
            CHECK_THROWS_WITH(stream.push({5}), Catch::Contains("the source has ended"));
          }
          cut += !whole.finished;
          CHECK(whole.capped == (!whole.finished && max_length > 0 &&
                                 static_cast<int>(whole.tokens.size()) == max_length));
          for (auto d : whole.delays) early += d < n;
        }
      }
    }
    CHECK(cut > 0);        // the maximum length was reached,
    CHECK(early_cut > 0);  // some while the source was still arriving,
    CHECK(early > 0);      // and tokens were written before the end
  }
}

TEST_CASE("streaming as the source arrives: an end told after the last token is read as one more READ",
          "[streaming]") {
  ModelConfig config = unidirectional_models().front().config;
  torch::manual_seed(19);
  Seq2Seq model = model_writing_early(config);
  Seq2SeqStepModel step_model(model);
  StreamingOptions options;
  options.search.beam_size = 1;
  options.wait_k = 2;
  SentenceStream stream(step_model, options);
  stream.push({5, 6, 7, 8});
  stream.run();
  CHECK_FALSE(stream.done());
  CHECK(stream.read() <= 4);
  stream.end_source();
  stream.run();
  CHECK(stream.done());
  CHECK(stream.read() == 4);
}

TEST_CASE("wait-k prefix policy: refused where the source is encoded again", "[streaming]") {
  ModelConfig config = test::sized_config(8, 6, 12);
  config.attention.type = "luong_general";  // bidirectional: every prefix encoded again
  Seq2Seq model = test::eval_model(config, 20, 20);
  Seq2SeqStepModel step_model(model);
  StreamingOptions options;
  options.search.beam_size = 1;
  options.wait_k = 2;
  options.wait_k_policy = WaitKPolicy::prefix;
  REQUIRE_FALSE(step_model.streams_source());
  CHECK_THROWS_WITH(stream_sentence(step_model, {5, 6, 7}, options),
                    Catch::Contains("decode.wait_k_policy prefix: needs a model that reads its source a token at a time"));
}

TEST_CASE("train.wait_k: each teacher-forced step sees what wait-k's prefix policy shows it", "[streaming][train]") {
  for (const auto& m : global_attention_models()) {
    INFO(m.name);
    torch::manual_seed(17);
    Seq2Seq model = test::eval_model(m.config, 20, 20);
    torch::InferenceMode inference;
    DecodingSeq2Seq decoding(model, ExecutionMode::libtorch());
    const int64_t eos = Tokenizer::kEos, bos = Tokenizer::kBos, pad = Tokenizer::kPad;
    // Two sentences in one padded batch: 5 and 2 source tokens, each with its end of sentence.
    const std::vector<std::vector<int64_t>> sources = {{5, 9, 7, 12, 6}, {8, 11}};
    const int64_t S = 6, T = 5;
    auto src = torch::full({2, S}, pad, torch::kLong);
    auto lengths = torch::empty({2}, torch::kLong);
    for (int64_t b = 0; b < 2; ++b) {
      const auto& x = sources[static_cast<size_t>(b)];
      for (size_t i = 0; i < x.size(); ++i) src[b][static_cast<int64_t>(i)] = x[i];
      src[b][static_cast<int64_t>(x.size())] = eos;
      lengths[b] = static_cast<int64_t>(x.size()) + 1;
    }
    auto tgt_in = torch::randint(4, 20, {2, T}, torch::kLong);
    tgt_in.select(1, 0).fill_(bos);
    for (const int64_t k : {1, 2, 4}) {
      INFO("wait-" << k);
      model->set_wait_k(k);
      const auto h = model->hidden_states(src, lengths, tgt_in);  // [2, T, H]
      for (int64_t b = 0; b < 2; ++b) {
        const auto& x = sources[static_cast<size_t>(b)];
        const auto n = static_cast<int64_t>(x.size());
        const int64_t rows_all = n + 1;
        auto whole = decoding.encode(src[b].slice(0, 0, rows_all).view({1, rows_all}), torch::full({1}, rows_all, torch::kLong));
        const int64_t first = k >= n ? rows_all : k;
        DecoderStepState state =
            decoding.encode(src[b].slice(0, 0, first).view({1, first}), torch::full({1}, first, torch::kLong)).state;
        for (int64_t t = 0; t < T; ++t) {
          const int64_t g = std::min(k + t, n);
          const auto memory = first_rows(whole.memory, g == n ? rows_all : g);
          const auto expected = decoding.step_hidden(tgt_in[b].slice(0, t, t + 1), memory, state, t, nullptr);
          INFO("sentence " << b << ", step " << t << ", rows " << (g == n ? rows_all : g));
          CHECK(torch::allclose(h[b][t], expected[0], 1e-5, 1e-5));
        }
      }
    }
    model->set_wait_k(0);  // whole sentences: the steps differ from wait-1's
    const auto whole_sentences = model->hidden_states(src, lengths, tgt_in);
    model->set_wait_k(1);
    CHECK_FALSE(torch::allclose(whole_sentences, model->hidden_states(src, lengths, tgt_in), 1e-5, 1e-5));
  }
  ModelConfig local = test::sized_config(8, 6, 12);
  local.attention.type = "local_p";
  Seq2Seq model = test::eval_model(local, 20, 20);
  CHECK_THROWS_WITH(model->set_wait_k(2), Catch::StartsWith("train.wait_k: needs an attention that weighs every source "
                                                             "position by the memory's mask"));
}

TEST_CASE("streams in batches: wait-k's prefix policy and the hard head's, every sentence streamed as alone",
          "[streaming]") {
  // stream_batch reads the memory whole and masks each row to what its stream has read; a row that
  // reads before it writes (an early end of sentence; a head that stops right of what is read) is
  // taken back to its state before the step. The batch's sentences differ in length, so rows read,
  // redo, finish and are cut at different steps.
  std::vector<StreamModelCase> models = global_attention_models();
  StreamModelCase coverage = models.front();
  coverage.name = "luong_concat with coverage, bridge init";
  coverage.config.attention.type = "luong_concat";
  coverage.config.attention.coverage = true;
  coverage.config.decoder.init = DecoderInit::bridge;
  models.push_back(coverage);
  // Hard heads whose decoder starts from zeros: the head's own policy batches too.
  for (const auto& m : unidirectional_models()) {
    if (m.config.attention.type == "chunkwise" && m.config.decoder.init == DecoderInit::zero) {
      models.push_back(m);
      StreamModelCase milk = m;
      milk.name = "milk, zero init";
      milk.config.attention.type = "milk";
      models.push_back(milk);
    }
    if (m.config.attention.type == "monotonic" && m.config.decoder.init == DecoderInit::zero) models.push_back(m);
  }
  REQUIRE(models.size() == 6);
  for (const auto& m : models) {
    INFO(m.name);
    torch::manual_seed(23);
    Seq2Seq model = model_writing_early(m.config);
    std::vector<std::vector<int64_t>> sources;
    for (int64_t n : {1, 6, 3, 9, 2, 7, 4, 9}) {
      auto ids = torch::randint(4, 20, {n}, torch::kLong);
      sources.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + n);
    }
    int64_t redone = 0, cut = 0, early = 0;
    // (eos's bias, decode.max_length): eos unlikely, outputs cut at 4; then eos about as likely as
    // the rest (an untrained model's logits are close), so that ends come early in some steps
    const std::vector<std::pair<double, int>> rounds = {{-2.0, 0}, {-2.0, 4}, {0.0, 0}, {0.02, 0}, {0.05, 4}, {0.1, 0}};
    const bool hard = attention_streams(m.config.attention);
    // (wait-k, lookahead): wait-k's prefix policy; with k = 0, the hard head's at each lookahead
    std::vector<std::pair<int, int>> policies = {{1, 0}, {2, 0}, {3, 0}, {12, 0}};
    if (hard) policies.insert(policies.end(), {{0, 0}, {0, 1}, {0, 2}});
    for (const auto& [eos_bias, max_length] : rounds) {
      {
        torch::NoGradGuard no_grad;
        model->output_bias()[Tokenizer::kEos].fill_(eos_bias);
      }
      Seq2SeqStepModel step_model(model);  // (its products copy the weights)
      REQUIRE(step_model.streams_prefix_batches());
      for (const auto& [k, lookahead] : policies) {
        INFO("wait-" << k << ", lookahead " << lookahead << ", eos bias " << eos_bias << ", max_length " << max_length);
        StreamingOptions options;
        options.search.beam_size = 1;
        options.search.max_length_ratio = 1.5;
        options.search.max_length = max_length;
        options.wait_k = k;
        options.lookahead = lookahead;
        options.wait_k_policy = WaitKPolicy::prefix;
        REQUIRE(streams_in_batches(step_model, options));
        const auto batch = stream_batch(step_model, sources, options);
        REQUIRE(batch.size() == sources.size());
        for (size_t b = 0; b < sources.size(); ++b) {
          INFO("sentence " << b);
          CountingStepModel counted(step_model);
          const auto alone = stream_sentence(counted, sources[b], options);
          CHECK(batch[b].tokens == alone.tokens);
          CHECK(batch[b].delays == alone.delays);
          CHECK(batch[b].finished == alone.finished);
          CHECK(batch[b].capped == alone.capped);
          CHECK(batch[b].source_tokens == alone.source_tokens);
          cut += !alone.finished;
          // a step per token written and one for the end; more: steps decoded again after a read
          redone += counted.steps - static_cast<int64_t>(alone.tokens.size()) - (alone.finished ? 1 : 0);
          for (auto d : alone.delays) early += d < static_cast<int64_t>(sources[b].size());
        }
      }
    }
    INFO("redone " << redone << ", cut " << cut << ", early " << early);
    CHECK(redone > 0);  // steps decoded again after a read,
    CHECK(cut > 0);     // outputs cut at the maximum length,
    CHECK(early > 0);   // and tokens written before the end
  }
  // A hard head whose decoder starts from the source restarts after each read: its own policy
  // streams one sentence at a time (wait-k's prefix policy still batches); an attention whose
  // memory is prepared again per read (area) does not batch at all.
  for (const auto& m : unidirectional_models()) {
    if (m.config.attention.type == "chunkwise" && m.config.decoder.init == DecoderInit::bridge) {
      Seq2SeqStepModel bridge(test::eval_model(m.config, 20, 20));
      StreamingOptions options;
      CHECK_FALSE(streams_in_batches(bridge, options));
      options.wait_k = 3;
      options.wait_k_policy = WaitKPolicy::prefix;
      CHECK(streams_in_batches(bridge, options));
    }
    if (m.config.attention.type == "area") {
      Seq2SeqStepModel area(test::eval_model(m.config, 20, 20));
      CHECK_FALSE(area.streams_prefix_batches());
    }
  }
}
