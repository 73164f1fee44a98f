// decode.search_rules opennmt / opennmt3 / joeynmt (decoding/toolkit_search.h) against the
// toolkits' own search code: tests/data/toolkit_search/make.py ran OpenNMT-py 2.3's BeamSearch /
// GreedySearch and Joey NMT 2.3's beam_search / recurrent_greedy, make_onmt3.py OpenNMT-py
// 3.5.1's BeamSearch, on HashModel (step_models.h) written in Python (toy.py), and recorded their
// hypotheses; attnmt must give the same tokens, and the same scores.
// torch first: its glog defines a CHECK of its own, which Catch's must replace (the precompiled
// header does this for the build; a build without it must not run glog's silently).
#include <torch/torch.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/loader.h"
#include "decoding/search.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/toolkit_search.h"
#include "decoding/translator.h"
#include "model/seq2seq.h"
#include "step_models.h"
#include "util/error.h"
#include "small_models.h"

using namespace attnmt;
using namespace attnmt::test;
using nlohmann::json;

namespace {

// expected.json's cases (OpenNMT-py 2.3, Joey NMT 2.3), then expected_onmt3.json's (OpenNMT-py 3.5.1).
const json& expected_cases() {
  static const json cases = [] {
    json all = json::array();
    for (const char* file : {"expected.json", "expected_onmt3.json"}) {
      std::ifstream in(std::string(ATTNMT_TEST_DATA_DIR) + "/toolkit_search/" + file);
      REQUIRE(in.good());
      const auto file_cases = json::parse(in)["cases"];
      for (const auto& c : file_cases) all.push_back(c);
    }
    return all;
  }();
  return cases;
}

// JSON has no infinities: make.py writes them as "-inf" / "inf".
double number(const json& j) {
  if (j.is_string())
    return j.get<std::string>() == "-inf" ? -std::numeric_limits<double>::infinity()
                                          : std::numeric_limits<double>::infinity();
  return j.get<double>();
}

SearchOptions case_options(const json& c) {
  SearchOptions o;
  o.rules = parse_choice<SearchRules>("toolkit", c["toolkit"].get<std::string>());
  o.beam_size = c["beam_size"];
  o.n_best = c["n_best"];
  o.length_penalty = c["alpha"];
  o.min_length = c["min_length"];
  o.max_length = c["max_length"];
  if (c.contains("max_length_ratio")) o.max_length_ratio = c["max_length_ratio"];  // opennmt3's
  o.ban_unk = c["ban_unk"];
  o.return_attention = c["return_attention"];
  return o;
}

std::vector<std::vector<Hypothesis>> run_case(const json& c, const std::vector<std::vector<int64_t>>& sources) {
  HashModel model(c["vocab"], c["eos_offset"], c["eos_slope"]);
  const auto B = static_cast<int64_t>(sources.size());
  int64_t S = 0;
  for (const auto& s : sources) S = std::max<int64_t>(S, static_cast<int64_t>(s.size()));
  auto src = torch::zeros({B, S}, torch::kLong);  // padded with pad (0)
  auto len = torch::empty({B}, torch::kLong);
  for (int64_t b = 0; b < B; ++b) {
    for (size_t j = 0; j < sources[b].size(); ++j) src[b][static_cast<int64_t>(j)] = sources[b][j];
    len[b] = static_cast<int64_t>(sources[b].size());
  }
  const auto options = case_options(c);
  // OpenNMT-py translates with BeamSearch, beam 1 included; its GreedySearch (argmax) is the
  // sampling path with random_sampling_topk 1.
  if (c["toolkit"] == "opennmt" && c["search"] == "greedy") return opennmt_greedy_search(model, src, len, options);
  return search(model, src, len, options);
}

void check_sentence(const json& expected, const std::vector<Hypothesis>& got) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("hypothesis " << i);
    const auto& e = expected[i];
    const auto& h = got[i];
    CHECK(h.tokens == e["tokens"].get<std::vector<int64_t>>());
    CHECK(h.finished == e["finished"].get<bool>());
    const double score = number(e["score"]);
    if (std::isinf(score)) {
      CHECK(h.score == score);
    } else {
      CHECK(h.score == Approx(score).margin(1e-4));
    }
    if (e.contains("filler")) continue;  // Joey's <unk> of score -1 filling a short n-best list
    CHECK(h.log_prob == Approx(number(e["log_prob"])).margin(1e-4));
    if (!e.contains("attention")) continue;
    const auto& rows = e["attention"];
    REQUIRE(h.attention.size() == rows.size());
    for (size_t t = 0; t < rows.size(); ++t) {
      // The toolkits cut a row at another sentence's length now and then (OpenNMT-py indexes its
      // tiled memory_lengths by the batch row); the positions both have must agree.
      const auto row = rows[t].get<std::vector<float>>();
      const size_t n = std::min(row.size(), h.attention[t].size());
      REQUIRE(n > 0);
      for (size_t s = 0; s < n; ++s) CHECK(h.attention[t][s] == Approx(row[s]).margin(1e-6));
    }
  }
}

}  // namespace

