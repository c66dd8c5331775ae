#include "worker.h"

#include <atomic>
#include <thread>

namespace edgellm::node {
namespace {

std::mutex g_mu;
std::condition_variable g_cv;
int g_threads = 0;

std::atomic<bool> g_shutting_down{false};

}  // namespace

void set_shutting_down() { g_shutting_down = true; }
bool shutting_down() { return g_shutting_down.load(); }

void start_thread(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    ++g_threads;
  }
  std::thread([fn = std::move(fn)]() mutable {
    fn();
    fn = nullptr;  // captured state is destroyed before the thread counts as ended
    std::lock_guard<std::mutex> lock(g_mu);
    --g_threads;
    g_cv.notify_all();
  }).detach();
}

bool wait_for_threads(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(g_mu);
  return g_cv.wait_for(lock, limit, [] { return g_threads == 0; });
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
