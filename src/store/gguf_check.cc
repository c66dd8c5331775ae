// Our own GGUF header reader, bounded by the bytes the file really has (see gguf_check.h).
// ggml's gguf_init_from_file is not used here: it sizes containers from counts it has not
// fully checked, and it accepts files that crash libllama later (a tokenizer of the wrong
// type, a bool of 2); this reader is the gate those files meet first.
#include "edgellm/gguf_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/sys.h"
#include "ggml.h"
#include "store/gguf_reader.h"

namespace edgellm {
namespace store {

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

}  // namespace store

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
  store::MemorySource src(data);
  return store::Checker(&src, data ? size : 0, name).Run();
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
  store::FileSource src(fd);
  r = store::Checker(&src, static_cast<uint64_t>(st.st_size), path).Run();
  ::close(fd);
  return r;
}

}  // namespace edgellm
