// SimulEval's output directory for text-to-text runs (facebookresearch/SimulEval,
// simuleval/evaluator/instance.py, Instance.summarize): instances.log, one JSON record per
// sentence, and config.yaml naming the source and target types. `simuleval --score-only --output
// DIR` scores such a directory as it scores its own runs. Delays are counted in source words and
// one per target word (whitespace tokens of the prediction), SimulEval's default latency unit.
#pragma once
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

// Writes DIR/instances.log and DIR/config.yaml (text to text), creating DIR.
void write_simuleval_dir(const std::string& dir, const std::vector<SimulEvalRecord>& records);

}  // namespace attnmt
