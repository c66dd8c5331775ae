// SHA-256 over bytes and files (OpenSSL EVP), as lowercase hex.
//
// Thread safety: every function and every Sha256 object is independent; an object is used
// by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "edgellm/status.h"

namespace edgellm::store {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(const void* data, size_t n);
  std::string HexDigest();  // finishes; the object must not be updated afterwards

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string sha256_hex(const void* data, size_t n);
// Hash of `length` bytes of `path` from `offset` (length UINT64_MAX = to the end of file).
// kNotFound / kUnavailable when the file cannot be read, kCorruptData when it is shorter.
Result<std::string> sha256_file(const std::string& path, uint64_t offset = 0,
                                uint64_t length = UINT64_MAX);

}  // namespace edgellm::store
