// Search against a fake step model with hand-written probabilities, and beam 1 == greedy.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <map>

#include "attention/registry.h"
#include "decoding/alternatives.h"
#include "decoding/beams.h"
#include "decoding/candidates.h"
#include "decoding/search.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/token_rules.h"
#include "finite_difference.h"
#include "io/model_file.h"
#include "program.h"
#include "util/error.h"
#include "util/text_io.h"
#include "step_models.h"
#include "model/seq2seq.h"
#include "util/cpu_kernels.h"
#include "small_models.h"

using namespace attnmt;
using namespace attnmt::test;

TEST_CASE("greedy search follows the local argmax", "[search]") {
  auto model = garden_path();
  SearchOptions options;
  options.beam_size = 1;
  options.length_penalty = 0;
  auto out = greedy_search(model, source(2), lengths(2), options);
  REQUIRE(out.size() == 2);
  REQUIRE(out[0][0].tokens == std::vector<int64_t>{4});
  REQUIRE(out[0][0].log_prob == Approx(std::log(0.24)).epsilon(1e-6));
  REQUIRE(out[1][0].tokens == std::vector<int64_t>{4});
}

TEST_CASE("beam search finds the better sequence greedy misses, with exact scores", "[search]") {
  auto model = garden_path();
  SearchOptions options;
  options.beam_size = 2;
  options.n_best = 2;
  options.length_penalty = 0;
  auto out = beam_search(model, source(3), lengths(3), options);
  REQUIRE(out.size() == 3);
  for (const auto& nbest : out) {
    REQUIRE(nbest.size() == 2);
    REQUIRE(nbest[0].tokens == std::vector<int64_t>{5});
    REQUIRE(nbest[0].score == Approx(std::log(0.36)).epsilon(1e-6));
    REQUIRE(nbest[1].tokens == std::vector<int64_t>{4});
    REQUIRE(nbest[1].score == Approx(std::log(0.24)).epsilon(1e-6));
  }
}

TEST_CASE("GNMT length penalty divides the log-probability", "[search]") {
  REQUIRE(gnmt_length_penalty(2, 0.0) == 1.0);
  REQUIRE(gnmt_length_penalty(2, 0.6) == Approx(std::pow(7.0 / 6.0, 0.6)));
  auto model = garden_path();
  SearchOptions options;
  options.beam_size = 2;
  options.length_penalty = 1.0;
  auto out = beam_search(model, source(1), lengths(1), options);
  // both candidates have |Y| = 2 (token + eos): lp = 7/6
  REQUIRE(out[0][0].score == Approx(std::log(0.36) / (7.0 / 6.0)).epsilon(1e-6));
}

TEST_CASE("hypotheses stop at the maximum length", "[search]") {
  // a always continues with a: never ends.
  BigramModel loop({{2, {0, 0, 0, 0, 1.0, 0}}, {4, {0, 0, 0, 0, 1.0, 0}}, {5, {0, 0, 0, 0, 1.0, 0}}});
  SearchOptions options;
  options.max_length_ratio = 1.5;  // floor(1.5 * 2) + 5 = 8 tokens
  for (int beam : {1, 3}) {
    options.beam_size = beam;
    auto out = search(loop, source(1), lengths(1), options);
    REQUIRE(out[0][0].tokens.size() == 8);
    REQUIRE_FALSE(out[0][0].finished);
  }
}

