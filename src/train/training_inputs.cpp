#include "train/training_inputs.h"

#include <chrono>
#include <filesystem>
#include <numeric>
#include <string>
#include <system_error>
#include <vector>

#include "data/token_cache.h"
#include "train/distributed.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/text_io.h"

namespace fs = std::filesystem;

namespace attnmt {
namespace {

// Distributed runs: rank 0's SentencePiece models (trained or loaded above) are sent to the other
// ranks, which write them into their own train.save_dir when it lacks them or holds others (on
// one machine the save dir is shared and already holds them), and load them from there.
Tokenizers share_tokenizers(const Config& cfg, Distributed& dist, const Tokenizers& mine) {
  // rank 0's model files, by the names load_or_train_tokenizers gave them
  std::vector<std::shared_ptr<Tokenizer>> models{mine.src};
  if (dist.is_main() && mine.tgt != mine.src) models.push_back(mine.tgt);
  const auto count = std::stoul(dist.broadcast_bytes(std::to_string(models.size())));
  for (size_t i = 0; i < count; ++i) {
    const auto name =
        dist.broadcast_bytes(dist.is_main() ? fs::path(models[i]->model_path()).filename().string() : std::string());
    const auto bytes = dist.broadcast_bytes(dist.is_main() ? models[i]->serialized() : std::string());
    if (dist.is_main()) continue;
    const auto path = (fs::path(cfg.train.save_dir) / name).string();
    if (!fs::exists(path) || read_file(path) != bytes) {
      std::error_code ec;
      fs::create_directories(cfg.train.save_dir, ec);
      write_file_atomic(path, bytes);
    }
  }
  dist.barrier();  // every rank has the files before anyone reads them
  return dist.is_main() ? mine : load_or_train_tokenizers(cfg.tokenizer, cfg.train.save_dir, nullptr, cfg.train.seed);
}

}  // namespace

TrainingInputs prepare_training_inputs(const Config& cfg, Distributed& dist) {
  TrainingInputs d;
  const auto corpora = training_corpora(cfg.data);
  auto valid_text = read_parallel(cfg.data.valid, "valid");
  d.tokenizers = dist.is_main() ? load_or_train_tokenizers(cfg.tokenizer, cfg.train.save_dir, corpora, cfg.train.seed)
                          : Tokenizers{};
  if (dist.active()) d.tokenizers = share_tokenizers(cfg, dist, d.tokenizers);
  // The corpora as token ids: tokenized once, memory-mapped by every later run (data/token_cache.h).
  const auto cache_dir =
      cfg.data.cache_dir.empty() ? (fs::path(cfg.train.save_dir) / "cache").string() : cfg.data.cache_dir;
  std::vector<TrainCorpus> sources;
  for (size_t c = 0; c < corpora.size(); ++c) {
    const std::string what = training_corpus_name(c, corpora.size());
    sources.push_back(TrainCorpus{TokenCorpus::open(corpora[c], d.tokenizers, cache_dir, cfg.threads, what),
                                  corpora[c].weight, "'" + corpora[c].src + "' / '" + corpora[c].tgt + "'"});
  }
  d.train = std::make_unique<TrainPairs>(std::move(sources), cfg.data.max_length);
  for (size_t c = 0; c < d.train->corpus_count(); ++c) {
    const std::string what = training_corpus_name(c, corpora.size());
    spdlog::info("[data] {}: {} pairs kept, {} skipped as empty, {} skipped as longer than {} tokens", what,
                 d.train->kept(c), d.train->skipped_empty(c), d.train->skipped_long(c), cfg.data.max_length);
    if (corpora.size() > 1) {
      spdlog::info("[data] {} {}: weight {} -> {} pairs per epoch ({:.2f} passes over its pairs)", what,
                   d.train->corpus(c).name, d.train->corpus(c).weight, d.train->per_epoch(c),
                   d.train->kept(c) ? static_cast<double>(d.train->per_epoch(c)) / static_cast<double>(d.train->kept(c)) : 0.0);
    }
  }
  if (d.train->size() == 0) throw InputError("train: no usable sentence pairs in '" + cfg.data.train.src + "'");
  const auto symbols = split_symbols(cfg.tokenizer.user_defined_symbols);
  if (cfg.data.src_bpe_dropout > 0) d.src_bpe_dropout.emplace(*d.tokenizers.src, cfg.data.src_bpe_dropout, symbols);
  if (cfg.data.tgt_bpe_dropout > 0) d.tgt_bpe_dropout.emplace(*d.tokenizers.tgt, cfg.data.tgt_bpe_dropout, symbols);
  if (d.src_bpe_dropout || d.tgt_bpe_dropout) {
    spdlog::info("[data] BPE-dropout: source {}, target {} (each merge skipped with this probability)",
                 cfg.data.src_bpe_dropout, cfg.data.tgt_bpe_dropout);
  }
  auto valid = encode_dataset(valid_text, d.tokenizers, /*max_length=*/0, cfg.threads);
  spdlog::info("[data] valid: {} pairs ({} empty skipped)", valid.examples.size(), valid.skipped_empty);
  if (cfg.decode.shortlist) {  // built again on every run: it follows the corpus and the tokenizer
    const auto start = std::chrono::steady_clock::now();
    std::vector<size_t> all(d.train->size());
    std::iota(all.begin(), all.end(), 0);
    d.lexicon = std::make_shared<const Lexicon>(train_lexicon(d.train->gather(all), d.tokenizers.src->vocab_size(),
                                                             d.tokenizers.tgt->vocab_size(), kLexiconIterations,
                                                             kLexiconKeep));
    const auto path = lexicon_path(cfg.train.save_dir);
    if (dist.is_main()) write_lexicon(*d.lexicon, path);
    spdlog::info("[data] decode.shortlist: lexicon (IBM Model 1, {} iterations) in {:.1f}s -> {}", kLexiconIterations,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), path);
  }
  d.valid_text = std::move(valid_text);
  d.valid = std::move(valid);
  return d;
}

}  // namespace attnmt
