// Where a decode's time goes (translate --profile, attnmt bench): wall time split into phases,
// each phase's own time (a phase entered inside another is not counted twice: the outer one
// pauses). Off unless enabled: a PhaseScope then costs one relaxed load.
//   tokenize   SentencePiece in and out, and the batches' tensors
//   encoder    the encoder and the attention's per-sentence preparation (keys)
//   attention  the attention's step: scores, weights, context
//   recurrent  the decoder step without its attention: embeddings, RNN cells, the combine layer
//   output     the output layer's product
//   search     everything else in the search: the log-softmax (fused into the top-k pass where it
//              can be, decoding/candidates.h), candidates, beams, finished hypotheses
// Thread-safe: times add up over threads (with several workers, the phases sum to more than the
// wall time).
#pragma once
#include <array>
#include <chrono>
#include <cstdint>

namespace attnmt {

enum class DecodePhase { kTokenize, kEncoder, kAttention, kRecurrent, kOutput, kSearch, kCount };
constexpr size_t kDecodePhases = static_cast<size_t>(DecodePhase::kCount);

const char* decode_phase_name(DecodePhase phase);
void enable_decode_phases(bool on);
bool decode_phases_enabled();
// Seconds per phase since the last reset.
std::array<double, kDecodePhases> decode_phase_seconds();
// Times each phase was entered since the last reset: `output` once per decoder step of each model,
// `encoder` once per batch encoded (a stream's: once per read) (translate --profile's stats).
std::array<int64_t, kDecodePhases> decode_phase_entries();
void reset_decode_phases();

class PhaseScope {
 public:
  explicit PhaseScope(DecodePhase phase);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  bool on_;
  int outer_ = -1;  // the phase this one interrupted (-1: none)
};

}  // namespace attnmt