TEST_CASE("beam candidates and log-normalisers equal log_softmax, add and topk", "[search][isa]") {
  // candidates.h against the tensor expressions in double: V = 1003 leaves a partial block of 64
  // and a partial SIMD lane; one sentence has dead beams (running score -inf) and one a
  // +-1e3 spread so that the block test skips most blocks.
  torch::manual_seed(5);
  const int64_t A = 4, K = 3, V = 1003, C = 2 * K;
  auto logits = torch::randn({A * K, V}) * 4;
  logits[7] *= 250;
  std::vector<double> base(A * K);
  for (int64_t r = 0; r < A * K; ++r) base[r] = -0.5 * static_cast<double>(r % K) - static_cast<double>(r / K);
  base[4] = base[5] = -std::numeric_limits<double>::infinity();  // sentence 1: beam 0 alone
  auto lp = logits.to(torch::kDouble).log_softmax(-1);
  auto z = log_normalizers(logits);
  for (int64_t r = 0; r < A * K; ++r) {
    REQUIRE(z[r] == Approx(logits[r].to(torch::kDouble).logsumexp(0).item<double>()).epsilon(1e-6));
  }
  auto cand_ref = (lp + torch::tensor(base, torch::kDouble).unsqueeze(1)).view({A, K * V});
  auto [ref_scores, ref_ids] = cand_ref.topk(C, 1);
  for (auto dtype : {torch::kFloat, torch::kDouble}) {  // float: the loops; double: the tensor expressions
    INFO(dtype);
    auto got = best_candidates(logits.to(dtype), base, K, C);
    REQUIRE(got.per_sentence == C);
    for (int64_t a = 0; a < A; ++a) {
      for (int64_t j = 0; j < C; ++j) {
        INFO("sentence " << a << ", candidate " << j);
        REQUIRE(got.ids[a * C + j] == ref_ids[a][j].item<int64_t>());
        REQUIRE(got.scores[a * C + j] == Approx(ref_scores[a][j].item<double>()).margin(1e-4));
        if (a == 1) REQUIRE(got.ids[a * C + j] < V);  // only beam 0 is alive
      }
    }
  }
  // got: one sentence's C candidates, against log_softmax + base and topk in double over `rows`.
  auto require_one_sentence = [](const Candidates& got, const torch::Tensor& rows, const std::vector<double>& base,
                                 int64_t C) {
    auto ref = (rows.to(torch::kDouble).log_softmax(-1) + torch::tensor(base, torch::kDouble).unsqueeze(1)).view({1, -1});
    auto [rs, ri] = ref.topk(C, 1);
    for (int64_t j = 0; j < C; ++j) {
      REQUIRE(got.ids[j] == ri[0][j].item<int64_t>());
      REQUIRE(got.scores[j] == Approx(rs[0][j].item<double>()).margin(1e-5));
    }
  };
  // Ties: equal scores keep the earlier id (beam k's word v is k * V + v) whichever comparison
  // path the CPU runs (ATTNMT_CPU_ISA), and a beam whose running score is below the C-th best is
  // never read (a NaN there would otherwise stay out anyway; its candidates could not enter).
  {
    auto flat = torch::zeros({2, 130});
    flat[0].narrow(0, 64, 66).fill_(1.0f);  // the second and third blocks of row 0 hold its best
    auto ties = best_candidates(flat, {0.0, -50.0}, 2, 4);
    for (int64_t j = 0; j < 4; ++j) REQUIRE(ties.ids[j] == 64 + j);
    auto low = torch::randn({3, 200});
    low[2].fill_(std::numeric_limits<float>::quiet_NaN());
    require_one_sentence(best_candidates(low, {0.0, -0.1, -1e4}, 3, 6), low.narrow(0, 0, 2), {0.0, -0.1}, 6);
  }
  // The sum of exponentials is kept against the largest maximum so far: a first block of -inf
  // (nothing to sum yet) and the maximum in the last, partial block (every sum rescaled there).
  {
    auto rows = torch::randn({2, 130}) * 3;
    rows[0].narrow(0, 0, 64).fill_(-std::numeric_limits<float>::infinity());
    rows[1][129] = 40.0f;
    require_one_sentence(best_candidates(rows, {0.0, -1.0}, 2, 5), rows, {0.0, -1.0}, 5);
  }
  // Fewer candidates than asked (every beam dead but one, V = 2): padded with -inf.
  auto small = best_candidates(torch::zeros({2, 2}), {0.0, -std::numeric_limits<double>::infinity()}, 2, 4);
  REQUIRE(small.scores[1] == Approx(std::log(0.5)));
  REQUIRE(std::isinf(small.scores[2]));
  REQUIRE(std::isinf(small.scores[3]));
}

TEST_CASE("beam size 1 equals greedy on a real (random) model", "[search]") {
  torch::manual_seed(3);
  ModelConfig config;
  config.embedding_size = 16;
  config.encoder.hidden_size = 12;
  config.decoder.hidden_size = 20;
  config.encoder.layers = config.decoder.layers = 2;
  for (const DecoderStyle style : {DecoderStyle::luong, DecoderStyle::bahdanau}) {
    config.decoder.style = style;
    config.attention.type = style == DecoderStyle::luong ? "luong_general" : "bahdanau";
    VocabSizes vocab;
    vocab.src = 30;
    vocab.tgt = 25;
    Seq2Seq model(config, vocab);
    model->eval();
    Seq2SeqStepModel step_model(model);
    torch::NoGradGuard no_grad;
    auto src = torch::randint(4, 30, {5, 7}, torch::kLong);
    auto len = torch::tensor({7, 6, 3, 1, 5}, torch::kLong);
    SearchOptions options;
    options.beam_size = 1;
    options.return_attention = true;
    auto greedy = greedy_search(step_model, src, len, options);
    auto beam = beam_search(step_model, src, len, options);
    for (int b = 0; b < 5; ++b) {
      INFO(style << " sentence " << b);
      REQUIRE(greedy[b][0].tokens == beam[b][0].tokens);
      REQUIRE(greedy[b][0].score == Approx(beam[b][0].score).epsilon(1e-5));
      REQUIRE(greedy[b][0].attention.size() == beam[b][0].attention.size());
    }
  }
}

namespace {

// The logits of model->forward(src, len, tgt) equal those of decoding it one step at a time.
void check_teacher_forcing_equals_steps(Seq2Seq& model, const torch::Tensor& src, const torch::Tensor& len,
                                        const torch::Tensor& tgt) {
  torch::NoGradGuard no_grad;
  auto logits = model->forward(src, len, tgt);  // [B, T, V]
  DecodingSeq2Seq decoding(model, ExecutionMode::libtorch());
  auto enc = decoding.encode(src, len);
  for (int64_t t = 0; t < tgt.size(1); ++t) {
    auto step_logits = decoding.logits(decoding.step_hidden(tgt.select(1, t), enc.memory, enc.state, t, nullptr));
    REQUIRE(torch::allclose(step_logits, logits.select(1, t), 1e-5, 1e-5));
  }
}

}  // namespace

