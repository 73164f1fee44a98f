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

// A streamed sentence's delays in words, as SimulEval counts them when it drives the stream word by
// word (serve's remote protocol, serve/simul_agent.h): a source subword is read once the word it
// belongs to has arrived, and a target word goes out once it is known to be complete -- when the
// subword that begins the next word is written, or, for the last word, when the output ends.
//   subword_delays[t]  source subwords read when target subword t went out (1..n)
//   read_words[g]      source words the first g source subwords touch (g = 0..n; a subword that
//                      is a word boundary alone touches the word after it)
//   words_after[t]     whitespace words in the detokenized first t + 1 target subwords
//   output_words       whitespace words in the whole detokenized output
//   end_read           source subwords read when the output ended (its end of sentence decided, or
//                      the cut at its maximum length)
// Returns one delay per output word, in source words.
std::vector<int64_t> word_delays(const std::vector<int64_t>& subword_delays, const std::vector<int64_t>& read_words,
                                 const std::vector<int64_t>& words_after, size_t output_words, int64_t end_read);

// Writes DIR/instances.log and DIR/config.yaml (text to text), creating DIR.
void write_simuleval_dir(const std::string& dir, const std::vector<SimulEvalRecord>& records);

}  // namespace attnmt
