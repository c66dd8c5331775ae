// The bounded GGUF reader behind check_gguf_file (store-private): the format's constants, byte
// sources (memory, or a file through one pread window) and the Checker, whose header and KV
// checks live in gguf_check.cc and tensor-table checks in gguf_check_tensors.cc.
#pragma once

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "edgellm/gguf_check.h"

namespace edgellm::store {

// Fields are read by memcpy: GGUF v2/v3 as written by llama.cpp are little-endian, as are
// the devices edgellm targets.
static_assert(std::endian::native == std::endian::little, "GGUF fields are read by memcpy");

// GGUF value types (gguf.h's enum gguf_type; the numbers are the file format).
// clang-format off
enum : uint32_t {
  kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64
};
// clang-format on
constexpr uint32_t kTypeCount = kF64 + 1;
// Bytes of a scalar of each type; 0 for string and array.
constexpr uint64_t kValueSize[kTypeCount] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

constexpr uint64_t kMaxKeyBytes = 65535;
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;  // ggml's GGUF_MAX_STRING_LENGTH
constexpr uint64_t kMaxArrayElems = uint64_t{1} << 30;   // ggml's GGUF_MAX_ARRAY_ELEMENTS
constexpr uint64_t kMaxArchBytes = 256;
// The fewest bytes one KV (8-byte key length, 1-byte key, type, 1-byte value) and one
// tensor record (name length, 1-byte name, n_dims, one dim, type, offset) can take.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorBytes = 8 + 1 + 4 + 8 + 4 + 8;
// A count that cannot fit in the bytes left is called corrupt above this, and a sign of
// truncation below it (real files have tens of KVs and up to a few thousand tensors).
constexpr uint64_t kSaneCount = uint64_t{1} << 20;

// Bytes as text for a message: printable ASCII kept, the rest as \xNN, at most 64 shown.
inline std::string printable(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (s.size() > 64) out += "...";
  return out;
}

// Random access to the file's bytes. REQUIRES: off + n <= the size the caller checked.
class Source {
 public:
  virtual ~Source() = default;
  virtual bool read(uint64_t off, void* dst, size_t n) = 0;  // false: I/O error
};

class MemorySource : public Source {
 public:
  explicit MemorySource(const uint8_t* data) : data_(data) {}
  bool read(uint64_t off, void* dst, size_t n) override {
    if (n) std::memcpy(dst, data_ + off, n);
    return true;
  }

 private:
  const uint8_t* data_;
};

// pread through one 64 KiB window: a vocabulary's 150k tiny strings cost a few hundred
// system calls, and memory stays at the window whatever the file claims.
class FileSource : public Source {
 public:
  explicit FileSource(int fd) : fd_(fd), buf_(kWindow) {}
  bool read(uint64_t off, void* dst, size_t n) override {
    if (off >= win_off_ && off + n <= win_off_ + win_len_) {
      if (n) std::memcpy(dst, buf_.data() + (off - win_off_), n);
      return true;
    }
    if (n > kWindow) return pread_full(off, dst, n) == n;
    win_off_ = off;
    win_len_ = pread_full(off, buf_.data(), kWindow);  // may stop short at the end of file
    if (win_len_ < n) return false;                    // the file shrank under us
    std::memcpy(dst, buf_.data(), n);
    return true;
  }