TEST_CASE("teacher forcing and step-by-step decoding compute the same thing", "[model]") {
  torch::manual_seed(5);
  ModelConfig config;
  config.embedding_size = 8;
  config.encoder.hidden_size = 6;
  config.decoder.hidden_size = 10;
  // combine_size 7: h~ (fed back by input feeding) narrower than the decoder
  for (const auto& [rnn, combine_size] : {std::pair{RnnType::lstm, 0}, std::pair{RnnType::gru, 0}, std::pair{RnnType::lstm, 7}}) {
    config.encoder.rnn = config.decoder.rnn = rnn;
    config.decoder.combine_size = combine_size;
    VocabSizes vocab;
    vocab.src = 20;
    vocab.tgt = 20;
    Seq2Seq model(config, vocab);
    model->eval();
    torch::NoGradGuard no_grad;
    auto src = torch::randint(4, 20, {2, 5}, torch::kLong);
    auto len = torch::tensor({5, 3}, torch::kLong);
    auto tgt = torch::randint(4, 20, {2, 4}, torch::kLong);
    check_teacher_forcing_equals_steps(model, src, len, tgt);
  }
}

// The conditional style (model/decoder.h) against its definition, written out here with plain tensor
// operations for one sentence: each encoder direction a GRU stack of its own, the mean bridge, then
// step 0 (s' = GRU_1(E <s>), Marian's MLP score, s = GRU_2(c), one transition cell without input, a
// second layer above, h~ = tanh(W_o [s; c; E y] + b)); and teacher forcing equals step by step.
TEST_CASE("the conditional decoder computes its definition", "[model]") {
  torch::manual_seed(41);
  ModelConfig config;
  config.embedding_size = 6;
  config.encoder.hidden_size = 5;
  config.decoder.hidden_size = 7;
  config.encoder.layers = config.decoder.layers = 2;
  config.encoder.rnn = config.decoder.rnn = RnnType::gru;
  config.attention.hidden_size = 9;
  attnmt::test::make_conditional(config);
  VocabSizes vocab;
  vocab.src = 15;
  vocab.tgt = 13;
  Seq2Seq model(config, vocab);
  model->eval();
  torch::NoGradGuard no_grad;
  auto p = model->named_parameters();
  auto gru = [](const torch::Tensor& x, const torch::Tensor& h, const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                const torch::Tensor& b_ih, const torch::Tensor& b_hh) {
    auto gi = (x.defined() ? torch::mv(w_ih, x) : torch::zeros_like(b_ih)) + b_ih;
    auto gh = torch::mv(w_hh, h) + b_hh;
    auto gi3 = gi.chunk(3), gh3 = gh.chunk(3);
    auto r = torch::sigmoid(gi3[0] + gh3[0]), z = torch::sigmoid(gi3[1] + gh3[1]);
    auto n = torch::tanh(gi3[2] + r * gh3[2]);
    return (1 - z) * n + z * h;
  };
  auto src = torch::tensor({{5, 9, 4, 11}}, torch::kLong);
  auto len = torch::tensor({4}, torch::kLong);
  auto emb = p["src_embed.weight"].index_select(0, src[0]);  // [4, 6]
  auto run = [&](const std::string& name, const std::vector<torch::Tensor>& xs) {
    std::vector<torch::Tensor> out;
    auto h = torch::zeros({5});
    for (const auto& x : xs) {
      h = gru(x, h, p[name + ".weight_ih_l0"], p[name + ".weight_hh_l0"], p[name + ".bias_ih_l0"], p[name + ".bias_hh_l0"]);
      out.push_back(h);
    }
    return out;
  };
  std::vector<torch::Tensor> x = emb.unbind(0), reversed(x.rbegin(), x.rend());
  auto f = run("encoder.fwd_1", run("encoder.fwd_0", x));
  auto b = run("encoder.bwd_1", run("encoder.bwd_0", reversed));
  std::reverse(b.begin(), b.end());
  std::vector<torch::Tensor> rows;
  for (size_t i = 0; i < f.size(); ++i) rows.push_back(torch::cat({f[i], b[i]}));
  auto memory = torch::stack(rows);  // [4, 10]
  auto h0 = torch::tanh(torch::mv(p["decoder.mean_bridge.weight"], memory.mean(0)) + p["decoder.mean_bridge.bias"]);
  auto y = p["tgt_embed.weight"][vocab.bos_id];
  auto s1 = gru(y, h0, p["decoder.rnn.w_static"], p["decoder.rnn.w_hh_0"], p["decoder.rnn.b_ih_0"], p["decoder.rnn.b_hh_0"]);
  auto e = torch::mv(torch::tanh(torch::mv(p["decoder.attention.w_a.weight"], s1) + p["decoder.attention.w_a.bias"] +
                                 torch::mm(memory, p["decoder.attention.u_a.weight"].t())),
                     p["decoder.attention.v_a"]);
  auto c = torch::mv(memory.t(), torch::softmax(e, 0));
  auto s = gru(c, s1, p["decoder.second.w_static"], p["decoder.second.w_hh_0"], p["decoder.second.b_ih_0"],
               p["decoder.second.b_hh_0"]);
  s = gru({}, s, {}, p["decoder.transition_w_hh_0"], p["decoder.transition_b_ih_0"], p["decoder.transition_b_hh_0"]);
  auto s2 = gru(s, h0, p["decoder.above.w_static"], p["decoder.above.w_hh_0"], p["decoder.above.b_ih_0"],
                p["decoder.above.b_hh_0"]);
  auto h = torch::tanh(torch::mv(p["decoder.combine.weight"], torch::cat({s2, c, y})) + p["decoder.combine.bias"]);
  auto want = torch::mv(p["out_weight"], h) + p["out_bias"];
  REQUIRE(vocab.bos_id == 2);
  auto tgt = torch::tensor({{2, 7, 8}}, torch::kLong);
  auto logits = model->forward(src, len, tgt);
  CHECK(attnmt::test::max_abs_diff(logits[0][0], want) < 1e-5);
  check_teacher_forcing_equals_steps(model, src, len, tgt);
  // A batch with padding gives each sentence what it gives alone.
  auto batch = torch::tensor({{5, 9, 4, 11}, {6, 3, 0, 0}}, torch::kLong);
  auto lengths = torch::tensor({4, 2}, torch::kLong);
  auto tgt2 = torch::tensor({{2, 7, 8}, {2, 9, 4}}, torch::kLong);
  auto together = model->forward(batch, lengths, tgt2);
  CHECK(attnmt::test::max_abs_diff(together[0], logits[0]) < 1e-5);
  auto alone = model->forward(batch.narrow(0, 1, 1).narrow(1, 0, 2), lengths.narrow(0, 1, 1), tgt2.narrow(0, 1, 1));
  CHECK(attnmt::test::max_abs_diff(together[1], alone[0]) < 1e-5);
  check_teacher_forcing_equals_steps(model, batch, lengths, tgt2);
}

