// SimulEval's output directory for text-to-text runs (facebookresearch/SimulEval,
// simuleval/evaluator/instance.py, Instance.summarize): instances.log, one JSON record per
// sentence, and config.yaml naming the source and target types. `simuleval --score-only --output
// DIR` scores such a directory as it scores its own runs. Delays are counted in source words and
// one per target word (whitespace tokens of the prediction), SimulEval's default latency unit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "eval/latency.h"

namespace attnmt {

struct SimulEvalRecord {
  int64_t index = 0;                 // 0-based line number (SimulEval's scorers need index 0 present)
  std::string prediction;            // the output's words joined by one space
  std::vector<int64_t> delays;       // per output word: source words read when it was written
  std::vector<double> elapsed;       // per output word, ms; text input: 0 (as SimulEval's text instances)
  int64_t prediction_length = 0;     // output words
  std::string reference;
  std::string source;
  int64_t source_length = 0;         // source words
};

std::string simuleval_json_line(const SimulEvalRecord& record);  // one line, no newline
// InputError naming `where` (file and line) when the line is not such a record.
SimulEvalRecord parse_simuleval_line(const std::string& line, const std::string& where);

// SimulEval's reference length in words: len(reference.split(" ")) -- every single space counts.
double simuleval_reference_words(const std::string& reference);

// The record as the latency scorers see it (reference length in words).
LatencyInstance latency_instance(const SimulEvalRecord& record);

// A streamed sentence's delays in words, as SimulEval counts text: a target word is written when
// its last subword is, and reading a source subword reads the word it belongs to.
//   subword_delays[t]  source subwords read when target subword t was written (1..n)
//   read_words[g]      source words the first g source subwords touch (g = 0..n)
//   words_after[t]     whitespace words in the detokenized first t + 1 target subwords
//   output_words       whitespace words in the whole detokenized output
// Returns one delay per output word, in source words.
std::vector<int64_t> word_delays(const std::vector<int64_t>& subword_delays, const std::vector<int64_t>& read_words,
                                 const std::vector<int64_t>& words_after, size_t output_words);

// Writes DIR/instances.log and DIR/config.yaml (text to text), creating DIR.
void write_simuleval_dir(const std::string& dir, const std::vector<SimulEvalRecord>& records);

}  // namespace attnmt
