// Alternatives after a forced prefix (decoding/alternatives.h) on a real trained model
// (tests/data/model_v1): the k subwords and log-probabilities equal the model's own distribution
// rescored by teacher forcing (Seq2Seq::forward over the whole prefix at once, not step by step),
// and each completion is what translate_lines gives with the prefix and that subword forced as text
// (`translate --prefix`), wherever that text is cut back into the same subwords.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "decoding/alternatives.h"
#include "decoding/seq2seq_step_model.h"
#include "io/model_file.h"
#include "program.h"
#include "util/error.h"
#include "util/text_io.h"

using namespace attnmt;
using namespace attnmt::test;

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
      const auto found = next_alternatives(step, loaded.tokenizers, source, prefix, 5, options);
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
  CHECK_THROWS_AS(next_alternatives(step, loaded.tokenizers, lines[0], longest, 5, options), InputError);
  CHECK_THROWS_AS(next_alternatives(step, loaded.tokenizers, lines[0], "", 0, options), InputError);
  CHECK_THROWS_AS(next_alternatives(step, loaded.tokenizers, " ", "", 3, options), InputError);
}
