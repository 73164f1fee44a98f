// SIGINT and SIGTERM: taken by one thread of their own, never by a thread at work.
//
// A signal handler runs on whichever thread the kernel picks, on that thread's stack, in the
// middle of whatever it is doing. Training that got SIGTERM during an update crashed now and then
// (glibc: "corrupted double-linked list", inside oneDNN's sgemm in the backward pass; 4 runs in
// 100 here, 0 in 250 with this), although the handler did nothing but store the signal number.
// So the two signals are blocked in every thread from the start of main(), and one thread takes
// them with sigwait(): no thread is ever interrupted by them. That thread records a signal for whoever asked (a
// StopSignals, e.g. the trainer, which saves a checkpoint at the end of its update and stops),
// and otherwise ends the process as the signal's default action would (or ignores it, where the
// process started with it ignored).
#pragma once
#include <atomic>
#include <csignal>

namespace attnmt {

// Blocks SIGINT and SIGTERM in the calling thread, and so in every thread it starts afterwards,
// and starts the thread that waits for them. Call it first thing in main(), before LibTorch,
// OpenMP or oneDNN start threads: a thread started earlier keeps the signals unblocked. Calls
// after the first do nothing. A child of fork() starts over: the mask from before, nothing taken.
void take_stop_signals_on_own_thread();

// The signal mask the process had before take_stop_signals_on_own_thread(): posix_spawn (which
// runs no fork handlers) starts run_child's children with it, not with SIGINT and SIGTERM blocked.
sigset_t signal_mask_for_children();

// While one is alive, SIGINT and SIGTERM are recorded (received() is the last one) instead of
// ending the process. One at a time. Starts the signal thread if main() did not.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  int received() const;  // 0 until a signal arrives, then SIGINT or SIGTERM
  int take();            // received(), and back to 0

 private:
  friend void deliver_stop_signal(int sig);
  std::atomic<int> signal_{0};
};

}  // namespace attnmt
