// The public API's torch-free part: version, model-file format and scores
// (include/attnmt/version.h, include/attnmt/score.h).
#include <attnmt/score.h>
#include <attnmt/version.h>

#include "eval/metrics.h"
#include "io/model_format.h"

namespace attnmt {

const char* version() { return ATTNMT_VERSION_STRING; }

int model_format_version() { return static_cast<int>(kModelFormat); }

Scores score(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  const BleuResult bleu = corpus_bleu(hypotheses, references);
  const ChrfResult chrf = corpus_chrf(hypotheses, references);
  Scores s;
  s.bleu = bleu.score;
  s.bleu_counts = bleu.counts;
  s.bleu_totals = bleu.totals;
  s.bleu_precisions = bleu.precisions;
  s.bp = bleu.bp;
  s.sys_len = bleu.sys_len;
  s.ref_len = bleu.ref_len;
  s.chrf = chrf.score;
  s.bleu_signature = bleu.signature();
  s.chrf_signature = chrf.signature();
  s.bleu_line = bleu.format();
  s.chrf_line = chrf.format();
  return s;
}

}  // namespace attnmt
