#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace edgellm {
namespace {

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

AtomicFile::AtomicFile(std::string dest, std::string_view tag)
    : dest_(std::move(dest)),
      tmp_(dest_ + "." + std::string(tag) + "." + std::to_string(::getpid())) {}

AtomicFile::~AtomicFile() {
  if (!committed_) std::remove(tmp_.c_str());
}

Status AtomicFile::Commit(std::string_view what) {
  Status st = rename_into_place(tmp_, dest_, what);
  committed_ = st.ok();
  return st;
}

Status rename_into_place(const std::string& tmp, const std::string& dest, std::string_view what) {
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return Status::Unavailable("cannot flush " + std::string(what) + " at " + tmp + " to disk: " +
                               errno_text(err));
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), dest.c_str()) != 0) {
    return Status::Unavailable("cannot move " + std::string(what) + " into place at " + dest +
                               ": " + errno_text(errno));
  }
  sync_dir(parent_of(dest));
  return Status::Ok();
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

Status write_bytes(const std::string& path, std::string_view bytes, std::string_view what) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Unavailable("cannot create " + path + ": " + errno_text(errno));
  size_t done = 0;
  int err = 0;
  while (done < bytes.size() && err == 0) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC;
    } else {
      done += static_cast<size_t>(n);
    }
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    return Status::ResourceExhausted("writing " + std::string(what) + " to " + path + " failed (" +
                                     errno_text(err) + "): free some disk space and retry");
  }
  return Status::Ok();
}

Status write_file_atomically(const std::string& path, std::string_view bytes,
                             std::string_view what) {
  AtomicFile file(path);
  EDGELLM_RETURN_IF_ERROR(write_bytes(file.path(), bytes, what));
  return file.Commit(what);
}

}  // namespace edgellm