namespace {

// Beam search expands, reorders and prunes the model's per-step state (the attention's coverage,
// previous alignment, running sums; the decoder self-attention's history); if any of that went
// wrong, a hypothesis' score would differ from the log-probability the model gives its tokens
// when fed them all at once.
void check_beam_scores_equal_rescoring(const ModelConfig& config) {
  VocabSizes vocab;
  vocab.src = 20;
  vocab.tgt = 20;
  Seq2Seq model(config, vocab);
  model->eval();
  Seq2SeqStepModel step_model(model);
  torch::NoGradGuard no_grad;
  auto src = torch::randint(4, 20, {3, 6}, torch::kLong);
  auto len = torch::tensor({6, 4, 2}, torch::kLong);
  SearchOptions options;
  options.beam_size = 4;
  options.n_best = 4;
  options.length_penalty = 0.0;
  options.max_length_ratio = 1.5;
  auto beams = beam_search(step_model, src, len, options);
  for (int64_t b = 0; b < 3; ++b) {
    REQUIRE_FALSE(beams[b].empty());
    for (const auto& hyp : beams[b]) {
      std::vector<int64_t> out = hyp.tokens;
      if (hyp.finished) out.push_back(step_model.eos_id());
      std::vector<int64_t> in = {step_model.bos_id()};
      in.insert(in.end(), out.begin(), out.end() - 1);
      const auto n = static_cast<int64_t>(out.size());
      auto logits = model->forward(src.narrow(0, b, 1).narrow(1, 0, len[b].item<int64_t>()), len.narrow(0, b, 1),
                                   torch::tensor(in, torch::kLong).view({1, n}));
      auto log_probs = logits.log_softmax(-1)[0].gather(1, torch::tensor(out, torch::kLong).view({n, 1}));
      INFO("sentence " << b);
      REQUIRE(hyp.log_prob == Approx(log_probs.sum().item<double>()).margin(1e-4));
      REQUIRE(hyp.score == Approx(hyp.log_prob).margin(1e-9));
    }
  }
  options.beam_size = options.n_best = 1;
  auto greedy = greedy_search(step_model, src, len, options);
  auto beam1 = beam_search(step_model, src, len, options);
  for (int64_t b = 0; b < 3; ++b) REQUIRE(greedy[b][0].tokens == beam1[b][0].tokens);
}


}  // namespace

TEST_CASE("every attention inside a model: beam search scores equal teacher-forced rescoring",
          "[search][attention]") {
  for (const auto& name : attention_names()) {
    SECTION(name) {
      torch::manual_seed(21);
      check_beam_scores_equal_rescoring(small_search_config(name));
    }
  }
}

TEST_CASE("self-attention inside a model: beam search scores equal teacher-forced rescoring",
          "[search][self-attention]") {
  for (const std::string attention : {"luong_general", "bahdanau", "local_p", "monotonic"}) {
    for (const bool encoder_blocks : {false, true}) {
      SECTION(attention + (encoder_blocks ? ", encoder and decoder self-attention" : ", decoder self-attention")) {
        torch::manual_seed(23);
        auto config = small_search_config(attention);
        config.decoder.self_attention = true;
        if (encoder_blocks) config.encoder.self_attention.layers = 2, config.encoder.self_attention.heads = 3;
        check_beam_scores_equal_rescoring(config);
      }
    }
  }
}

