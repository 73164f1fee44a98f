// Teacher-forced perplexity of a trained model on a parallel text: exp(sum of -log p(y) over
// every target token, end of sentence included / token count), no label smoothing, eval mode.
// The same quantity the trainer logs as valid_ppl, measured again on the loaded model.
#pragma once
#include "data/corpus.h"
#include "io/model_file.h"

namespace attnmt {

double perplexity(LoadedModel& model, const ParallelText& text, int batch_size);

}  // namespace attnmt
