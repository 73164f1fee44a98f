// Continuous batching (decoding/running_search.h): sentences that join a running search at steps
// drawn by a seeded schedule (not by timing) get the n-best lists that search() gives each alone.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "attention/registry.h"
#include "decoding/ensemble.h"
#include "decoding/running_search.h"
#include "decoding/search.h"
#include "decoding/search_parts.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/translator.h"
#include "small_models.h"
#include "step_models.h"

using namespace attnmt;
using namespace attnmt::test;

namespace {

struct Sentence {
  std::vector<int> source;  // ids, without eos
  SentenceGuide guide;
};

// `count` sources of 1-9 ids in [4, vocab), a few with a forced or biased target prefix when asked.
std::vector<Sentence> sentences(size_t count, int vocab, bool prefixes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Sentence> out(count);
  for (size_t i = 0; i < count; ++i) {
    const int n = 1 + static_cast<int>(rng() % 9);
    for (int j = 0; j < n; ++j) out[i].source.push_back(4 + static_cast<int>(rng() % static_cast<uint64_t>(vocab - 4)));
    if (prefixes && i % 3 == 1) {
      out[i].guide.prefix = {4 + static_cast<int64_t>(i % 5), 5};
      out[i].guide.prefix_bias_beta = i % 2 == 0 ? 0.5 : 0.0;
    }
  }
  return out;
}

// Each sentence decoded by search() alone.
std::vector<std::vector<Hypothesis>> alone(StepModel& model, const SearchOptions& options, const std::vector<Sentence>& all) {
  std::vector<std::vector<Hypothesis>> out;
  for (const auto& s : all) {
    auto [src, lengths] = source_batch({&s.source});
    out.push_back(search(model, src, lengths, options, {s.guide})[0]);
  }
  return out;
}

// The sentences decoded by one running search: before each step, 0-3 of them (drawn by `seed`)
// join, together as one group; `largest` receives the most sentences that ran at once.
std::vector<std::vector<Hypothesis>> joining(StepModel& model, const SearchOptions& options,
                                             const std::vector<Sentence>& all, uint64_t seed, size_t& largest) {
  std::mt19937_64 rng(seed);
  RunningSearch running(model, options);
  std::map<uint64_t, size_t> sentence_of;
  std::vector<std::vector<Hypothesis>> out(all.size());
  std::vector<char> done(all.size(), 0);
  size_t next = 0, finished = 0;
  largest = 0;
  while (finished < all.size()) {
    const size_t join = running.empty() ? 1 + rng() % 3 : rng() % 4;
    std::vector<const std::vector<int>*> sources;
    Guides guides;
    std::vector<size_t> joined;
    for (size_t k = 0; k < join && next < all.size(); ++k, ++next) {
      sources.push_back(&all[next].source);
      guides.push_back(all[next].guide);
      joined.push_back(next);
    }
    if (!sources.empty()) {
      auto [src, lengths] = source_batch(sources);
      const auto tickets = running.add(src, lengths, guides);
      REQUIRE(tickets.size() == joined.size());
      for (size_t k = 0; k < joined.size(); ++k) sentence_of[tickets[k]] = joined[k];
    }
    largest = std::max(largest, running.sentences());
    for (auto& d : running.step()) {
      const size_t i = sentence_of.at(d.ticket);
      REQUIRE_FALSE(done[i]);
      REQUIRE_FALSE(d.stopped);
      done[i] = 1;
      out[i] = std::move(d.n_best);
      ++finished;
    }
  }
  REQUIRE(running.empty());
  return out;
}

// Two n-best lists: the same hypotheses (tokens, ended or cut), scores and attention within `tol`
// (0: equal).
void require_same(const std::vector<Hypothesis>& got, const std::vector<Hypothesis>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t h = 0; h < got.size(); ++h) {
    INFO("hypothesis " << h);
    REQUIRE(got[h].tokens == want[h].tokens);
    REQUIRE(got[h].finished == want[h].finished);
    if (tol == 0) {
      REQUIRE(got[h].log_prob == want[h].log_prob);
      REQUIRE(got[h].score == want[h].score);
    } else {
      REQUIRE(got[h].log_prob == Approx(want[h].log_prob).margin(tol));
      REQUIRE(got[h].score == Approx(want[h].score).margin(tol));
    }
    REQUIRE(got[h].attention.size() == want[h].attention.size());
    for (size_t t = 0; t < got[h].attention.size(); ++t) {
      REQUIRE(got[h].attention[t].size() == want[h].attention[t].size());
      for (size_t j = 0; j < got[h].attention[t].size(); ++j) {
        REQUIRE(got[h].attention[t][j] == Approx(want[h].attention[t][j]).margin(tol));
      }
    }
  }
}

void check_joining_equals_alone(StepModel& model, const SearchOptions& options, const std::vector<Sentence>& all,
                                double tol) {
  const auto want = alone(model, options, all);
  for (const uint64_t seed : {1, 2, 3}) {
    size_t largest = 0;
    const auto got = joining(model, options, all, seed, largest);
    CHECK(largest >= 3);  // sentences did run together
    for (size_t i = 0; i < all.size(); ++i) {
      INFO("schedule " << seed << ", sentence " << i << " (" << all[i].source.size() << " source ids)");
      require_same(got[i], want[i], tol);
    }
  }
}

