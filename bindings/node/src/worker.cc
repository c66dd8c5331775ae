#include "worker.h"

#include <atomic>
#include <thread>

namespace edgellm::node {
namespace {

// Threads are reused: a model's worker, a pull or a plan runs on an idle pooled thread when
// there is one. Creating a thread per model made every load pay for a new malloc arena and a
// new OpenMP team (RSS crept up over load/dispose cycles). Never destroyed (detached threads
// may still wait on them while the process exits).
struct Pool {
  std::mutex mu;
  std::condition_variable work_cv;  // a task was queued for the idle threads
  std::condition_variable done_cv;  // a task ended
  std::deque<std::function<void()>> tasks;
  int busy = 0;  // tasks queued or running
  int idle = 0;  // threads waiting for a task
};
Pool& pool() {
  static Pool* p = new Pool();
  return *p;
}
constexpr int kMaxIdle = 4;
constexpr auto kIdleExit = std::chrono::seconds(30);

std::atomic<bool> g_shutting_down{false};

void pool_thread() {
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.mu);
  for (;;) {
    if (p.tasks.empty()) {
      if (p.idle >= kMaxIdle) return;
      ++p.idle;
      const bool got = p.work_cv.wait_for(lock, kIdleExit, [&] { return !p.tasks.empty(); });
      --p.idle;
      if (!got) return;  // idle too long: let the thread go
    }
    std::function<void()> task = std::move(p.tasks.front());
    p.tasks.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // captured state is destroyed before the task counts as ended
    lock.lock();
    --p.busy;
    p.done_cv.notify_all();
  }
}

}  // namespace

void set_shutting_down() { g_shutting_down = true; }
bool shutting_down() { return g_shutting_down.load(); }

void start_thread(std::function<void()> fn) {
  Pool& p = pool();
  bool spawn = false;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.tasks.push_back(std::move(fn));
    ++p.busy;
    // Idle threads take queued tasks first; start one more only if they cannot cover them.
    spawn = p.idle < static_cast<int>(p.tasks.size());
  }
  if (spawn) {
    std::thread(pool_thread).detach();
  } else {
    p.work_cv.notify_one();
  }
}

bool wait_for_threads(std::chrono::milliseconds limit) {
  Pool& p = pool();
  std::unique_lock<std::mutex> lock(p.mu);
  return p.done_cv.wait_for(lock, limit, [&] { return p.busy == 0; });
}

std::shared_ptr<Worker> Worker::Start() {
  auto w = std::make_shared<Worker>();
  start_thread([w] { w->Loop(); });
  return w;
}

void Worker::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Worker::Close(std::function<void()> last) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    last_ = std::move(last);
  }
  cv_.notify_one();
}

void Worker::Loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return !jobs_.empty() || closing_; });
      if (jobs_.empty()) {
        job = std::move(last_);
        last_ = nullptr;
        lock.unlock();
        if (job) job();
        return;
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace edgellm::node