TEST_CASE("decoder self-attention is causal, and teacher forcing equals step-by-step decoding", "[model][self-attention]") {
  for (const DecoderStyle style : {DecoderStyle::luong, DecoderStyle::bahdanau}) {
    INFO(name_of(style));
    torch::manual_seed(29);
    ModelConfig config = small_search_config(style == DecoderStyle::luong ? "luong_general" : "bahdanau");
    config.decoder.self_attention = true;
    config.decoder.layers = 2;
    VocabSizes vocab;
    vocab.src = 20;
    vocab.tgt = 20;
    Seq2Seq model(config, vocab);
    model->eval();
    torch::NoGradGuard no_grad;
    auto src = torch::randint(4, 20, {2, 5}, torch::kLong);
    auto len = torch::tensor({5, 3}, torch::kLong);
    auto tgt = torch::randint(4, 20, {2, 6}, torch::kLong);
    auto logits = model->forward(src, len, tgt);
    auto later = tgt.clone();
    later.narrow(1, 3, 3).random_(4, 20);  // other tokens from step 3 on
    CHECK(torch::equal(model->forward(src, len, later).narrow(1, 0, 3), logits.narrow(1, 0, 3)));
    CHECK_FALSE(torch::allclose(model->forward(src, len, later).narrow(1, 3, 3), logits.narrow(1, 3, 3)));
    check_teacher_forcing_equals_steps(model, src, len, tgt);
  }
}

TEST_CASE("decoder self-attention: finite-difference gradients in double", "[model][self-attention][gradcheck]") {
  torch::manual_seed(31);
  ModelConfig config = small_search_config("luong_general");
  config.decoder.self_attention = true;
  config.encoder.self_attention.layers = 1;
  config.encoder.self_attention.heads = 2;
  config.encoder.dropout = config.decoder.dropout = 0.0;
  config.encoder.self_attention.dropout = 0.0;
  VocabSizes vocab;
  vocab.src = 12;
  vocab.tgt = 12;
  Seq2Seq model(config, vocab);
  model->to(torch::kDouble);
  model->eval();
  auto src = torch::randint(4, 12, {2, 4}, torch::kLong);
  auto len = torch::tensor({4, 3}, torch::kLong);
  auto tgt = torch::randint(4, 12, {2, 5}, torch::kLong);
  const auto probe = torch::randn({2, 5, 12}, torch::kDouble);
  auto loss = [&] { return (model->forward(src, len, tgt) * probe).sum(); };
  loss().backward();
  for (auto& p : model->named_parameters()) {
    if (p.key().find("intra") == std::string::npos && p.key().find("combine") == std::string::npos) continue;
    REQUIRE(p.value().grad().defined());
    check_central_differences(p.value(), p.value().grad().clone(), loss, p.key(), 11);
  }
}

TEST_CASE("decode.precision bf16: the products in bfloat16 stay close to fp32", "[model]") {
  torch::manual_seed(9);
  auto model = test::eval_model(test::sized_config(32, 16, 32), 40, 50);
  const VocabSizes vocab;  // the special ids (bos)
  torch::NoGradGuard no_grad;
  auto src = torch::randint(4, 40, {3, 6}, torch::kLong);
  auto len = torch::tensor({6, 4, 2}, torch::kLong);
  // The model's decoding form, on every CPU (emulated where it has no bf16 kernel). Unpacked: the
  // output layer alone in bfloat16; packed: every product of the step (where oneDNN has a kernel).
  for (const bool packed : {false, true}) {
    INFO("packed weights " << packed);
    const auto kind = packed ? ExecutionMode::kPacked : ExecutionMode::kLibTorch;
    DecodingSeq2Seq fp32(model, {kind, ProductPrecision::kFp32}), bf16(model, {kind, ProductPrecision::kBf16});
    auto e32 = fp32.encode(src, len), e16 = bf16.encode(src, len);
    auto prev = torch::full({3}, vocab.bos_id, torch::kLong);
    for (int t = 0; t < 3; ++t) {
      auto a = fp32.logits(fp32.step_hidden(prev, e32.memory, e32.state, t, nullptr));
      auto b = bf16.logits(bf16.step_hidden(prev, e16.memory, e16.state, t, nullptr));
      REQUIRE_FALSE(torch::equal(a, b));  // it does run in bfloat16
      // bfloat16 keeps 8 significant bits: logits of size ~1 are off by ~1e-2 at most.
      REQUIRE((a - b).abs().max().item<double>() < 0.05);
      prev = a.argmax(1);
    }
  }
  // The step model that decoding builds: those products where the CPU has native bf16 products
  // (util/cpu_kernels.h), fp32 elsewhere (the emulated ones were slower than fp32).
  const bool native = has_native_bf16(this_cpu_flags());
  INFO("native bf16 products: " << native);
  for (const bool packed : {false, true}) {
    INFO("packed weights " << packed);
    Seq2SeqStepModel fp32(model, DecodePrecision::fp32, packed), bf16(model, DecodePrecision::bf16, packed);
    auto s32 = fp32.start(src, len), s16 = bf16.start(src, len);
    auto prev = torch::full({3}, vocab.bos_id, torch::kLong);
    for (int t = 0; t < 3; ++t) {
      auto a = fp32.step(prev, *s32, false).logits, b = bf16.step(prev, *s16, false).logits;
      if (native) {
        REQUIRE_FALSE(torch::equal(a, b));
        REQUIRE((a - b).abs().max().item<double>() < 0.05);
      } else {
        REQUIRE(torch::equal(a, b));  // decoded in fp32
      }
      prev = a.argmax(1);
    }
  }
}

