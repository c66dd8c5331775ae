#include <algorithm>
#include <thread>

#include "device/thermal.h"
#include "edgellm/power.h"

namespace edgellm {

void PowerGovernor::Pause() { paused_.store(true); }

void PowerGovernor::Resume() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    paused_.store(false);
  }
  cv_.notify_all();
}

int32_t PowerGovernor::ThreadsFor(int32_t normal) {
  if (calls_++ % std::max(1, o_.check_every_tokens) == 0) {
    double hottest = -273.15;
    for (const ThermalZone& z : read_thermal_zones(Env(o_.sysfs_root))) {
      if (z.valid) hottest = std::max(hottest, z.temp_c);
    }
    last_temp_c_ = hottest;
    if (!hot_ && hottest >= o_.thermal_limit_c) hot_ = true;
    if (hot_ && hottest < o_.thermal_limit_c - o_.hysteresis_c) hot_ = false;
  }
  if (!hot_) return normal;
  const int32_t reduced = o_.reduced_threads > 0 ? o_.reduced_threads : normal / 2;
  return std::clamp(reduced, 1, normal);
}

double PowerGovernor::WaitWhilePaused(const std::atomic<bool>& cancel) {
  if (!paused_.load()) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  while (paused_.load() && !cancel.load()) {
    // Wakes on Resume(); the timeout lets a Cancel() (which does not know this governor)
    // end the wait within 10 ms.
    cv_.wait_for(lk, std::chrono::milliseconds(10));
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace edgellm
