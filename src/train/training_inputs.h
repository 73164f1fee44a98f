// What training reads before its first update: the tokenizers (trained or loaded; in a distributed
// run every rank takes rank 0's), the training corpora as token ids (data/token_cache.h), the
// BPE-dropout segmenters, the shortlist's lexicon and the validation set.
#pragma once
#include <memory>
#include <optional>

#include "config/config.h"
#include "data/bpe_dropout.h"
#include "data/corpus.h"
#include "data/examples.h"
#include "data/lexicon.h"
#include "data/tokenizer.h"
#include "data/train_pairs.h"

namespace attnmt {

class Distributed;

struct TrainingInputs {
  Tokenizers tokenizers;
  std::unique_ptr<TrainPairs> train;
  std::optional<BpeDropout> src_bpe_dropout, tgt_bpe_dropout;  // data.src_bpe_dropout / tgt_bpe_dropout
  std::shared_ptr<const Lexicon> lexicon;                      // decode.shortlist (else null)
  ParallelText valid_text;
  Dataset valid;  // valid_text as token ids
};

// Logs what it kept and skipped. Rank 0 writes the tokenizers and the lexicon into
// train.save_dir. InputError when no training pair is usable.
TrainingInputs prepare_training_inputs(const Config& config, Distributed& dist);

}  // namespace attnmt