 private:
  static constexpr size_t kWindow = size_t{64} << 10;
  size_t pread_full(uint64_t off, void* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      const ssize_t r =
          ::pread(fd_, static_cast<char*>(dst) + got, n - got, static_cast<off_t>(off + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    return got;
  }
  int fd_;
  std::vector<char> buf_;
  uint64_t win_off_ = 0;
  size_t win_len_ = 0;
};

struct TensorRec {
  uint64_t index, offset, nbytes;
  uint64_t offset_pos;  // where its .offset field is in the file
  std::string field;    // "tensor[i] name"
};

// Length of a well-known tokenizer array, and which KV held it.
struct KnownArray {
  bool present = false;
  uint64_t n = 0, kv_offset = 0;
  std::string field;
};

class Checker {
 public:
  Checker(Source* src, uint64_t size, std::string name)
      : src_(src), size_(size), name_(std::move(name)) {
    r_.summary.file_bytes = size;
  }
  GgufCheckResult Run() {
    if (header() && kvs() && tensors() && layout()) r_.status = Status::Ok();
    return std::move(r_);
  }

 private:
  uint64_t remaining() const { return size_ - pos_; }
  std::string field(const char* suffix) const {
    std::string f = ctx_;
    if (elem_ >= 0) {  // appended piecewise: "[" + to_string() trips GCC 12's -Wrestrict
      f += '[';
      f += std::to_string(elem_);
      f += ']';
    }
    f += suffix;
    return f;
  }

  // Records the first problem; always returns false so callers can `return fail(...)`.
  bool fail(GgufError e, const std::string& where, const std::string& what) {
    r_.error = e;
    r_.field = where;
    r_.offset = field_start_;
    std::string advice;
    switch (e) {
      case GgufError::kBadMagic:
        advice = "edgellm loads .gguf files; convert the model to GGUF first";
        break;
      case GgufError::kBadVersion:
        advice = "convert or fetch the model again as GGUF v3 (little-endian)";
        break;
      case GgufError::kTruncated:
        advice = "the file was cut short (an interrupted download or copy); fetch the model again";
        break;
      case GgufError::kDataOutOfFile:
        advice =
            "the file is shorter than its tensor table says (an interrupted download or "
            "copy?); fetch the model again";
        break;
      default:
        advice = "the file is damaged; fetch the model again";
    }
    r_.status = Status::CorruptData(name_ + ": " + where + ": " + what + " (at byte " +
                                    std::to_string(field_start_) + "): " + advice);
    return false;
  }
  bool io_fail() {
    r_.error = GgufError::kIo;
    r_.field = field("");
    r_.offset = pos_;
    r_.status = Status::Unavailable("cannot read " + name_ + " at byte " + std::to_string(pos_) +
                                    " (" + std::strerror(errno) +
                                    "; did it change while being read?): check the file");
    return false;
  }

  // kTruncated unless the n bytes of the field `suffix` are in the file.
  bool need(uint64_t n, const char* suffix) {
    if (n <= remaining()) return true;
    return fail(GgufError::kTruncated, field(suffix),
                "the file ends " + std::to_string(remaining()) + " bytes into this " +
                    std::to_string(n) + "-byte field");
  }
  bool read_raw(void* dst, size_t n, const char* suffix) {
    field_start_ = pos_;
    if (!need(n, suffix)) return false;
    if (!src_->read(pos_, dst, n)) return io_fail();
    pos_ += n;
    return true;
  }
  template <typename T>
  bool read(T* v, const char* suffix) {  // a little-endian host: see the static_assert
    return read_raw(v, sizeof(T), suffix);
  }
  // Moves past `n` bytes that the caller promised are there (checked with room()).
  void skip(uint64_t n) { pos_ += n; }
  // Whether `count` items of at least `each` bytes fit in what is left.
  bool room(uint64_t count, uint64_t each) const { return count <= remaining() / each; }
  bool truncated_before(const std::string& where, uint64_t count, const char* what) {
    return fail(GgufError::kTruncated, where,
                "declares " + std::to_string(count) + " " + what + " but the file ends " +
                    std::to_string(remaining()) + " bytes later");
  }

  bool header();
  bool kvs();
  bool kv(uint64_t i);
  bool key(std::string* k);
  bool well_known(const std::string& k, uint32_t type);
  bool value(uint32_t type, const std::string& k);
  bool string_value(uint64_t max, std::string* keep);
  bool array(const std::string& k);
  bool tensors();
  bool tensor(uint64_t i);
  bool layout();

  Source* src_;
  const uint64_t size_;
  const std::string name_;
  uint64_t pos_ = 0;
  uint64_t field_start_ = 0;  // where the field being read starts
  uint64_t kv_start_ = 0;     // where the KV being read starts
  std::string ctx_;           // "kv[3] tokenizer.ggml.tokens", "tensor[2] output.weight", or ""
  int64_t elem_ = -1;         // array element being read, or -1
  GgufCheckResult r_;
  std::set<std::string> keys_, tensor_names_;  // bounded by the bytes really read
  std::vector<TensorRec> tensors_;
  KnownArray tokens_, scores_, token_types_;
};

}  // namespace edgellm::store
