// The two files behind a resumable download: `dest.partial` (the bytes, preallocated) and
// `dest.journal` (which chunks are verified). Format and crash reasoning: docs/download.md.
//
// Thread safety: after Open(), Fd(), HashRange(), Sync() and AppendJournal() may be called from
// several threads at once; the other methods from one thread while no other call runs.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "edgellm/download.h"
#include "edgellm/status.h"
#include "store/sha256.h"

namespace edgellm::store {

class PartialFile {
 public:
  // Opens or creates spec.dest + ".partial" and takes an exclusive lock on it (kUnavailable when
  // another download of the same dest holds it), and reads spec.dest + ".journal" if its header
  // matches this spec. Creates dest's folder when missing.
  static Result<std::unique_ptr<PartialFile>> Open(const DownloadSpec& spec);
  ~PartialFile();  // closes; keeps both files
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  const std::string& path() const { return partial_path_; }
  int Fd() const { return fd_; }
  // Chunk indices listed in the journal (in range, deduplicated), not yet re-verified.
  const std::vector<int>& journaled() const { return journaled_; }
  // Lines of the journal that were not a valid chunk index (a torn last line, garbage).
  int journal_bad_lines() const { return bad_lines_; }

  // Checks free disk space for the bytes not yet allocated, then sizes and allocates the
  // file to spec.size. kResourceExhausted says how many bytes are needed and free.
  Status Preallocate();
  // SHA-256 of [offset, offset + length) of the partial file, read back with pread.
  Result<std::string> HashRange(uint64_t offset, uint64_t length) const;
  // Feeds [offset, offset + length) of the partial file, read back with pread, into `hash`.
  Status HashInto(Sha256* hash, uint64_t offset, uint64_t length) const;
  // fdatasync of the partial file.
  Status Sync() const;
  // Replaces the journal (atomically: temp file, fsync, rename) with a header and `verified`.
  Status RewriteJournal(const std::vector<int>& verified);
  // Appends one verified chunk index and fsyncs the journal.
  Status AppendJournal(int index);
  // fsync, rename partial -> dest, fsync the folder, remove the journal.
  Status Commit();
  // Removes the partial file and the journal (after a whole-file hash mismatch).
  void Discard();

 private:
  explicit PartialFile(const DownloadSpec& spec);
  Status ReadJournal();
  std::string JournalHeader() const;

  const DownloadSpec& spec_;
  std::string partial_path_, journal_path_, dir_;
  int fd_ = -1;
  int journal_fd_ = -1;
  std::mutex journal_mu_;
  std::vector<int> journaled_;
  int bad_lines_ = 0;
};

// Error text for an errno from writing `path`, with kResourceExhausted for ENOSPC/EDQUOT.
Status write_error(int err, const std::string& path, const std::string& what);

}  // namespace edgellm::store