TEST_CASE("Beams: back-pointers give each finished hypothesis its own tokens and attention", "[search][beams]") {
  // Two sentences x beam 2 = 4 rows; rows 1 and 3 start dead.
  const double inf = std::numeric_limits<double>::infinity();
  Beams beams({0.0, -inf, 0.0, -inf}, /*keep_attention=*/true);
  REQUIRE(beams.rows() == 4);
  // Step 0: sentence 0's row 0 branches into tokens 10 and 11; sentence 1's row 2 into 20 and 21.
  beams.advance({0, 0, 2, 2}, {10, 11, 20, 21}, {-1.0, -2.0, -0.5, -0.7}, {{0.1f}, {0.2f}, {0.3f}, {0.4f}});
  CHECK(beams.scores() == std::vector<double>{-1.0, -2.0, -0.5, -0.7});
  // Step 1: both of sentence 0's new rows extend its row 1 (token 11); sentence 1's swap places.
  beams.advance({1, 1, 3, 2}, {12, 13, 22, 23}, {-2.5, -3.0, -1.0, -1.2}, {{1.1f}, {1.2f}, {1.3f}, {1.4f}});

  // Row 0 ends with eos (not kept as a token), its attention row for that step appended.
  auto h = beams.finish(0, -4.0, std::nullopt, {2.0f});
  CHECK(h.tokens == std::vector<int64_t>{11, 12});
  CHECK(h.finished);
  CHECK(h.log_prob == -4.0);
  CHECK(h.attention == std::vector<std::vector<float>>{{0.2f}, {1.1f}, {2.0f}});
  // Row 2 came from row 3 (token 21); cut at the maximum length, it keeps its last token.
  auto cut = beams.finish(2, -1.5, int64_t{24}, {2.5f});
  CHECK(cut.tokens == std::vector<int64_t>{21, 22, 24});
  CHECK_FALSE(cut.finished);
  CHECK(cut.attention == std::vector<std::vector<float>>{{0.4f}, {1.3f}, {2.5f}});
  // Row 3 came from row 2 (token 20).
  CHECK(beams.finish(3, -1.2, std::nullopt, {}).tokens == std::vector<int64_t>{20, 23});

  // Without attention, nothing of it is kept.
  Beams plain({0.0}, /*keep_attention=*/false);
  plain.advance({0}, {5}, {-0.1}, {{9.0f}});
  auto p = plain.finish(0, -0.2, std::nullopt, {});
  CHECK(p.tokens == std::vector<int64_t>{5});
  CHECK(p.attention.empty());
  CHECK_THROWS(plain.advance({0, 0}, {1}, {0.0}, {}));
}

namespace {

// A batch of 6 sentences of different lengths and words for HashModel (step_models.h).
std::pair<torch::Tensor, torch::Tensor> hash_batch() {
  const std::vector<int64_t> len = {3, 7, 5, 9, 2, 6};
  auto src = torch::zeros({6, 9}, torch::kLong);
  for (int64_t b = 0; b < 6; ++b) {
    for (int64_t j = 0; j < len[b]; ++j) src[b][j] = 4 + (b * 7 + j * 3) % 11;
  }
  return {src, torch::tensor(len, torch::kLong)};
}

bool is_prefix(const std::vector<int64_t>& prefix, const std::vector<int64_t>& of) {
  return prefix.size() <= of.size() && std::equal(prefix.begin(), prefix.end(), of.begin());
}

}  // namespace

TEST_CASE("decided output: what search tells a watch only grows, begins every hypothesis returned, and changes nothing",
          "[search][watch]") {
  const auto [src, len] = hash_batch();
  // Early ends (hypotheses finish at different steps, so that the best is often one finished
  // while other beams live on) and late ones (most run to the maximum length).
  for (const double eos_offset : {0.5, -3.0}) {
    HashModel model(12, eos_offset, 0.3);
    for (const int beam : {1, 2, 5}) {
      SearchOptions o;
      o.beam_size = beam;
      o.n_best = beam;
      o.length_penalty = 1.0;
      const auto plain = search(model, src, len, o);
      std::vector<std::vector<std::vector<int64_t>>> told(6);
      Guides guides(6);
      for (size_t b = 0; b < 6; ++b) {
        guides[b].watch = [&told, b](const std::vector<int64_t>& decided) {
          told[b].push_back(decided);
          return true;
        };
      }
      const auto watched = search(model, src, len, o, guides);
      for (size_t b = 0; b < 6; ++b) {
        INFO("eos offset " << eos_offset << ", beam " << beam << ", sentence " << b);
        REQUIRE(watched[b].size() == plain[b].size());
        for (size_t k = 0; k < plain[b].size(); ++k) {
          CHECK(watched[b][k].tokens == plain[b][k].tokens);
          CHECK(watched[b][k].score == plain[b][k].score);
        }
        if (told[b].empty()) {  // it ended at the first step (eos): nothing to watch
          CHECK(plain[b][0].tokens.empty());
          continue;
        }
        for (size_t s = 1; s < told[b].size(); ++s) CHECK(is_prefix(told[b][s - 1], told[b][s]));
        for (const auto& h : plain[b]) CHECK(is_prefix(told[b].back(), h.tokens));
        if (beam == 1) {  // greedy: every token is decided as it is chosen
          CHECK(told[b].back().size() + 1 >= plain[b][0].tokens.size());
        }
      }
    }
  }
}

