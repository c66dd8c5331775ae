#include "core/env.h"

#include <dirent.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace edgellm {

Result<std::string> Env::ReadFile(const std::string& path) const {
  const std::string full = Resolve(path);
  std::ifstream f(full, std::ios::binary);
  if (!f) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return Status::NotFound(full + " does not exist");
    return Status::Unavailable("cannot read " + full + ": " + std::strerror(err));
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Status::Unavailable("error reading " + full);
  return ss.str();
}

Result<std::string> Env::ReadLine(const std::string& path) const {
  Result<std::string> all = ReadFile(path);
  if (!all.ok()) return all.status();
  std::string s = all.value().substr(0, all.value().find('\n'));
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) || s.back() == '\0')) {
    s.pop_back();
  }
  return s;
}

std::vector<std::string> Env::ListDir(const std::string& path) const {
  std::vector<std::string> names;
  DIR* d = ::opendir(Resolve(path).c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.emplace_back(e->d_name);
    }
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Result<uint64_t> Env::FreeDiskBytes(const std::string& path) const {
  struct statvfs st {};
  const std::string& full = path;  // a real path: disks are not part of fixture trees
  if (::statvfs(full.c_str(), &st) != 0) {
    return Status::Unavailable("cannot check free space of " + full + ": " +
                               std::strerror(errno));
  }
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace edgellm
