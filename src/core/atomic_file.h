// Files that appear whole or not at all: written under a temporary name beside the
// destination, flushed to disk, then renamed over it. A reader (or a crash at any moment)
// sees the old file or the whole new one, never a part, and what the user had before stays
// intact until the new file is complete.
#pragma once

#include <string>
#include <string_view>

#include "edgellm/status.h"

namespace edgellm {

// A temporary `dest + "." + tag + "." + pid` beside `dest` (the pid keeps concurrent writers
// of the same destination apart). Write it through path() with any writer (fopen,
// gguf_write_to_file, llama_model_quantize, ...), then Commit(). The destructor removes the
// temporary unless Commit() moved it into place.
//
// Thread safety: one thread at a time.
class AtomicFile {
 public:
  explicit AtomicFile(std::string dest, std::string_view tag = "partial");
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return tmp_; }  // where to write
  const std::string& dest() const { return dest_; }

  // fsyncs the temporary, renames it over dest and fsyncs the folder. `what` names the file
  // in errors ("the model", "the manifest"). kUnavailable when a step fails (the temporary is
  // removed; dest is untouched).
  Status Commit(std::string_view what);

 private:
  std::string dest_;
  std::string tmp_;
  bool committed_ = false;
};

// Creates (or truncates) `path` and writes `bytes` to it, not atomically: the building block
// for a temporary that is committed later. Errors as write_file_atomically.
Status write_bytes(const std::string& path, std::string_view bytes, std::string_view what);

// Writes `bytes` to `path` through an AtomicFile. kResourceExhausted when the bytes cannot be
// written (disk full), kUnavailable when the file cannot be created or moved into place.
Status write_file_atomically(const std::string& path, std::string_view bytes,
                             std::string_view what);

// fsyncs `tmp`, renames it to `dest` and fsyncs dest's folder: the last step of AtomicFile,
// for a temporary that outlives one call (a resumable download's `.partial`).
Status rename_into_place(const std::string& tmp, const std::string& dest, std::string_view what);

// fsyncs a folder so a rename inside it survives a power cut. Best effort.
void sync_dir(const std::string& dir);

}  // namespace edgellm
