#include <cstdio>
#include <cstring>
#include <memory>

#include "core/sys.h"
#include "engine/llama_glue.h"
#include "engine/model_impl.h"
#include "gguf.h"

namespace edgellm {
namespace {

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
struct GgufFree {
  void operator()(gguf_context* g) const { gguf_free(g); }
};

std::string hex_prefix(const unsigned char* b, size_t n) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kHex[b[i] >> 4];
    s += kHex[b[i] & 15];
  }
  return s;
}

}  // namespace

Status precheck_gguf(const std::string& path, uint64_t* file_bytes) {
  Result<uint64_t> size = regular_file_size(path, "model file");
  if (!size.ok()) return size.status();
  *file_bytes = *size;
  if (*size == 0) {
    return Status::CorruptData(path + " is empty (0 bytes): the download or copy did not "
                                      "finish; fetch the model again");
  }
  std::unique_ptr<FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  if (!f) return Status::Unavailable("cannot open " + path + ": " + std::strerror(errno));
  unsigned char head[8] = {};
  const size_t got = std::fread(head, 1, sizeof(head), f.get());
  if (got < 4 || std::memcmp(head, "GGUF", 4) != 0) {
    return Status::CorruptData(path + " is not a GGUF model (first bytes " +
                               hex_prefix(head, got) +
                               "): edgellm loads .gguf files; convert the model to GGUF first");
  }
  if (got < 8) return Status::CorruptData(path + " is truncated inside the GGUF header");
  uint32_t version = 0;
  std::memcpy(&version, head + 4, 4);
  if (version < 2 || version > 3) {
    return Status::CorruptData(path + " has GGUF version " + std::to_string(version) +
                               ", this build reads versions 2 and 3");
  }
  f.reset();

  engine::ensure_backend();
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  std::unique_ptr<gguf_context, GgufFree> g(gguf_init_from_file(path.c_str(), params));
  if (!g) {
    const std::string why = engine::take_llama_errors();
    return Status::CorruptData(path + " has a malformed or truncated GGUF header" +
                               (why.empty() ? std::string() : " (" + why + ")") +
                               ": the file is damaged; fetch it again");
  }
  const uint64_t data_offset = gguf_get_data_offset(g.get());
  uint64_t data_end = data_offset;
  const int64_t n = gguf_get_n_tensors(g.get());
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t end = data_offset + gguf_get_tensor_offset(g.get(), i) +
                         gguf_get_tensor_size(g.get(), i);
    if (end > data_end) data_end = end;
  }
  if (data_end > *size) {
    return Status::CorruptData(path + " is truncated: its tensors need " +
                               std::to_string(data_end) + " bytes, the file has " +
                               std::to_string(*size) + ": fetch the model again");
  }
  return Status::Ok();
}

}  // namespace edgellm
