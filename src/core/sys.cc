#include "core/sys.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "edgellm/platform.h"

namespace edgellm {

Result<uint64_t> regular_file_size(const std::string& path, const char* what) {
  if (path.empty()) return Status::InvalidArgument(std::string(what) + " path is empty");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return Status::NotFound(std::string(what) + " not found: " + path +
                              ": check the path (edgellm synth can create a test model)");
    }
    return Status::Unavailable(std::string("cannot open ") + what + " " + path + ": " +
                               std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(path + " is a directory, not a " + what +
                                   ": pass the path of the .gguf file inside it");
  }
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + " is not a regular file: pass a .gguf file");
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return Status::Unavailable(std::string(what) + " " + path +
                               " is not readable: check its permissions");
  }
  return static_cast<uint64_t>(st.st_size);
}

int64_t proc_status_bytes(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t klen = std::strlen(key);
  while (std::getline(f, line)) {
    if (line.compare(0, klen, key) == 0 && line.size() > klen && line[klen] == ':') {
      std::istringstream is(line.substr(klen + 1));
      int64_t kb = 0;
      is >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

int64_t current_rss_bytes() { return proc_status_bytes("VmRSS"); }
int64_t peak_rss_bytes() { return proc_status_bytes("VmHWM"); }

int32_t physical_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  const unsigned n = std::thread::hardware_concurrency();
  for (unsigned cpu = 0; cpu < std::max(n, 1u) * 4; ++cpu) {
    const std::string base = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
    std::ifstream pkg(base + "physical_package_id"), core(base + "core_id");
    if (!pkg || !core) continue;
    std::string p, c;
    pkg >> p;
    core >> c;
    cores.emplace(p, c);
  }
  if (!cores.empty()) return static_cast<int32_t>(cores.size());
  return n > 0 ? static_cast<int32_t>(n) : 1;
}

}  // namespace edgellm