TEST_CASE("toolkit search rules: the same hypotheses and scores as OpenNMT-py's and Joey NMT's code",
          "[toolkit_search][search]") {
  const auto& cases = expected_cases();
  REQUIRE(cases.size() >= 20);
  for (const auto& c : cases) {
    SECTION(c["name"].get<std::string>()) {
      const auto sources = c["sources"].get<std::vector<std::vector<int64_t>>>();
      const auto& expected = c["expected"];
      const auto batch = run_case(c, sources);
      REQUIRE(batch.size() == sources.size());
      for (size_t b = 0; b < sources.size(); ++b) {
        INFO("sentence " << b << " in a batch of " << sources.size());
        check_sentence(expected[b], batch[b]);
      }
      // A sentence's search does not depend on the others in its batch (finished ones leave it).
      for (size_t b = 0; b < sources.size(); ++b) {
        INFO("sentence " << b << " alone");
        check_sentence(expected[b], run_case(c, {sources[b]})[0]);
      }
    }
  }
}

TEST_CASE("toolkit search rules: the cases cover what the rules do", "[toolkit_search]") {
  // The recorded outputs exercise finished and cut hypotheses, several per sentence, Joey's
  // fillers and its slots finished at -inf; if make.py's cases change, they must still.
  int cut = 0, fillers = 0, minus_inf = 0, several = 0;
  for (const auto& c : expected_cases()) {
    for (const auto& sentence : c["expected"]) {
      several += sentence.size() > 1;
      for (const auto& h : sentence) {
        cut += !h["finished"].get<bool>() && !h.contains("filler");
        fillers += h.contains("filler");
        minus_inf += h["score"].is_string();
      }
    }
  }
  CHECK(cut > 20);
  CHECK(fillers > 5);
  CHECK(minus_inf > 0);
  CHECK(several > 40);
}

TEST_CASE("toolkit search rules on a real (random) model: log_prob equals teacher-forced rescoring",
          "[toolkit_search][search]") {
  // The model's state goes through expand_beams, reorder_beams and the index_select that drops
  // finished sentences; if any went wrong, a hypothesis's log_prob would not be its tokens'.
  torch::manual_seed(17);
  auto model = test::eval_model(test::sized_config(8, 6, 12), 20, 12);
  Seq2SeqStepModel step_model(model);
  torch::NoGradGuard no_grad;
  const auto src = torch::randint(4, 20, {4, 6}, torch::kLong);
  const auto len = torch::tensor({6, 4, 2, 5}, torch::kLong);
  for (const auto rules : {SearchRules::opennmt, SearchRules::opennmt3, SearchRules::joeynmt}) {
    for (const int beam : {1, 4}) {
      SearchOptions o;
      o.rules = rules;
      o.beam_size = o.n_best = beam;
      o.length_penalty = 0;
      o.max_length = 7;
      o.return_attention = true;
      const auto out = search(step_model, src, len, o);
      for (int64_t b = 0; b < 4; ++b) {
        for (const auto& h : out[static_cast<size_t>(b)]) {
          INFO(name_string(rules) << " beam " << beam << " sentence " << b);
          if (h.score == -1.0 && h.tokens == std::vector<int64_t>{step_model.unk_id()}) continue;  // Joey's filler
          std::vector<int64_t> outputs = h.tokens;
          if (h.finished) outputs.push_back(step_model.eos_id());
          REQUIRE(h.attention.size() == outputs.size());
          std::vector<int64_t> inputs = {step_model.bos_id()};
          inputs.insert(inputs.end(), outputs.begin(), outputs.end() - 1);
          const auto n = static_cast<int64_t>(outputs.size());
          auto logits = model->forward(src.narrow(0, b, 1).narrow(1, 0, len[b].item<int64_t>()), len.narrow(0, b, 1),
                                       torch::tensor(inputs, torch::kLong).view({1, n}));
          auto lp = logits.log_softmax(-1)[0].gather(1, torch::tensor(outputs, torch::kLong).view({n, 1}));
          CHECK(h.log_prob == Approx(lp.sum().item<double>()).margin(1e-4));
          CHECK(h.score == Approx(h.log_prob).margin(1e-4));  // alpha 0: the score is log P
        }
      }
    }
  }
}

