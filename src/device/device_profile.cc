#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/env.h"
#include "device/thermal.h"
#include "edgellm/device.h"

namespace edgellm {
namespace {

// "MemTotal:  8388608 kB" -> bytes; 0 when absent.
uint64_t meminfo_bytes(const std::string& meminfo, const std::string& key) {
  std::istringstream is(meminfo);
  std::string line;
  while (std::getline(is, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0) {
      return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10) * 1024;
    }
  }
  return 0;
}

// The value of the first "Key : value" line of /proc/cpuinfo whose key is `key`.
std::string cpuinfo_value(const std::string& cpuinfo, const std::string& key) {
  std::istringstream is(cpuinfo);
  std::string line;
  while (std::getline(is, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    while (!k.empty() && std::isspace(static_cast<unsigned char>(k.back()))) k.pop_back();
    if (k != key) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return {};
}

bool parse_int(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end == s.c_str()) return false;
  *out = v;
  return true;
}

std::vector<int> cpu_numbers(const Env& env) {
  std::vector<int> cpus;
  for (const std::string& name : env.ListDir("/sys/devices/system/cpu")) {
    if (name.size() > 3 && name.compare(0, 3, "cpu") == 0 &&
        std::all_of(name.begin() + 3, name.end(), [](char c) { return std::isdigit(c); })) {
      cpus.push_back(std::atoi(name.c_str() + 3));
    }
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

std::vector<CpuCluster> cpu_clusters(const Env& env, const std::vector<int>& cpus) {
  std::map<int64_t, CpuCluster, std::greater<>> by_freq;
  for (int cpu : cpus) {
    int64_t khz = 0;
    Result<std::string> f = env.ReadLine("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                                         "/cpufreq/cpuinfo_max_freq");
    if (!f.ok() || !parse_int(f.value(), &khz) || khz < 0) khz = 0;
    CpuCluster& c = by_freq[khz];
    c.max_freq_khz = khz;
    c.cpus.push_back(cpu);
  }
  std::vector<CpuCluster> out;
  for (auto& [khz, c] : by_freq) out.push_back(std::move(c));
  return out;
}

}  // namespace

std::vector<ThermalZone> read_thermal_zones(const Env& env) {
  std::vector<ThermalZone> zones;
  for (const std::string& name : env.ListDir("/sys/class/thermal")) {
    if (name.compare(0, 12, "thermal_zone") != 0) continue;
    ThermalZone z;
    z.zone = name;
    const std::string dir = "/sys/class/thermal/" + name;
    Result<std::string> type = env.ReadLine(dir + "/type");
    z.type = type.ok() ? type.value() : "";
    Result<std::string> temp = env.ReadLine(dir + "/temp");
    int64_t milli = 0;
    if (temp.ok() && parse_int(temp.value(), &milli)) {
      // Millidegrees by convention; a few drivers report whole degrees.
      z.temp_c = (milli > 1000 || milli < -1000) ? milli / 1000.0 : static_cast<double>(milli);
      z.valid = z.temp_c > -100 && z.temp_c < 200;
    }
    zones.push_back(std::move(z));
  }
  return zones;
}

int DeviceProfile::big_cores() const {
  return clusters.empty() ? 0 : static_cast<int>(clusters.front().cpus.size());
}

double DeviceProfile::max_temp_c() const {
  double t = -273.15;
  for (const ThermalZone& z : thermal) {
    if (z.valid) t = std::max(t, z.temp_c);
  }
  return t;
}

Result<DeviceProfile> read_device_profile(const DeviceOptions& options) {
  const Env env(options.root);
  DeviceProfile p;
  Result<std::string> meminfo = env.ReadFile("/proc/meminfo");
  if (!meminfo.ok()) {
    return Status::Unavailable("cannot read the device's memory size: " +
                               meminfo.status().message());
  }
  p.total_ram_bytes = meminfo_bytes(meminfo.value(), "MemTotal");
  p.available_ram_bytes = meminfo_bytes(meminfo.value(), "MemAvailable");
  if (p.total_ram_bytes == 0) {
    return Status::CorruptData(env.Resolve("/proc/meminfo") + " has no MemTotal line");
  }
  const std::vector<int> cpus = cpu_numbers(env);
  if (cpus.empty()) {
    return Status::Unavailable("no CPUs listed under " + env.Resolve("/sys/devices/system/cpu"));
  }
  p.n_cpus = static_cast<int>(cpus.size());
  p.clusters = cpu_clusters(env, cpus);
  p.thermal = read_thermal_zones(env);
  Result<std::string> cpuinfo = env.ReadFile("/proc/cpuinfo");
  if (cpuinfo.ok()) {
    p.platform = cpuinfo_value(cpuinfo.value(), "Hardware");
    if (p.platform.empty()) p.platform = cpuinfo_value(cpuinfo.value(), "model name");
  }
  for (const char* path : {"/proc/device-tree/model", "/sys/firmware/devicetree/base/model"}) {
    Result<std::string> model = env.ReadLine(path);
    if (model.ok() && !model.value().empty()) {
      p.soc_model = model.value();
      break;
    }
  }
  p.disk_path = options.disk_path;
  Result<uint64_t> free = env.FreeDiskBytes(options.disk_path);
  if (!free.ok()) return free.status();
  p.disk_free_bytes = free.value();
  return p;
}

}  // namespace edgellm