SearchOptions options_with(int beam, int n_best) {
  SearchOptions o;
  o.beam_size = beam;
  o.n_best = n_best;
  o.max_length_ratio = 1.5;
  return o;
}

}  // namespace

TEST_CASE("continuous batching: sentences joining at random steps get what search() gives each alone, exactly",
          "[search][continuous]") {
  struct Setting {
    std::string name;
    SearchOptions options;
    bool prefixes = false;
  };
  std::vector<Setting> settings;
  settings.push_back({"greedy", options_with(1, 1)});
  settings.push_back({"beam 2", options_with(2, 1)});
  settings.push_back({"beam 5, n-best 3", options_with(5, 3)});
  auto attention = options_with(4, 2);
  attention.return_attention = true;
  attention.coverage_penalty = 0.2;
  attention.length_penalty = 0.6;
  settings.push_back({"beam 4, attention returned, coverage and length penalties", attention});
  auto rules = options_with(3, 2);
  rules.min_length = 3;
  settings.push_back({"beam 3, min_length 3", rules});
  auto ngram = options_with(1, 1);
  ngram.no_repeat_ngram_size = 2;
  ngram.return_attention = true;
  settings.push_back({"greedy, no_repeat_ngram_size 2, attention returned", ngram});
  // Sentences with a forced or a biased prefix run beside sentences without: some rows take the
  // rules' log-probabilities, others the logits, in one step.
  settings.push_back({"beam 3, target prefixes on some sentences", options_with(3, 3), true});
  settings.push_back({"greedy, target prefixes on some sentences", options_with(1, 1), true});
  for (const auto& setting : settings) {
    for (const double eos_offset : {0.5, -3.0}) {
      SECTION(setting.name + ", eos offset " + std::to_string(eos_offset)) {
        HashModel model(12, eos_offset, 0.3);
        check_joining_equals_alone(model, setting.options, sentences(24, 30, setting.prefixes, 7), 0.0);
      }
    }
  }
}

TEST_CASE("continuous batching: every attention variant that can merge its states decodes as alone, the others are refused",
          "[search][continuous][attention]") {
  const std::vector<std::string> not_merged = {"local_m", "forced_forward", "static", "area"};
  for (const auto& name : attention_names()) {
    SECTION(name) {
      torch::manual_seed(31);
      auto model = eval_model(small_search_config(name), 30, 20);
      Seq2SeqStepModel step(model);
      const bool refused = std::find(not_merged.begin(), not_merged.end(), name) != not_merged.end();
      REQUIRE(step.merges_states() == !refused);
      if (refused) {
        CHECK_THAT(RunningSearch::refusal(step, options_with(3, 1)), Catch::Contains("cannot be merged"));
        continue;
      }
      torch::NoGradGuard no_grad;
      const auto all = sentences(10, 30, false, 11);
      // Padding and the batch's shape reorder some float sums: the same tokens, scores to 1e-4.
      check_joining_equals_alone(step, options_with(1, 1), all, 1e-4);
      auto beam = options_with(3, 2);
      beam.return_attention = true;
      check_joining_equals_alone(step, beam, all, 1e-4);
    }
  }
}

TEST_CASE("continuous batching: an ensemble, and int8 products, decode as alone", "[search][continuous][ensemble]") {
  torch::manual_seed(37);
  auto a = eval_model(small_search_config("luong_general"), 30, 20);
  auto b = eval_model(small_search_config("bahdanau"), 30, 20);
  torch::NoGradGuard no_grad;
  Seq2SeqStepModel first(a), second(b);
  EnsembleStepModel ensemble({&first, &second}, {1.0, 1.0}, 20);
  REQUIRE(ensemble.merges_states());
  const auto all = sentences(10, 30, false, 13);
  check_joining_equals_alone(ensemble, options_with(3, 2), all, 1e-4);
  Seq2SeqStepModel int8(a, DecodePrecision::int8);
  check_joining_equals_alone(int8, options_with(3, 2), all, 1e-4);
}