TEST_CASE("toolkit search rules: OpenNMT-py beam 1 is its greedy search", "[toolkit_search]") {
  HashModel model(10, 0.0, 0.5);
  const auto src = torch::tensor({{5, 6, 7}, {8, 9, 0}, {4, 5, 6}}, torch::kLong);
  const auto len = torch::tensor({3, 2, 3}, torch::kLong);
  SearchOptions o;
  o.rules = SearchRules::opennmt;
  o.beam_size = 1;
  o.n_best = 1;
  o.max_length = 6;
  for (const double alpha : {0.0, 0.6}) {
    INFO("alpha " << alpha);
    o.length_penalty = alpha;
    const auto beam = opennmt_beam_search(model, src, len, o);
    const auto greedy = opennmt_greedy_search(model, src, len, o);
    for (size_t b = 0; b < 3; ++b) {
      CHECK(beam[b][0].tokens == greedy[b][0].tokens);
      CHECK(beam[b][0].score == Approx(greedy[b][0].score).margin(1e-5));
      CHECK(beam[b][0].log_prob == Approx(greedy[b][0].log_prob).margin(1e-5));
    }
  }
}

TEST_CASE("toolkit search rules: what they do not support is refused, naming the option", "[toolkit_search]") {
  HashModel model(10, 0.0, 0.5);
  const auto src = torch::tensor({{5, 6, 7}}, torch::kLong);
  const auto len = torch::tensor({3}, torch::kLong);
  for (const auto rules : {SearchRules::opennmt, SearchRules::opennmt3, SearchRules::joeynmt}) {
    SearchOptions o;
    o.rules = rules;
    o.max_length = 0;
    if (rules != SearchRules::joeynmt) {
      CHECK_THROWS_WITH(search(model, src, len, o), Catch::Contains("decode.max_length must be > 0"));
    } else {
      CHECK_NOTHROW(search(model, src, len, o));  // Joey NMT's default length limit
    }
    o.max_length = -1;
    CHECK_THROWS_WITH(search(model, src, len, o), Catch::Contains("decode.max_length must be > 0"));
    o.max_length = 10;
    o.sampling = true;
    CHECK_THROWS_WITH(search(model, src, len, o), Catch::Contains("decode.sampling: not with decode.search_rules"));
    o.sampling = false;
    o.no_repeat_ngram_size = 2;
    CHECK_THROWS_WITH(search(model, src, len, o), Catch::Contains("decode.no_repeat_ngram_size"));
    o.no_repeat_ngram_size = 0;
    o.coverage_penalty = 0.2;
    CHECK_THROWS_WITH(search(model, src, len, o), Catch::Contains("decode.coverage_penalty"));
    o.coverage_penalty = 0;
    Guides guides(1);
    guides[0].prefix = {4};
    CHECK_THROWS_WITH(search(model, src, len, o, guides), Catch::Contains("a target prefix: not with"));
    CHECK_NOTHROW(search(model, src, len, o));
  }
}

