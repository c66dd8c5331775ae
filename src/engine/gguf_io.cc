#include "engine/gguf_io.h"

#include <cerrno>
#include <cstring>
#include <vector>

namespace edgellm {

Status write_gguf_atomically(const gguf_context* g, const std::string& path,
                             const std::string& what) {
  AtomicFile file(path);
  if (!gguf_write_to_file(g, file.path().c_str(), false)) {
    return Status::ResourceExhausted("writing " + what + " to " + file.path() +
                                     " failed: check the folder exists and the disk has room");
  }
  return file.Commit(what);
}

GgufStreamWriter::~GgufStreamWriter() {
  if (f_) std::fclose(f_);
}

Status GgufStreamWriter::Open(const gguf_context* g, const std::string& path) {
  path_ = path;
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) return Status::Unavailable("cannot create " + path + ": " + std::strerror(errno));
  align_ = gguf_get_alignment(g);
  std::vector<uint8_t> meta(gguf_get_meta_size(g));
  gguf_get_meta_data(g, meta.data());
  ok_ = std::fwrite(meta.data(), 1, meta.size(), f_) == meta.size();
  return Status::Ok();
}

void GgufStreamWriter::Write(const void* data, size_t n) {
  if (!ok_ || n == 0) return;
  ok_ = std::fwrite(data, 1, n, f_) == n;
  data_bytes_ += n;
}

void GgufStreamWriter::EndTensor() {
  static const char kZeros[64] = {};
  const size_t pad = (align_ - data_bytes_ % align_) % align_;
  Write(kZeros, pad);
}

Status GgufStreamWriter::Close(std::string_view hint) {
  if (!f_) return Status::Unavailable("no file is open for " + path_);
  const int err_before = ok_ ? 0 : errno;
  ok_ = std::fflush(f_) == 0 && ok_;
  const int err = err_before ? err_before : errno;
  ok_ = std::fclose(f_) == 0 && ok_;
  f_ = nullptr;
  if (!ok_) {
    return Status::ResourceExhausted("writing " + path_ + " failed (" + std::strerror(err) +
                                     "): " + std::string(hint));
  }
  return Status::Ok();
}

}  // namespace edgellm
