// Owning pointers for ggml and gguf contexts, and writing a GGUF atomically (engine-private).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "edgellm/status.h"

#include "ggml.h"
#include "gguf.h"

namespace edgellm {

struct GgufFree {
  void operator()(gguf_context* g) const { gguf_free(g); }
};
struct GgmlFree {
  void operator()(ggml_context* c) const { ggml_free(c); }
};
using GgufPtr = std::unique_ptr<gguf_context, GgufFree>;
using GgmlPtr = std::unique_ptr<ggml_context, GgmlFree>;

// Writes `g` (metadata and tensor data) to `path` through a temporary file in the same folder,
// flushed to disk, then renamed: readers see the old file or the whole new one, never a part.
// `what` names the file in errors ("the model", "the imatrix").
inline Status write_gguf_atomically(const gguf_context* g, const std::string& path,
                                    const std::string& what) {
  const std::string tmp = path + ".partial." + std::to_string(::getpid());
  if (!gguf_write_to_file(g, tmp.c_str(), false)) {
    std::remove(tmp.c_str());
    return Status::ResourceExhausted("writing " + what + " to " + tmp +
                                     " failed: check the folder exists and the disk has room");
  }
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!synced || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::Unavailable("cannot move " + what + " into place at " + path + ": " + why);
  }
  return Status::Ok();
}

}  // namespace edgellm
