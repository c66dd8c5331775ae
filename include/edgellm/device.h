// DeviceProfile: what this device has (RAM, CPU clusters, thermal zones, disk, SoC),
// read from procfs/sysfs. The planner and the power governor decide from it.
//
// Thread safety: read_device_profile() may be called from any thread; the profile is a value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

// CPUs that share a maximum frequency (big.LITTLE clusters on phones).
struct CpuCluster {
  int64_t max_freq_khz = 0;  // 0 when cpufreq is absent
  std::vector<int> cpus;     // logical CPU numbers
};

struct ThermalZone {
  std::string zone;     // "thermal_zone3"
  std::string type;     // "cpu-1-0-usr", "battery", "skin-therm", ...
  double temp_c = 0;    // degrees Celsius
  bool valid = false;   // false when the temperature file is missing or unreadable
};

struct DeviceProfile {
  uint64_t total_ram_bytes = 0;
  uint64_t available_ram_bytes = 0;
  int n_cpus = 0;
  // Fastest first. One cluster when cpufreq is absent (e.g. most VMs).
  std::vector<CpuCluster> clusters;
  std::vector<ThermalZone> thermal;
  std::string platform;   // /proc/cpuinfo "Hardware" or "model name"
  std::string soc_model;  // device-tree model, e.g. "Qualcomm Technologies, Inc. SM8550"
  uint64_t disk_free_bytes = 0;  // for DeviceOptions::disk_path
  std::string disk_path;

  // CPUs in the fastest cluster: the thread count the seed advises (never more).
  int big_cores() const;
  // Hottest valid zone, or -273.15 when there is none.
  double max_temp_c() const;
};

struct DeviceOptions {
  // Read /proc and /sys under this directory instead of "/" (fixture trees). Default "".
  std::string root;
  // Where models will be stored (a real path, not under root); its free space is reported.
  // Default ".".
  std::string disk_path = ".";
};

// Reads the profile. kUnavailable when /proc/meminfo or the CPU list cannot be read
// (the message names the file); a missing cpufreq, thermal or SoC entry is not an error.
Result<DeviceProfile> read_device_profile(const DeviceOptions& options = {});

}  // namespace edgellm