TEST_CASE("toolkit search rules: Joey NMT's default length limit, 1.5 x each sentence's source", "[toolkit_search]") {
  // max_output_length -1: Joey takes int(1.5 x its batch's longest source, </s> included); here
  // each sentence's own, which is what Joey computes for a batch of one.
  HashModel model(10, -4.0, 0.1);  // the end of sentence comes late: most hypotheses run to the limit
  const std::vector<std::vector<int64_t>> sources = {{5, 6, 7}, {8, 9}, {4, 5, 6, 7, 8, 9, 4}, {7}};
  auto batch = [&](const std::vector<size_t>& which) {
    int64_t S = 0;
    for (size_t b : which) S = std::max<int64_t>(S, static_cast<int64_t>(sources[b].size()));
    auto src = torch::zeros({static_cast<int64_t>(which.size()), S}, torch::kLong);
    auto len = torch::empty({static_cast<int64_t>(which.size())}, torch::kLong);
    for (size_t i = 0; i < which.size(); ++i) {
      for (size_t j = 0; j < sources[which[i]].size(); ++j)
        src[static_cast<int64_t>(i)][static_cast<int64_t>(j)] = sources[which[i]][j];
      len[static_cast<int64_t>(i)] = static_cast<int64_t>(sources[which[i]].size());
    }
    return std::pair{src, len};
  };
  for (const int beam : {1, 3}) {
    SearchOptions o;
    o.rules = SearchRules::joeynmt;
    o.beam_size = o.n_best = beam;
    o.max_length = 0;
    const auto [src, len] = batch({0, 1, 2, 3});
    const auto together = search(model, src, len, o);
    size_t at_limit = 0;
    for (size_t b = 0; b < sources.size(); ++b) {
      INFO("beam " << beam << " sentence " << b);
      SearchOptions alone = o;
      alone.max_length = static_cast<int>(static_cast<double>(sources[b].size()) * 1.5);
      const auto [s1, l1] = batch({b});
      const auto want = search(model, s1, l1, alone)[0];
      REQUIRE(together[b].size() == want.size());
      for (size_t k = 0; k < want.size(); ++k) {
        CHECK(together[b][k].tokens == want[k].tokens);
        CHECK(together[b][k].score == want[k].score);
        CHECK(together[b][k].tokens.size() <= static_cast<size_t>(alone.max_length));
        at_limit += !want[k].finished && want[k].tokens.size() == static_cast<size_t>(alone.max_length);
      }
    }
    CHECK(at_limit > 0);
  }
}

TEST_CASE("toolkit search rules: decode.search_rules and decode.ban_unk in the config", "[toolkit_search][config]") {
  auto config = [](const std::string& decode) { return parse_config("decode:\n" + decode, "cfg.yaml"); };
  const auto options = translate_options(
      config("  search_rules: joeynmt\n  max_length: 50\n  ban_unk: true\n  length_penalty: 0\n").decode);
  CHECK(options.search.rules == SearchRules::joeynmt);
  CHECK(options.search.ban_unk);
  CHECK(options.search.max_length == 50);
  CHECK(translate_options(config("  search_rules: opennmt\n  max_length: 9\n").decode).search.rules ==
        SearchRules::opennmt);
  CHECK(translate_options(config("  search_rules: opennmt3\n  max_length: 9\n").decode).search.rules ==
        SearchRules::opennmt3);
  CHECK(translate_options(Config().decode).search.rules == SearchRules::attnmt);
  CHECK_THROWS_WITH(config("  search_rules: sockeye\n"), Catch::Contains("decode.search_rules"));
  const auto marian = translate_options(config("  search_rules: marian\n  word_penalty: 0.5\n  ban_unk: true\n").decode);
  CHECK(marian.search.rules == SearchRules::marian);
  CHECK(marian.search.word_penalty == 0.5);
  CHECK_THROWS_WITH(config("  word_penalty: 0.5\n"),
                    Catch::Contains("decode.word_penalty must be 0 with decode.search_rules: attnmt (a rule of marian)"));
  CHECK_THROWS_WITH(config("  search_rules: marian\n  min_length: 2\n"),
                    Catch::Contains("decode.min_length must be 0 with decode.search_rules: marian"));
  CHECK_THROWS_WITH(config("  search_rules: marian\n  max_length: 20\n"),
                    Catch::Contains("decode.max_length must be 0 with decode.search_rules: marian"));
  CHECK_THROWS_WITH(config("  search_rules: opennmt\n"),
                    Catch::Contains("decode.max_length must be > 0 with decode.search_rules: opennmt"));
  CHECK(config("  search_rules: joeynmt\n").decode.max_length == 0);  // Joey NMT's own default limit
  CHECK_THROWS_WITH(config("  search_rules: joeynmt\n  max_length: 9\n  sampling: true\n"),
                    Catch::Contains("decode.sampling must be false with decode.search_rules: joeynmt"));
  CHECK_THROWS_WITH(config("  search_rules: joeynmt\n  max_length: 9\n  mbr: bleu\n"), Catch::Contains("decode.mbr"));
  CHECK_THROWS_WITH(config("  search_rules: opennmt\n  max_length: 9\n  shortlist: true\n"),
                    Catch::Contains("decode.shortlist"));
  CHECK_THROWS_WITH(config("  ban_unk: true\n"),
                    Catch::Contains("decode.ban_unk must be false with decode.search_rules: attnmt"));
}
