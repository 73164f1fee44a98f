#include "util/decode_phases.h"

#include <atomic>

namespace attnmt {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> enabled{false};
std::array<std::atomic<int64_t>, kDecodePhases> nanoseconds{};
std::array<std::atomic<int64_t>, kDecodePhases> entries{};

// The phase running on this thread and since when its current stretch runs.
thread_local int current = -1;
thread_local Clock::time_point since;

void charge(int phase, Clock::time_point now) {
  if (phase < 0) return;
  nanoseconds[static_cast<size_t>(phase)].fetch_add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - since).count(), std::memory_order_relaxed);
}

}  // namespace

const char* decode_phase_name(DecodePhase phase) {
  switch (phase) {
    case DecodePhase::kTokenize: return "tokenize";
    case DecodePhase::kEncoder: return "encoder";
    case DecodePhase::kAttention: return "attention";
    case DecodePhase::kRecurrent: return "recurrent";
    case DecodePhase::kOutput: return "output";
    case DecodePhase::kSearch: return "search";
    case DecodePhase::kCount: break;
  }
  return "?";
}

void enable_decode_phases(bool on) { enabled.store(on, std::memory_order_relaxed); }
bool decode_phases_enabled() { return enabled.load(std::memory_order_relaxed); }

std::array<double, kDecodePhases> decode_phase_seconds() {
  std::array<double, kDecodePhases> out{};
  for (size_t i = 0; i < kDecodePhases; ++i) out[i] = static_cast<double>(nanoseconds[i].load()) / 1e9;
  return out;
}

std::array<int64_t, kDecodePhases> decode_phase_entries() {
  std::array<int64_t, kDecodePhases> out{};
  for (size_t i = 0; i < kDecodePhases; ++i) out[i] = entries[i].load();
  return out;
}

void reset_decode_phases() {
  for (auto& n : nanoseconds) n.store(0);
  for (auto& n : entries) n.store(0);
}

PhaseScope::PhaseScope(DecodePhase phase) : on_(decode_phases_enabled()) {
  if (!on_) return;
  const auto now = Clock::now();
  charge(current, now);
  outer_ = current;
  current = static_cast<int>(phase);
  since = now;
  entries[static_cast<size_t>(phase)].fetch_add(1, std::memory_order_relaxed);
}

PhaseScope::~PhaseScope() {
  if (!on_) return;
  const auto now = Clock::now();
  charge(current, now);
  current = outer_;
  since = now;
}

}  // namespace attnmt
