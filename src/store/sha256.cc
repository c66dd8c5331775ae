#include "store/sha256.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace edgellm::store {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Impl() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}
Sha256::~Sha256() = default;

void Sha256::Update(const void* data, size_t n) { EVP_DigestUpdate(impl_->ctx, data, n); }

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, size_t n) {
  Sha256 h;
  h.Update(data, n);
  return h.HexDigest();
}

Result<std::string> sha256_file(const std::string& path, uint64_t offset, uint64_t length) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    if (errno == ENOENT) return Status::NotFound("no such file: " + path);
    return Status::Unavailable("cannot read " + path + ": " + std::strerror(errno));
  }
  if (offset > 0 && fseeko(f, static_cast<off_t>(offset), SEEK_SET) != 0) {
    std::fclose(f);
    return Status::CorruptData(path + " is shorter than offset " + std::to_string(offset));
  }
  Sha256 h;
  std::vector<unsigned char> buf(1 << 20);
  uint64_t left = length;
  while (left > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    const size_t got = std::fread(buf.data(), 1, want, f);
    h.Update(buf.data(), got);
    left -= (left == UINT64_MAX) ? 0 : got;
    if (got < want) {
      const bool err = std::ferror(f);
      std::fclose(f);
      if (err) return Status::Unavailable("read error on " + path + ": " + std::strerror(errno));
      if (length != UINT64_MAX) {
        return Status::CorruptData(path + " ends before offset " + std::to_string(offset + length));
      }
      return h.HexDigest();
    }
  }
  std::fclose(f);
  return h.HexDigest();
}

}  // namespace edgellm::store