TEST_CASE("decided output: a watch that says stop takes its sentence out, the others decode as without it",
          "[search][watch]") {
  const auto [src, len] = hash_batch();
  HashModel model(12, -3.0, 0.3);
  for (const int beam : {1, 4}) {
    SearchOptions o;
    o.beam_size = beam;
    o.n_best = beam == 1 ? 1 : 2;
    const auto plain = search(model, src, len, o);
    Guides guides(6);
    int steps = 0;
    guides[3].watch = [&steps](const std::vector<int64_t>&) { return ++steps < 3; };
    const auto out = search(model, src, len, o, guides);
    INFO("beam " << beam);
    CHECK(steps == 3);        // not asked again once it said stop
    CHECK(out[3].empty());    // no hypothesis for the stopped sentence
    for (size_t b : {0, 1, 2, 4, 5}) {
      REQUIRE(out[b].size() == plain[b].size());
      for (size_t k = 0; k < plain[b].size(); ++k) CHECK(out[b][k].tokens == plain[b][k].tokens);
    }
  }
  // Searches that cannot say what is decided refuse a watch rather than ignore it.
  SearchOptions sampling;
  sampling.sampling = true;
  Guides one(1);
  one[0].watch = [](const std::vector<int64_t>&) { return true; };
  CHECK_THROWS(search(model, source(1), lengths(1), sampling, one));
}

// prefix_bias_beta, as CTranslate2 defines it: at step t < |prefix|, a hypothesis that has
// followed the prefix so far scores token v by log((1 - beta) P(v) + beta [v == prefix[t]]); one
// that has left it is scored by the model alone. On the garden path (after bos: a .6, b .4; after
// a: eos .4, a .3, b .3; after b: eos .9, a .05, b .05), by hand.
TEST_CASE("prefix bias: the biased distribution, computed by hand, and the search that uses it", "[search][prefix]") {
  auto model = garden_path();
  const std::vector<int64_t> prefix{b, a};
  const double inf = std::numeric_limits<double>::infinity();
  SECTION("the rules: a row that follows the prefix is mixed with it, a row that left it is not") {
    Guides guides(1);
    guides[0].prefix = prefix;
    guides[0].prefix_bias_beta = 0.25;
    const SearchOptions o = unnormalised(2);
    const TokenRules rules(o, guides, model.eos_id());
    // step 1: row 0 after "b" (follows the prefix), row 1 after "a" (left it at step 0)
    auto lp = torch::tensor({0.0, 0.0, 0.0, 0.9, 0.05, 0.05, 0.0, 0.0, 0.0, 0.4, 0.3, 0.3}, torch::kFloat).view({2, 6}).log();
    rules.apply(lp, 1, {0, 0}, [&](int64_t row) { return row == 0 ? std::vector<int64_t>{b} : std::vector<int64_t>{a}; },
                nullptr);
    const std::vector<double> want0{-inf, -inf, -inf, std::log(0.75 * 0.9), std::log(0.75 * 0.05 + 0.25), std::log(0.75 * 0.05)};
    const std::vector<double> want1{-inf, -inf, -inf, std::log(0.4), std::log(0.3), std::log(0.3)};
    for (int64_t v = 0; v < 6; ++v) {
      INFO("token " << v);
      const double got0 = lp[0][v].item<double>(), got1 = lp[1][v].item<double>();
      if (std::isinf(want0[v])) CHECK(got0 == -inf); else CHECK(got0 == Approx(want0[v]).epsilon(1e-6));
      if (std::isinf(want1[v])) CHECK(got1 == -inf); else CHECK(got1 == Approx(want1[v]).epsilon(1e-6));
    }
    // with a shortlist the prefix's token is found by its id (columns 3, 5, 4 = eos, b, a)
    const std::vector<int64_t> columns{3, 5, 4};
    auto short_lp = torch::tensor({0.9f, 0.05f, 0.05f}, torch::kFloat).view({1, 3}).log();
    rules.apply(short_lp, 1, {0}, [&](int64_t) { return std::vector<int64_t>{b}; }, columns.data());
    CHECK(short_lp[0][2].item<double>() == Approx(std::log(0.75 * 0.05 + 0.25)).epsilon(1e-6));
    CHECK(short_lp[0][1].item<double>() == Approx(std::log(0.75 * 0.05)).epsilon(1e-6));
  }
  SECTION("search: greedy and beam under the bias, against the forced prefix and no prefix") {
    Guides guides(1);
    guides[0].prefix = prefix;
    guides[0].prefix_bias_beta = 0.5;
    // greedy: b (.5 * .4 + .5 = .7), then a (.5 * .05 + .5 = .525, over eos .45), then eos (.4)
    auto greedy = search(model, source(1), lengths(1), unnormalised(1), guides);
    CHECK(greedy[0][0].tokens == prefix);
    CHECK(greedy[0][0].log_prob == Approx(std::log(0.7 * 0.525 * 0.4)).epsilon(1e-6));
    // beam 2 finds b then eos (.7 * .45 = .315), more probable under the bias than b a eos (.147)
    auto beam = search(model, source(1), lengths(1), unnormalised(2), guides);
    CHECK(beam[0][0].tokens == std::vector<int64_t>{b});
    CHECK(beam[0][0].score == Approx(std::log(0.7 * 0.45)).epsilon(1e-6));
    // beta 0: the prefix is forced, scored by the model (.4 * .05 * .4)
    guides[0].prefix_bias_beta = 0;
    auto forced = search(model, source(1), lengths(1), unnormalised(2), guides);
    CHECK(forced[0][0].tokens == prefix);
    CHECK(forced[0][0].log_prob == Approx(std::log(0.4 * 0.05 * 0.4)).epsilon(1e-6));
  }
}

