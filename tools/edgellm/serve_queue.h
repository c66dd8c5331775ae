// `edgellm serve`'s order of work: one generation at a time, FIFO, with a bounded number of
// waiters (Turnstile), and the one thread every model call runs on (EngineThread).
//
// Why one thread. ggml's CPU backend is built here with OpenMP, and GNU libgomp keeps a pool of
// worker threads for each thread that starts a parallel region. Once the process holds more of
// those threads than there are CPUs, libgomp stops spinning between regions and sleeps on a
// futex instead, and every ggml barrier (one per graph node) becomes a wake-up. httplib runs
// each connection on one of its pool threads; decoding there gave each of them an OpenMP pool,
// and a 26-token reply of the 2.9M-parameter copying model took 19 ms against llama-server's
// 14 ms (25,600 context switches a second against 6,200; docs/speculative.md). Loading, warming
// up and every decode on one thread keep one pool, as llama-server's main loop does.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

namespace cli {

// One generation at a time, FIFO, with a bounded number of waiters.
class Turnstile {
 public:
  explicit Turnstile(int max_waiting) : max_waiting_(max_waiting) {}
  // False when the queue is full.
  bool Enter() {
    std::unique_lock<std::mutex> l(mu_);
    if (busy_ && waiting_ >= max_waiting_) return false;
    const uint64_t ticket = next_ticket_++;
    ++waiting_;
    cv_.wait(l, [&] { return !busy_ && ticket == serving_; });
    --waiting_;
    busy_ = true;
    return true;
  }
  void Leave() {
    {
      std::lock_guard<std::mutex> l(mu_);
      busy_ = false;
      ++serving_;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int max_waiting_;
  int waiting_ = 0;
  bool busy_ = false;
  uint64_t next_ticket_ = 0, serving_ = 0;
};

// A thread that runs the calls handed to it, in order. Run() waits for the call's result (an
// exception it throws reaches the caller). Never call Run() from inside a call it runs.
class EngineThread {
 public:
  EngineThread() : thread_([this] { Loop(); }) {}
  ~EngineThread() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  EngineThread(const EngineThread&) = delete;
  EngineThread& operator=(const EngineThread&) = delete;

  template <class F>
  std::invoke_result_t<F&> Run(F&& fn) {
    std::packaged_task<std::invoke_result_t<F&>()> task(std::forward<F>(fn));
    auto done = task.get_future();
    {
      std::lock_guard<std::mutex> l(mu_);
      jobs_.emplace_back([&task] { task(); });
    }
    cv_.notify_one();
    return done.get();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_, and nothing left to run
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      job();
      l.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace cli
