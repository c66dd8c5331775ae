// Native threads of the binding: one Worker (a FIFO of jobs on its own thread) per model, and
// one-shot tasks for store and planner calls, all on a pool of reusable detached threads. Every
// task is counted so that the cleanup at exit can wait for them before the addon is unloaded.
//
// Thread safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

namespace edgellm::node {

class Worker {
 public:
  static std::shared_ptr<Worker> Start();
  // Queues a job. Ignored after Close().
  void Post(std::function<void()> job);
  // After the jobs already queued, runs `last` (may be empty) and ends the thread. The first
  // call wins; later calls are ignored.
  void Close(std::function<void()> last);

 private:
  void Loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::function<void()> last_;
  bool closing_ = false;
};

// Runs `fn` on a pooled thread (an idle one, or a new one), counted until it returns.
void start_thread(std::function<void()> fn);

// Waits until every counted task has ended, at most `limit`. False on timeout.
bool wait_for_threads(std::chrono::milliseconds limit);

// Set once the process or environment is going away: the JS thread no longer takes items, so
// Channel::Post stops waiting for queue space and drops them.
void set_shutting_down();
bool shutting_down();

}  // namespace edgellm::node
