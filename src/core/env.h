// Env: the one door to platform files (sysfs, procfs) and disk space.
//
// Every path is given as on a real device ("/sys/class/thermal/..."); an Env with a root
// reads it under that root instead, so tests run the real readers on fixture trees (a fake
// phone) with the same code that reads /sys in production.
//
// Thread safety: const methods may be called concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

class Env {
 public:
  // root "" (default) = the real filesystem.
  explicit Env(std::string root = "") : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  // `path` under the root.
  std::string Resolve(const std::string& path) const { return root_ + path; }
  // The whole file (sysfs files are small). kNotFound / kUnavailable with the resolved path.
  Result<std::string> ReadFile(const std::string& path) const;
  // First line without trailing whitespace.
  Result<std::string> ReadLine(const std::string& path) const;
  // Names in a directory (no "." / ".."), sorted; empty when missing.
  std::vector<std::string> ListDir(const std::string& path) const;
  // Bytes available to an unprivileged writer on the filesystem holding `path` (statvfs).
  // `path` is a real path, never under the root.
  Result<uint64_t> FreeDiskBytes(const std::string& path) const;

 private:
  std::string root_;
};

}  // namespace edgellm
