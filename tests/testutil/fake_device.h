// Fake device trees: /proc and /sys files laid out as on a real device, for the real readers.
#pragma once

#include <string>

namespace testutil {

// A phone-like tree under `root`: 8 GB RAM (3 GB available), 8 CPUs in three clusters
// (4 x 1.8 GHz, 3 x 2.4 GHz, 1 x 3.0 GHz), thermal zones (cpu, gpu, battery, skin),
// a Snapdragon-style /proc/cpuinfo and a device-tree model.
void make_phone_tree(const std::string& root);
// Rewrites one thermal zone's temperature (millidegrees in the file).
void set_zone_temp(const std::string& root, int zone, double celsius);

}  // namespace testutil
