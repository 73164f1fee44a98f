#pragma once
// Rules of the decode keys that both the config's checks and the translator apply.
#include <algorithm>

namespace attnmt {

// The hypotheses minimum Bayes risk compares (decode.mbr_candidates): that many samples with
// decode.sampling; else that many of the beam's hypotheses, 0 = the whole beam.
inline int mbr_candidate_count(bool sampling, int mbr_candidates, int beam_size) {
  if (sampling) return std::max(mbr_candidates, 1);
  return mbr_candidates > 0 ? std::min(mbr_candidates, beam_size) : beam_size;
}

}  // namespace attnmt