// Alternatives after a forced prefix (decoding/alternatives.h) on a real trained model
// (tests/data/model_v1): the k subwords and log-probabilities equal the model's own distribution
// rescored by teacher forcing (Seq2Seq::forward over the whole prefix at once, not step by step),
// and each completion is what translate_lines gives with the prefix and that subword forced as text
// (`translate --prefix`), wherever that text is cut back into the same subwords.
TEST_CASE("alternatives: the model's top k after the prefix (rescored), each completed as translate --prefix does",
          "[search][alternatives]") {
  auto loaded = load_model(kData + "/model_v1", "", "cpu");
  loaded.model->eval();
  Seq2SeqStepModel step(loaded.model);
  auto options = translate_options(loaded.config.decode);
  options.workers = 1;
  const auto& tgt = *loaded.tokenizers.tgt;
  const auto lines = read_lines(kSrc);
  size_t compared = 0;
  for (size_t line : {0, 3, 7}) {
    const auto& source = lines[line];
    const auto own = translate_lines(step, loaded.tokenizers, {source}, options)[0][0].text;
    const auto cut = own.find(' ', own.find(' ') + 1);  // its first two words
    for (const std::string prefix : {std::string(), own.substr(0, cut), std::string("zz qq")}) {
      INFO("line " << line << ", prefix '" << prefix << "'");
      const auto found = next_alternatives(step, loaded.tokenizers, source, {prefix, /*k=*/5}, options);
      REQUIRE(found.next.size() == 5);
      // Rescoring: the whole prefix fed at once; the distribution at its last position.
      std::vector<int64_t> src;
      for (int id : loaded.tokenizers.src->encode(source)) src.push_back(id);
      src.push_back(step.eos_id());
      std::vector<int64_t> in = {step.bos_id()};
      in.insert(in.end(), found.prefix.begin(), found.prefix.end());
      CHECK(found.prefix == [&] {
        std::vector<int64_t> ids;
        for (int id : tgt.encode(prefix)) ids.push_back(id);
        return ids;
      }());
      torch::NoGradGuard no_grad;
      const auto n = static_cast<int64_t>(in.size());
      auto logits = loaded.model->forward(torch::tensor(src, torch::kLong).view({1, -1}),
                                          torch::tensor({static_cast<int64_t>(src.size())}, torch::kLong),
                                          torch::tensor(in, torch::kLong).view({1, n}));
      const auto [best, tokens] = logits.log_softmax(-1)[0][n - 1].to(torch::kDouble).topk(5);
      for (int64_t j = 0; j < 5; ++j) {
        const auto& a = found.next[static_cast<size_t>(j)];
        CHECK(a.token == tokens[j].item<int64_t>());
        CHECK(a.log_prob == Approx(best[j].item<double>()).margin(1e-5));
        // The completion: prefix + this subword forced (as ids), against `translate --prefix TEXT`
        // with their text, where the text is cut into the same ids again.
        std::vector<int> forced(found.prefix.begin(), found.prefix.end());
        if (a.token != step.eos_id()) forced.push_back(static_cast<int>(a.token));
        const auto text = tgt.decode(forced);
        CHECK(a.completion.text.rfind(text, 0) == 0);  // it begins with the prefix and the subword
        if (a.token == step.eos_id()) {
          CHECK(a.completion.text == text);
          continue;
        }
        if (tgt.encode(text) != forced) continue;
        LineGuides guides;
        guides.prefixes = {text};
        const auto want = translate_lines(step, loaded.tokenizers, {source}, options, guides)[0][0];
        CHECK(a.completion.text == want.text);
        CHECK(a.completion.log_prob == Approx(want.log_prob).margin(1e-6));
        ++compared;
      }
    }
  }
  CHECK(compared >= 20);  // most of the 45 were compared
  // A prefix with no room left for a next subword, and k 0: refused.
  std::string longest;
  while (longest.size() < 400) longest += "a b ";
  CHECK_THROWS_AS(next_alternatives(step, loaded.tokenizers, lines[0], {longest, /*k=*/5}, options), InputError);
  CHECK_THROWS_AS(next_alternatives(step, loaded.tokenizers, lines[0], {"", /*k=*/0}, options), InputError);
  CHECK_THROWS_AS(next_alternatives(step, loaded.tokenizers, " ", {"", /*k=*/3}, options), InputError);
}
