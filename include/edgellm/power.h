// PowerGovernor: keeps a generation cool and interruptible (the seed's §4.2).
//  - Thermal: above `thermal_limit_c` (default 42 °C) the session drops to fewer threads; it
//    restores them once the hottest zone is `hysteresis_c` below the limit.
//  - Yield: an optional sleep after each streamed batch leaves the CPU to the UI.
//  - Pause/Resume (e.g. screen off): generation parks between tokens, state intact.
//  - Platform thermal level: where the OS hands the app a level instead of sysfs (HarmonyOS
//    `@ohos.thermal` ThermalLevel, Android's thermal status), SetThermalLevel(0..6) replaces
//    the sysfs reading:  level        threads             yield per batch
//                        0 COOL       all                 yield_ms
//                        1 NORMAL     all                 yield_ms
//                        2 WARM       all                 max(yield_ms, 5 ms)
//                        3 HOT        reduced_threads     max(yield_ms, 10 ms)
//                        4 OVERHEATED 1                   max(yield_ms, 20 ms)
//                        5 WARNING    1                   max(yield_ms, 50 ms)
//                        6 EMERGENCY  parked until the level drops below 6 (or a cancel)
//    SetThermalLevel(-1) goes back to reading sysfs.
// Every change applies between decode steps and is reported in Stats.
//
// Thread safety: Pause(), Resume(), paused(), SetThermalLevel() and thermal_level() may be
// called from any thread; the rest is
// called by the generating thread. One governor may serve one generation at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "edgellm/status.h"

namespace edgellm {

struct GovernorOptions {
  double thermal_limit_c = 42.0;  // at or above: reduce threads. Default 42 (the seed's choice)
  double hysteresis_c = 3.0;      // restore below limit - hysteresis. Default 3
  // Threads while hot; -1 = half the session's threads (at least 1). Default -1.
  int32_t reduced_threads = -1;
  int32_t yield_ms = 0;           // sleep after each streamed piece; 0 = off. Default 0
  int32_t check_every_tokens = 8; // how often temperatures are read. Default 8
  // Read /sys/class/thermal under this root ("" = the real one). Default "".
  std::string sysfs_root;
};

class PowerGovernor {
 public:
  explicit PowerGovernor(GovernorOptions options = {}) : o_(std::move(options)) {}

  void Pause();
  void Resume();
  bool paused() const { return paused_.load(); }
  // The platform's thermal level, 0 (COOL) .. 6 (EMERGENCY), or -1 for none (read sysfs).
  // kInvalidArgument outside -1..6. Applies at the next token.
  Status SetThermalLevel(int32_t level);
  int32_t thermal_level() const { return platform_level_.load(); }

  // --- used by Session::Generate ---
  // Threads to use now for a session configured with `normal` threads. Reads the thermal
  // zones at most every check_every_tokens calls.
  int32_t ThreadsFor(int32_t normal);
  // The pause after each streamed batch: options().yield_ms, raised by the thermal level.
  int32_t YieldMs() const;
  // Blocks while paused (or at thermal level 6); returns the milliseconds spent parked.
  // Returns early when `cancel` becomes true.
  double WaitWhilePaused(const std::atomic<bool>& cancel);
  const GovernorOptions& options() const { return o_; }
  double last_temp_c() const { return last_temp_c_; }
  bool hot() const { return hot_; }

 private:
  GovernorOptions o_;
  std::atomic<bool> paused_{false};
  std::atomic<int32_t> platform_level_{-1};
  std::mutex mu_;
  std::condition_variable cv_;
  int32_t calls_ = 0;
  bool hot_ = false;
  double last_temp_c_ = -273.15;
};

}  // namespace edgellm
