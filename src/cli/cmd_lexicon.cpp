// attnmt lexicon --model SAVE_DIR [--iterations N] [--keep N]
// Builds the vocabulary shortlist's lexicon (data/lexicon.h) from the model's training corpus and
// tokenizer, as its config.yaml names them, and writes SAVE_DIR/lexicon.bin.
#include <chrono>
#include <iterator>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "config/loader.h"
#include "data/examples.h"
#include "data/corpus.h"
#include "data/lexicon.h"
#include "data/tokenizer.h"
#include "util/logging.h"

namespace attnmt::cli {

void add_lexicon_command(CLI::App& app, const GlobalOptions& global) {
  struct Options {
    std::string model;
    int iterations = kLexiconIterations;
    int keep = kLexiconKeep;
  };
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "lexicon", "Build SAVE_DIR/lexicon.bin for vocabulary shortlists (decode.shortlist): IBM Model 1 on the training corpus");
  cmd->add_option("--model", o->model, "Save dir of a trained model (its config.yaml names the training corpus)")
      ->required();
  cmd->add_option("--iterations", o->iterations, "EM iterations of IBM Model 1")->check(CLI::Range(1, 100));
  cmd->add_option("--keep", o->keep, "Translations kept per source subword")->check(CLI::Range(1, 100000));
  cmd->callback([o, &global] {
    setup_logging(global.debug);
    const auto config = load_config_file(o->model + "/config.yaml");
    const auto start = std::chrono::steady_clock::now();
    const auto tokenizers = load_or_train_tokenizers(config.tokenizer, o->model, nullptr, config.train.seed);
    Dataset data;  // every training corpus, as training builds its lexicon
    for (const auto& corpus : training_corpora(config.data)) {
      auto part = encode_dataset(read_parallel(corpus, "train"), tokenizers, config.data.max_length);
      data.examples.insert(data.examples.end(), std::make_move_iterator(part.examples.begin()),
                           std::make_move_iterator(part.examples.end()));
    }
    const auto lexicon = train_lexicon(data.examples, tokenizers.src->vocab_size(), tokenizers.tgt->vocab_size(),
                                       o->iterations, o->keep);
    const auto path = lexicon_path(o->model);
    write_lexicon(lexicon, path);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    spdlog::info("[lexicon] {}: {} training pairs, {} EM iterations, {:.1f} s", path, data.examples.size(),
                 o->iterations, seconds);
  });
}

}  // namespace attnmt::cli
