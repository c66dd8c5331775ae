// Small platform helpers: file facts, procfs readings, monotonic time.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "edgellm/status.h"

namespace edgellm {

// Size of a regular file. kNotFound when missing, kInvalidArgument when it is a
// directory or not a regular file. `what` names the file in messages ("model file").
Result<uint64_t> regular_file_size(const std::string& path, const char* what);

// Reads a "Key:   123 kB" line of /proc/self/status, in bytes; 0 when unavailable.
int64_t proc_status_bytes(const char* key);

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace edgellm
