// GGUF files through ggml's gguf API: owning pointers for gguf and ggml contexts, writing a
// whole gguf_context atomically, and streaming one tensor by tensor. Shared by every folder
// that builds GGUF files (synth, train, quant) and by the engine's readers.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "core/atomic_file.h"
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

// Writes `g` (metadata and tensor data) to `path` through an AtomicFile. `what` names the file
// in errors ("the model", "the imatrix").
Status write_gguf_atomically(const gguf_context* g, const std::string& path,
                             const std::string& what);

// Writes a GGUF without holding its weights in memory: Open() writes the metadata of `g`
// (whose tensor table must be complete), then Write() appends the tensors' bytes in table
// order and EndTensor() pads each to the file's alignment. Write errors are kept and
// reported by Close().
class GgufStreamWriter {
 public:
  GgufStreamWriter() = default;
  ~GgufStreamWriter();
  GgufStreamWriter(const GgufStreamWriter&) = delete;
  GgufStreamWriter& operator=(const GgufStreamWriter&) = delete;

  Status Open(const gguf_context* g, const std::string& path);
  void Write(const void* data, size_t n);
  void EndTensor();
  bool ok() const { return ok_; }
  // Flushes and closes. kResourceExhausted naming the file and `hint` when a write failed.
  Status Close(std::string_view hint = "check free disk space");
  // The open stream (e.g. to leave the data as a hole with ftruncate).
  FILE* file() const { return f_; }

 private:
  FILE* f_ = nullptr;
  std::string path_;
  size_t align_ = 32;
  size_t data_bytes_ = 0;  // written after the metadata
  bool ok_ = true;
};

}  // namespace edgellm
