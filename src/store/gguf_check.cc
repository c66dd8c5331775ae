// Our own GGUF header reader, bounded by the bytes the file really has (see gguf_check.h).
// ggml's gguf_init_from_file is not used here: it sizes containers from counts it has not
// fully checked, and it accepts files that crash libllama later (a tokenizer of the wrong
// type, a bool of 2); this reader is the gate those files meet first.
#include "edgellm/gguf_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "core/sys.h"
#include "ggml.h"

namespace edgellm {
namespace {

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
std::string printable(const std::string& s) {
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

bool Checker::header() {
  char magic[4] = {};
  const size_t got = static_cast<size_t>(std::min<uint64_t>(size_, 4));
  if (got && !src_->read(0, magic, got)) return io_fail();
  if (std::memcmp(magic, "GGUF", got) != 0) {
    static const char* kHex = "0123456789abcdef";
    std::string hex;
    for (size_t i = 0; i < got; ++i) {
      hex += kHex[static_cast<unsigned char>(magic[i]) >> 4];
      hex += kHex[static_cast<unsigned char>(magic[i]) & 15];
    }
    return fail(GgufError::kBadMagic, "magic",
                "not a GGUF model (first bytes " + hex + ", expected 47475546 \"GGUF\")");
  }
  if (got < 4) {
    return fail(GgufError::kTruncated, "magic",
                got == 0 ? "the file is empty (0 bytes)" : "the file ends inside the magic");
  }
  pos_ = 4;
  uint32_t version = 0;
  if (!read(&version, "version")) return false;
  r_.summary.version = version;
  if (version != 2 && version != 3) {
    std::string what = "GGUF version " + std::to_string(version);
    if (version != 0 && (version & 0xffff) == 0) {
      what += " reads as a byte-swapped small number: a big-endian GGUF";
    } else if (version == 1) {
      what += " is obsolete";
    }
    return fail(GgufError::kBadVersion, "version", what + "; this build reads versions 2 and 3");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  if (!read(&n_tensors, "n_tensors")) return false;
  if (!read(&n_kv, "n_kv")) return false;
  r_.summary.n_tensors = n_tensors;
  r_.summary.n_kv = n_kv;
  // Both loops below stop at the first truncated field, so a count that merely exceeds the
  // bytes left is reported there, at the exact field; only absurd counts are refused here.
  if (!room(n_tensors, kMinTensorBytes) && n_tensors > kSaneCount) {
    field_start_ = 8;
    return fail(GgufError::kTooManyTensors, "n_tensors",
                std::to_string(n_tensors) + " tensors declared, but the " +
                    std::to_string(remaining()) + " bytes after the header hold at most " +
                    std::to_string(remaining() / kMinTensorBytes));
  }
  if (!room(n_kv, kMinKvBytes) && n_kv > kSaneCount) {
    field_start_ = 16;
    return fail(GgufError::kTooManyKv, "n_kv",
                std::to_string(n_kv) + " key-value pairs declared, but the " +
                    std::to_string(remaining()) + " bytes after the header hold at most " +
                    std::to_string(remaining() / kMinKvBytes));
  }
  return true;
}

bool Checker::kvs() {
  for (uint64_t i = 0; i < r_.summary.n_kv; ++i) {
    if (!kv(i)) return false;
  }
  // llama.cpp indexes scores and token types by token id.
  for (const KnownArray* a : {&scores_, &token_types_}) {
    if (tokens_.present && a->present && a->n != tokens_.n) {
      field_start_ = a->kv_offset;
      return fail(GgufError::kBadMetadata, a->field,
                  "has " + std::to_string(a->n) + " entries but tokenizer.ggml.tokens has " +
                      std::to_string(tokens_.n));
    }
  }
  return true;
}

bool Checker::key(std::string* k) {
  uint64_t len = 0;
  if (!read(&len, " key")) return false;
  if (len == 0) return fail(GgufError::kBadKey, field(" key"), "the key is empty");
  if (len > kMaxKeyBytes) {
    return fail(GgufError::kBadKey, field(" key"),
                "key length " + std::to_string(len) + " exceeds 65535 bytes");
  }
  if (len > remaining()) return truncated_before(field(" key"), len, "key bytes");
  k->resize(static_cast<size_t>(len));
  if (!read_raw(k->data(), k->size(), " key")) return false;
  for (char c : *k) {
    if (c < 0x20 || c > 0x7e) {
      return fail(GgufError::kBadKey, field(" key"),
                  "key \"" + printable(*k) + "\" is not printable ASCII");
    }
  }
  if (!keys_.insert(*k).second) {
    return fail(GgufError::kDuplicateKey, field(" ") + *k, "the key appears twice");
  }
  return true;
}

bool Checker::kv(uint64_t i) {
  kv_start_ = pos_;
  ctx_ = "kv[" + std::to_string(i) + "]";
  std::string k;
  if (!key(&k)) return false;
  ctx_ += " " + k;
  uint32_t type = 0;
  if (!read(&type, " .type")) return false;
  if (type >= kTypeCount) {
    return fail(GgufError::kBadValueType, field(" .type"),
                "value type " + std::to_string(type) + " is not a GGUF type (0..12)");
  }
  return value(type, k);
}

// The keys whose wrong type crashes or confuses libllama: their value type, and for arrays
// the element type (checked by array()).
struct WellKnown {
  const char* key;
  uint32_t type, element;
  GgufError error;
  const char* what;
};
constexpr WellKnown kWellKnown[] = {
    {"general.alignment", kU32, 0, GgufError::kBadAlignment, "uint32"},
    {"general.architecture", kString, 0, GgufError::kBadMetadata, "a string"},
    {"tokenizer.ggml.tokens", kArray, kString, GgufError::kBadMetadata, "an array of strings"},
    {"tokenizer.ggml.merges", kArray, kString, GgufError::kBadMetadata, "an array of strings"},
    {"tokenizer.ggml.scores", kArray, kF32, GgufError::kBadMetadata, "an array of float32"},
    {"tokenizer.ggml.token_type", kArray, kI32, GgufError::kBadMetadata, "an array of int32"},
};

const WellKnown* find_well_known(const std::string& k) {
  for (const WellKnown& w : kWellKnown) {
    if (k == w.key) return &w;
  }
  return nullptr;
}

bool Checker::well_known(const std::string& k, uint32_t type) {
  const WellKnown* w = find_well_known(k);
  if (w && type != w->type) {
    return fail(w->error, field(""),
                k + " must be " + w->what + ", its value has type " + std::to_string(type));
  }
  return true;
}

bool Checker::value(uint32_t type, const std::string& k) {
  if (!well_known(k, type)) return false;
  if (type == kArray) return array(k);
  if (type == kString) {
    const bool arch = k == "general.architecture";
    return string_value(arch ? kMaxArchBytes : kMaxStringBytes,
                        arch ? &r_.summary.architecture : nullptr);
  }
  if (type == kBool || k == "general.alignment") {
    uint32_t v = 0;  // a bool is 1 byte, the alignment 4 (little-endian: v holds either)
    if (!read_raw(&v, static_cast<size_t>(kValueSize[type]), "")) return false;
    if (type == kBool && v > 1) {
      return fail(GgufError::kBadValue, field(""), "bool value " + std::to_string(v));
    }
    if (type == kU32) {  // general.alignment
      if (v == 0 || (v & (v - 1)) != 0) {
        return fail(GgufError::kBadAlignment, field(""),
                    "alignment " + std::to_string(v) + " is not a nonzero power of two");
      }
      r_.summary.alignment = v;
    }
    return true;
  }
  const uint64_t n = kValueSize[type];
  if (!need(n, "")) return false;
  skip(n);
  return true;
}

// A string value; kept in `keep` when non-null (then at most `max` bytes are allowed).
bool Checker::string_value(uint64_t max, std::string* keep) {
  uint64_t len = 0;
  if (!read(&len, "")) return false;
  if (len > kMaxStringBytes) {
    return fail(GgufError::kBadString, field(""),
                "string length " + std::to_string(len) + " exceeds 1 GiB");
  }
  if (len > remaining()) return truncated_before(field(""), len, "string bytes");
  if (keep) {
    if (len > max) {
      return fail(GgufError::kBadMetadata, field(""),
                  "string of " + std::to_string(len) + " bytes, at most " + std::to_string(max));
    }
    keep->resize(static_cast<size_t>(len));
    return read_raw(keep->data(), keep->size(), "");
  }
  skip(len);
  return true;
}

bool Checker::array(const std::string& k) {
  uint32_t et = 0;
  uint64_t n = 0;
  if (!read(&et, " .element_type")) return false;
  if (et == kArray) {
    return fail(GgufError::kBadArray, field(" .element_type"), "arrays of arrays are not read");
  }
  if (et >= kTypeCount) {
    return fail(GgufError::kBadValueType, field(" .element_type"),
                "element type " + std::to_string(et) + " is not a GGUF type (0..12)");
  }
  if (const WellKnown* w = find_well_known(k); w && et != w->element) {
    return fail(w->error, field(""),
                k + " must be " + w->what + ", its elements have type " + std::to_string(et));
  }
  KnownArray* known = k == "tokenizer.ggml.tokens"       ? &tokens_
                      : k == "tokenizer.ggml.scores"     ? &scores_
                      : k == "tokenizer.ggml.token_type" ? &token_types_
                                                         : nullptr;
  if (!read(&n, " .count")) return false;
  if (n > kMaxArrayElems) {
    return fail(GgufError::kBadArray, field(" .count"),
                "array of " + std::to_string(n) + " elements exceeds 2^30");
  }
  const uint64_t each = et == kString ? 8 : kValueSize[et];
  if (!room(n, each)) return truncated_before(field(" .count"), n, "array elements");
  if (known) *known = KnownArray{true, n, kv_start_, field("")};
  if (et == kString) {
    for (uint64_t j = 0; j < n; ++j) {
      elem_ = static_cast<int64_t>(j);
      if (!string_value(kMaxStringBytes, nullptr)) return false;
    }
    elem_ = -1;
  } else if (et == kBool) {
    uint8_t chunk[4096];
    for (uint64_t j = 0; j < n;) {
      const size_t m = static_cast<size_t>(std::min<uint64_t>(n - j, sizeof(chunk)));
      if (!read_raw(chunk, m, "")) return false;
      for (size_t b = 0; b < m; ++b) {
        if (chunk[b] > 1) {
          elem_ = static_cast<int64_t>(j + b);
          return fail(GgufError::kBadValue, field(""), "bool value " + std::to_string(chunk[b]));
        }
      }
      j += m;
    }
  } else {
    skip(n * each);
  }
  return true;
}

bool Checker::tensors() {
  for (uint64_t i = 0; i < r_.summary.n_tensors; ++i) {
    if (!tensor(i)) return false;
  }
  return true;
}

bool Checker::tensor(uint64_t i) {
  static const char* kNe[GGML_MAX_DIMS] = {" .ne[0]", " .ne[1]", " .ne[2]", " .ne[3]"};
  ctx_ = "tensor[" + std::to_string(i) + "]";
  uint64_t len = 0;
  if (!read(&len, " .name")) return false;
  if (len == 0 || len >= GGML_MAX_NAME) {
    return fail(GgufError::kBadTensorName, field(" .name"),
                "name length " + std::to_string(len) + ", ggml allows 1.." +
                    std::to_string(GGML_MAX_NAME - 1));
  }
  std::string name(static_cast<size_t>(len), '\0');
  if (!read_raw(name.data(), name.size(), " .name")) return false;
  if (name.find('\0') != std::string::npos) {
    return fail(GgufError::kBadTensorName, field(" .name"),
                "name \"" + printable(name) + "\" contains a NUL byte");
  }
  ctx_ += " " + printable(name);
  if (!tensor_names_.insert(name).second) {
    return fail(GgufError::kDuplicateTensor, field(" .name"), "the tensor name appears twice");
  }
  uint32_t n_dims = 0;
  if (!read(&n_dims, " .n_dims")) return false;
  if (n_dims < 1 || n_dims > GGML_MAX_DIMS) {
    return fail(GgufError::kBadDims, field(" .n_dims"),
                "n_dims " + std::to_string(n_dims) + ", expected 1..4");
  }
  int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};
  int64_t n_elem = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    if (!read(&ne[d], kNe[d])) return false;
    if (ne[d] <= 0) {
      return fail(GgufError::kBadDims, field(kNe[d]), "dimension " + std::to_string(ne[d]));
    }
    if (n_elem > INT64_MAX / ne[d]) {
      return fail(GgufError::kShapeOverflow, field(kNe[d]),
                  "the element count overflows 63 bits at this dimension");
    }
    n_elem *= ne[d];
  }
  int32_t type = 0;
  if (!read(&type, " .type")) return false;
  const bool known = type >= 0 && type < GGML_TYPE_COUNT;
  const size_t type_size = known ? ggml_type_size(static_cast<ggml_type>(type)) : 0;
  const int64_t blck = known ? ggml_blck_size(static_cast<ggml_type>(type)) : 0;
  if (type_size == 0 || blck <= 0) {
    return fail(GgufError::kBadTensorType, field(" .type"),
                "ggml type " + std::to_string(type) + " is unknown to this build or removed");
  }
  if (ne[0] % blck != 0) {
    return fail(GgufError::kBadDims, field(kNe[0]),
                std::to_string(ne[0]) + " elements per row, not a multiple of " +
                    ggml_type_name(static_cast<ggml_type>(type)) + "'s block of " +
                    std::to_string(blck));
  }
  const uint64_t blocks = static_cast<uint64_t>(n_elem / blck);
  if (blocks > static_cast<uint64_t>(INT64_MAX) / type_size) {
    return fail(GgufError::kShapeOverflow, field(" .type"),
                "the size in bytes of " + std::to_string(blocks) + " blocks of " +
                    std::to_string(type_size) + " overflows 63 bits");
  }
  uint64_t offset = 0;
  if (!read(&offset, " .offset")) return false;
  if (offset % r_.summary.alignment != 0) {
    return fail(GgufError::kMisalignedOffset, field(" .offset"),
                "data offset " + std::to_string(offset) + " is not a multiple of the alignment " +
                    std::to_string(r_.summary.alignment));
  }
  tensors_.push_back(TensorRec{i, offset, blocks * type_size, field_start_, ctx_});
  return true;
}

bool Checker::layout() {
  ctx_.clear();
  GgufSummary& s = r_.summary;
  const uint64_t header_end = pos_;
  // ggml pads the header to the alignment only when tensor data follows (vocab files end
  // right after their last KV).
  if (tensors_.empty()) {
    s.data_offset = header_end;
    return true;
  }
  s.data_offset = header_end + (s.alignment - header_end % s.alignment) % s.alignment;
  if (s.data_offset > size_) {
    field_start_ = header_end;
    return fail(GgufError::kTruncated, "padding before the tensor data",
                "the file ends at byte " + std::to_string(size_) +
                    ", before the tensor data starts at byte " + std::to_string(s.data_offset));
  }
  const uint64_t avail = size_ - s.data_offset;
  for (const TensorRec& t : tensors_) {
    if (t.offset > avail || t.nbytes > avail - t.offset) {
      field_start_ = t.offset_pos;
      return fail(GgufError::kDataOutOfFile, t.field + " .offset",
                  "its " + std::to_string(t.nbytes) + " bytes at data offset " +
                      std::to_string(t.offset) + " reach past the end of the file (" +
                      std::to_string(avail) + " bytes of data after byte " +
                      std::to_string(s.data_offset) + ")");
    }
    s.data_bytes = std::max(s.data_bytes, t.offset + t.nbytes);
  }
  // Sorted by offset, any overlap shows between neighbours.
  std::vector<const TensorRec*> order;
  order.reserve(tensors_.size());
  for (const TensorRec& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorRec* a, const TensorRec* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->index < b->index;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorRec& a = *order[k - 1];
    const TensorRec& b = *order[k];
    if (a.offset + a.nbytes > b.offset) {
      field_start_ = b.offset_pos;
      return fail(GgufError::kOverlap, b.field + " .offset",
                  "its data at offset " + std::to_string(b.offset) + " overlaps " + a.field +
                      " (offsets " + std::to_string(a.offset) + ".." +
                      std::to_string(a.offset + a.nbytes) + ")");
    }
  }
  return true;
}

}  // namespace

const char* gguf_error_name(GgufError error) {
  // clang-format off
  static const char* kNames[] = {
      "none", "io", "truncated", "bad_magic", "bad_version", "too_many_tensors", "too_many_kv",
      "bad_string", "bad_key", "duplicate_key", "bad_value_type", "bad_value", "bad_array",
      "bad_alignment", "bad_tensor_name", "duplicate_tensor", "bad_dims", "bad_tensor_type",
      "shape_overflow", "misaligned_offset", "data_out_of_file", "overlap", "bad_metadata"};
  // clang-format on
  static_assert(sizeof(kNames) / sizeof(kNames[0]) ==
                static_cast<size_t>(GgufError::kBadMetadata) + 1);
  const auto i = static_cast<size_t>(error);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "unknown";
}

GgufCheckResult check_gguf_bytes(const uint8_t* data, size_t size, const std::string& name) {
  MemorySource src(data);
  return Checker(&src, data ? size : 0, name).Run();
}

GgufCheckResult check_gguf_file(const std::string& path) {
  GgufCheckResult r;
  r.error = GgufError::kIo;
  Result<uint64_t> size = regular_file_size(path, "model file");
  if (!size.ok()) {
    r.status = size.status();
    return r;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    r.status = Status::Unavailable("cannot open " + path + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return r;
  }
  FileSource src(fd);
  r = Checker(&src, static_cast<uint64_t>(st.st_size), path).Run();
  ::close(fd);
  return r;
}

}  // namespace edgellm