TEST_CASE("continuous batching: a watch that says stop takes its sentence out, the others decode as alone",
          "[search][continuous]") {
  HashModel model(12, -1.0, 0.3);
  for (const int beam : {1, 3}) {
    INFO("beam " << beam);
    auto all = sentences(6, 30, false, 17);
    std::vector<std::vector<int64_t>> told(all.size());
    std::vector<int> calls(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) {
      all[i].guide.watch = [&told, &calls, i](const std::vector<int64_t>& decided) {
        told[i] = decided;
        return i != 2 || ++calls[i] < 3;  // sentence 2's client leaves at its third step
      };
    }
    const auto want = alone(model, options_with(beam, 1), all);
    const auto told_alone = told[2];
    calls.assign(all.size(), 0);
    RunningSearch running(model, options_with(beam, 1));
    std::vector<const std::vector<int>*> sources;
    Guides guides;
    for (const auto& s : all) sources.push_back(&s.source), guides.push_back(s.guide);
    auto [src, lengths] = source_batch(sources);
    running.add(src, lengths, guides);
    std::map<uint64_t, RunningSearch::Done> done;
    while (!running.empty()) {
      for (auto& d : running.step()) done[d.ticket] = std::move(d);
    }
    REQUIRE(done.size() == all.size());
    for (uint64_t i = 0; i < all.size(); ++i) {
      INFO("sentence " << i);
      REQUIRE(done[i].stopped == (i == 2));
      if (i == 2) {
        REQUIRE(done[i].n_best.empty());
        REQUIRE(want[i].empty());  // search() stops it alike
        REQUIRE(calls[i] == 3);
        REQUIRE(told[i] == told_alone);
      } else {
        require_same(done[i].n_best, want[i], 0.0);
        REQUIRE(told[i] == std::vector<int64_t>(want[i][0].tokens.begin(), want[i][0].tokens.begin() + static_cast<std::ptrdiff_t>(told[i].size())));
      }
    }
  }
}

TEST_CASE("continuous batching: what cannot run so is refused with its reason", "[search][continuous]") {
  HashModel hash(12, 0.5, 0.3);
  auto sampling = options_with(1, 1);
  sampling.sampling = true;
  CHECK_THAT(RunningSearch::refusal(hash, sampling), Catch::Contains("decode.sampling"));
  auto toolkit = options_with(3, 1);
  toolkit.rules = SearchRules::opennmt;
  CHECK_THAT(RunningSearch::refusal(hash, toolkit), Catch::Contains("decode.search_rules opennmt"));
  CHECK(RunningSearch::refusal(hash, options_with(3, 1)).empty());
  BigramModel bigram = garden_path();  // a step model that cannot merge states
  CHECK_THAT(RunningSearch::refusal(bigram, options_with(3, 1)), Catch::Contains("cannot be merged"));
  CHECK_THROWS_AS(RunningSearch(bigram, options_with(3, 1)), std::logic_error);
  torch::manual_seed(41);
  auto config = small_search_config("luong_general");
  config.decoder.self_attention = true;  // its past is as long as the step
  Seq2SeqStepModel self_attention(eval_model(config, 30, 20));
  CHECK_FALSE(self_attention.merges_states());
  RunningSearch running(hash, options_with(2, 1));
  Sentence s;
  s.source = {5, 6};
  s.guide.constraints = {{7}};
  auto [src, lengths] = source_batch({&s.source});
  CHECK_THROWS_AS(running.add(src, lengths, {s.guide}), std::invalid_argument);
}

TEST_CASE("continuous batching: a search resumed after a fed history equals search() with that history forced",
          "[search][continuous][alternatives]") {
  HashModel model(12, -0.5, 0.3);
  for (const int beam : {1, 3}) {
    for (const int min_length : {0, 4}) {
      INFO("beam " << beam << ", min_length " << min_length);
      auto options = options_with(beam, beam == 1 ? 1 : 2);
      options.min_length = min_length;
      const auto all = sentences(6, 30, false, 19);
      RunningSearch running(model, options);
      std::vector<std::vector<Hypothesis>> want;
      std::map<uint64_t, size_t> sentence_of;
      for (size_t i = 0; i < all.size(); ++i) {
        // A history of 1-3 tokens, fed one row at a time as alternatives.cpp feeds a prefix.
        const std::vector<int64_t> history(all[i].source.begin(), all[i].source.begin() + static_cast<std::ptrdiff_t>(
                                                                        std::min<size_t>(1 + i % 3, all[i].source.size())));
        std::vector<int64_t> fed;
        for (int64_t token : history) fed.push_back(token % 12 < 4 ? 4 + token % 8 : token % 12);
        auto [src, lengths] = source_batch({&all[i].source});
        auto state = model.start(src, lengths);
        double log_prob = 0;
        int64_t prev = model.bos_id();
        for (const int64_t token : fed) {
          const auto r = model.step(torch::full({1}, prev, torch::kLong), *state, false);
          log_prob += ruled_log_probs(r)[0][token].item<double>();
          prev = token;
        }
        RunningSearch::Resumed resumed;
        resumed.tokens = fed;
        resumed.log_prob = log_prob;
        resumed.src_len = lengths[0].item<int64_t>();
        std::vector<RunningSearch::Resumed> one{resumed};
        sentence_of[running.resume(std::move(state), std::move(one))[0]] = i;
        SentenceGuide forced;
        forced.prefix = fed;
        want.push_back(search(model, src, lengths, options, {forced})[0]);
      }
      std::vector<std::vector<Hypothesis>> got(all.size());
      while (!running.empty()) {
        for (auto& d : running.step()) got[sentence_of.at(d.ticket)] = std::move(d.n_best);
      }
      for (size_t i = 0; i < all.size(); ++i) {
        INFO("sentence " << i);
        require_same(got[i], want[i], 0.0);
      }
    }
  }
}
