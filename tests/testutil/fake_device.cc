#include "testutil/fake_device.h"

#include <filesystem>
#include <string>

#include "testutil/fixtures.h"

namespace fs = std::filesystem;

namespace testutil {
namespace {

void put(const std::string& root, const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(root + path).parent_path());
  write_file(root + path, content);
}

}  // namespace

void make_phone_tree(const std::string& root) {
  put(root, "/proc/meminfo",
      "MemTotal:        8388608 kB\nMemFree:          512000 kB\n"
      "MemAvailable:    3145728 kB\nBuffers:           10240 kB\n");
  put(root, "/proc/cpuinfo",
      "processor\t: 0\nBogoMIPS\t: 38.40\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n\n"
      "Hardware\t: Qualcomm Technologies, Inc SM8550\n");
  put(root, "/proc/device-tree/model", std::string("Qualcomm Technologies, Inc. SM8550 MTP\0", 39));
  const int khz[8] = {1800000, 1800000, 1800000, 1800000, 2400000, 2400000, 2400000, 3000000};
  for (int cpu = 0; cpu < 8; ++cpu) {
    put(root, "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/cpufreq/cpuinfo_max_freq",
        std::to_string(khz[cpu]) + "\n");
  }
  put(root, "/sys/devices/system/cpu/online", "0-7\n");
  const char* types[4] = {"cpu-1-0-usr", "gpuss-0-usr", "battery", "skin-therm"};
  const int temps[4] = {38500, 36000, 31000, 33200};
  for (int z = 0; z < 4; ++z) {
    const std::string dir = "/sys/class/thermal/thermal_zone" + std::to_string(z);
    put(root, dir + "/type", std::string(types[z]) + "\n");
    put(root, dir + "/temp", std::to_string(temps[z]) + "\n");
  }
  put(root, "/sys/class/thermal/cooling_device0/type", "thermal-cpufreq-0\n");
}

void set_zone_temp(const std::string& root, int zone, double celsius) {
  put(root, "/sys/class/thermal/thermal_zone" + std::to_string(zone) + "/temp",
      std::to_string(static_cast<long>(celsius * 1000)) + "\n");
}

}  // namespace testutil
