#include <algorithm>
#include <string>
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

namespace {
constexpr int32_t kEmergency = 6;
}  // namespace

Status PowerGovernor::SetThermalLevel(int32_t level) {
  if (level < -1 || level > kEmergency) {
    return Status::InvalidArgument("thermal level " + std::to_string(level) +
                                   " is outside 0 (COOL) .. 6 (EMERGENCY), or -1 for none");
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    platform_level_.store(level);
  }
  cv_.notify_all();  // a generation parked at EMERGENCY re-checks
  return Status::Ok();
}

int32_t PowerGovernor::YieldMs() const {
  static constexpr int32_t kLevelYieldMs[] = {0, 0, 5, 10, 20, 50, 50};
  const int32_t level = platform_level_.load();
  return level < 0 ? o_.yield_ms : std::max(o_.yield_ms, kLevelYieldMs[level]);
}

int32_t PowerGovernor::ThreadsFor(int32_t normal) {
  const int32_t level = platform_level_.load();
  if (level >= 0) {  // the platform's level replaces sysfs
    hot_ = level >= 3;
    if (level <= 2) return normal;
    if (level >= 4) return 1;
    const int32_t reduced = o_.reduced_threads > 0 ? o_.reduced_threads : normal / 2;
    return std::clamp(reduced, 1, normal);
  }
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
  const auto parked = [this] { return paused_.load() || platform_level_.load() >= kEmergency; };
  if (!parked()) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lk(mu_);
  while (parked() && !cancel.load()) {
    // Wakes on Resume(); the timeout lets a Cancel() (which does not know this governor)
    // end the wait within 10 ms.
    cv_.wait_for(lk, std::chrono::milliseconds(10));
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace edgellm
