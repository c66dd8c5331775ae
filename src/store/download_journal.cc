#include "store/download_journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>

#include "core/atomic_file.h"
#include "core/env.h"
#include "store/sha256.h"

namespace edgellm::store {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

Status write_all(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return write_error(errno, path, "writing");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

std::string parent_dir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(1, '.') : dir;
}

}  // namespace

Status write_error(int err, const std::string& path, const std::string& what) {
  if (err == ENOSPC || err == EDQUOT) {
    return Status::ResourceExhausted("disk full " + what + " " + path +
                                     ": free some space and run the download again (it resumes "
                                     "from the verified chunks)");
  }
  return Status::Unavailable("error " + what + " " + path + ": " + errno_text(err));
}

PartialFile::PartialFile(const DownloadSpec& spec)
    : spec_(spec),
      partial_path_(spec.dest + ".partial"),
      journal_path_(spec.dest + ".journal"),
      dir_(parent_dir(spec.dest)) {}

PartialFile::~PartialFile() {
  if (journal_fd_ >= 0) ::close(journal_fd_);
  if (fd_ >= 0) ::close(fd_);  // also releases the flock
}

Result<std::unique_ptr<PartialFile>> PartialFile::Open(const DownloadSpec& spec) {
  std::unique_ptr<PartialFile> p(new PartialFile(spec));
  std::error_code ec;
  std::filesystem::create_directories(p->dir_, ec);
  if (ec) return Status::Unavailable("cannot create folder " + p->dir_ + ": " + ec.message());
  p->fd_ = ::open(p->partial_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (p->fd_ < 0) return write_error(errno, p->partial_path_, "creating");
  if (::flock(p->fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status::Unavailable("another download into " + spec.dest +
                               " is running (its partial file is locked): wait for it");
  }
  EDGELLM_RETURN_IF_ERROR(p->ReadJournal());
  return p;
}

std::string PartialFile::JournalHeader() const {
  return "edgellm-journal 1 size=" + std::to_string(spec_.size) +
         " chunk_size=" + std::to_string(spec_.chunk_size) + " sha256=" + spec_.sha256 + "\n";
}

// A journal for another spec (another file or version at the same dest) is ignored: its
// entries would not verify anyway, and dropping them up front avoids hashing for nothing.
Status PartialFile::ReadJournal() {
  FILE* f = std::fopen(journal_path_.c_str(), "rb");
  if (!f) return Status::Ok();  // fresh download
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  std::fclose(f);
  const std::string header = JournalHeader();
  if (text.compare(0, header.size(), header) != 0) {
    bad_lines_ = 1;
    return Status::Ok();
  }
  std::set<int> seen;
  size_t pos = header.size();
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {  // torn last append: the chunk is fetched again
      ++bad_lines_;
      break;
    }
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    const bool digits =
        !line.empty() && line.size() <= 9 &&
        std::all_of(line.begin(), line.end(), [](char c) { return c >= '0' && c <= '9'; });
    const int idx = digits ? std::stoi(line) : -1;
    if (idx < 0 || idx >= static_cast<int>(spec_.chunks.size())) {
      ++bad_lines_;
      continue;
    }
    if (seen.insert(idx).second) journaled_.push_back(idx);
  }
  return Status::Ok();
}

Status PartialFile::Preallocate() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return write_error(errno, partial_path_, "checking");
  const uint64_t allocated =
      std::min<uint64_t>(static_cast<uint64_t>(st.st_blocks) * 512, spec_.size);
  const uint64_t needed = spec_.size - allocated;
  auto free_bytes = Env().FreeDiskBytes(dir_);
  if (!free_bytes.ok()) return free_bytes.status();
  if (*free_bytes < needed) {
    if (st.st_size == 0) ::unlink(partial_path_.c_str());  // created by this call: leave nothing
    return Status::ResourceExhausted(
        "downloading " + spec_.dest + " needs " + std::to_string(needed) + " more bytes on " +
        dir_ + " but only " + std::to_string(*free_bytes) + " are free: free " +
        std::to_string(needed - *free_bytes) + " bytes and retry");
  }
  if (static_cast<uint64_t>(st.st_size) != spec_.size &&
      ::ftruncate(fd_, static_cast<off_t>(spec_.size)) != 0) {
    return write_error(errno, partial_path_, "sizing");
  }
  // Reserve the blocks now so that running out of disk shows up here, not mid-download.
  // Filesystems without fallocate keep the sparse file from ftruncate.
  if (spec_.size > 0 && ::fallocate(fd_, 0, 0, static_cast<off_t>(spec_.size)) != 0 &&
      errno != EOPNOTSUPP && errno != ENOSYS) {
    return write_error(errno, partial_path_, "allocating");
  }
  return Status::Ok();
}

Result<std::string> PartialFile::HashRange(uint64_t offset, uint64_t length) const {
  Sha256 h;
  EDGELLM_RETURN_IF_ERROR(HashInto(&h, offset, length));
  return h.HexDigest();
}

Status PartialFile::HashInto(Sha256* h, uint64_t offset, uint64_t length) const {
  std::vector<unsigned char> buf(static_cast<size_t>(std::min<uint64_t>(length, 1 << 20)) + 1);
  uint64_t done = 0;
  while (done < length) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(length - done, buf.size()));
    const ssize_t n = ::pread(fd_, buf.data(), want, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status::Unavailable("cannot read " + partial_path_ + ": " + errno_text(errno));
    if (n == 0) return Status::CorruptData(partial_path_ + " is shorter than expected");
    h->Update(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status PartialFile::Sync() const {
  if (::fdatasync(fd_) != 0) return write_error(errno, partial_path_, "syncing");
  return Status::Ok();
}

Status PartialFile::RewriteJournal(const std::vector<int>& verified) {
  std::string text = JournalHeader();
  for (int i : verified) text += std::to_string(i) + "\n";
  EDGELLM_RETURN_IF_ERROR(write_file_atomically(journal_path_, text, "the download journal"));
  if (journal_fd_ >= 0) ::close(journal_fd_);
  journal_fd_ = ::open(journal_path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (journal_fd_ < 0) return write_error(errno, journal_path_, "opening");
  return Status::Ok();
}

// One write(2) per entry: a crash leaves either the whole line or a torn one without its
// newline, which ReadJournal() ignores.
Status PartialFile::AppendJournal(int index) {
  std::lock_guard<std::mutex> lock(journal_mu_);
  EDGELLM_RETURN_IF_ERROR(write_all(journal_fd_, std::to_string(index) + "\n", journal_path_));
  if (::fsync(journal_fd_) != 0) return write_error(errno, journal_path_, "syncing");
  return Status::Ok();
}

Status PartialFile::Commit() {
  if (::fsync(fd_) != 0) return write_error(errno, partial_path_, "syncing");
  EDGELLM_RETURN_IF_ERROR(rename_into_place(partial_path_, spec_.dest, "the download"));
  ::unlink(journal_path_.c_str());
  return Status::Ok();
}

void PartialFile::Discard() {
  ::unlink(partial_path_.c_str());
  ::unlink(journal_path_.c_str());
}

}  // namespace edgellm::store
