#include "util/signals.h"

#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <thread>

namespace attnmt {

void deliver_stop_signal(int sig);  // StopSignals' friend: records sig or takes the default action

namespace {

std::mutex g_mutex;  // guards all of the below
bool g_installed = false;
bool g_atfork_registered = false;
sigset_t g_stop_set;         // SIGINT, SIGTERM
sigset_t g_mask_before;      // the mask before they were blocked
bool g_ignored[NSIG] = {};   // the disposition at the start was SIG_IGN
StopSignals* g_active = nullptr;

// What the signal would have done had it not been blocked: nothing when the process started with
// it ignored (bash starts background jobs with SIGINT ignored), else end the process by it, so a
// parent sees "killed by signal N" as before.
void default_action(int sig) {
  if (g_ignored[sig]) return;
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);  // to this thread, which now has it unblocked: the process ends here
}

void wait_for_signals() {
  for (;;) {
    int sig = 0;
    if (sigwait(&g_stop_set, &sig) != 0) continue;
    deliver_stop_signal(sig);
  }
}

// A child of fork() (without exec) has one thread, not the signal thread: it starts again like a
// fresh process, with the mask from before and nothing installed.
void before_fork() { g_mutex.lock(); }
void after_fork_in_parent() { g_mutex.unlock(); }
void after_fork_in_child() {
  if (g_installed) pthread_sigmask(SIG_SETMASK, &g_mask_before, nullptr);
  g_installed = false;
  g_active = nullptr;
  g_mutex.unlock();
}

void install() {  // with g_mutex held
  if (g_installed) return;
  if (!g_atfork_registered) {
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    g_atfork_registered = true;
  }
  sigemptyset(&g_stop_set);
  sigaddset(&g_stop_set, SIGINT);
  sigaddset(&g_stop_set, SIGTERM);
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    sigaction(sig, nullptr, &current);
    g_ignored[sig] = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN;
  }
  if (const int rc = pthread_sigmask(SIG_BLOCK, &g_stop_set, &g_mask_before); rc != 0) {
    std::fprintf(stderr, "attnmt: warning: cannot block SIGINT/SIGTERM: %s\n", std::strerror(rc));
    return;
  }
  std::thread(wait_for_signals).detach();  // started with the signals blocked, as sigwait needs
  g_installed = true;
}

}  // namespace

void deliver_stop_signal(int sig) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_active != nullptr) {
    g_active->signal_.store(sig);
  } else {
    default_action(sig);
  }
}

void take_stop_signals_on_own_thread() {
  std::lock_guard<std::mutex> lock(g_mutex);
  install();
}

sigset_t signal_mask_for_children() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_installed) return g_mask_before;
  sigset_t current;
  pthread_sigmask(SIG_SETMASK, nullptr, &current);
  return current;
}

StopSignals::StopSignals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  install();
  g_active = this;
}

StopSignals::~StopSignals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_active == this) g_active = nullptr;
}

int StopSignals::received() const { return signal_.load(); }

int StopSignals::take() { return signal_.exchange(0); }

}  // namespace attnmt
