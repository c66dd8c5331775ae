// Structural validation of a GGUF file before libllama parses it.
//
// A model that arrives from outside (a download, a copy from another device) may be cut
// short or damaged anywhere. ggml's reader trusts some of the counts it reads; this
// validator reads the header and tensor table itself, through a bounded reader, and checks
// every count, length, type, shape and offset against the bytes the file really has.
//
// Bounds: memory use is independent of the counts a file claims (nothing is allocated or
// looped from a count before that count is checked against the remaining bytes; array
// elements are never stored); the work is linear in the header's real size. Tensor data
// is never read.
//
// Thread safety: the functions are pure (apart from reading the file) and may run
// concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "edgellm/status.h"

namespace edgellm {

// The first problem a check found. kNone: the file is structurally valid.
enum class GgufError : int32_t {
  kNone = 0,
  kIo,              // the file is missing, not a regular file, or unreadable (status
                    // kNotFound, kInvalidArgument or kUnavailable, as for Model::Load)
  kTruncated,       // the file ends inside a field, or before what its counts declare
  kBadMagic,        // not "GGUF"
  kBadVersion,      // not 2 or 3 (v1 is obsolete; a byte-swapped version is big-endian)
  kTooManyTensors,  // n_tensors is more than any file of this size could hold
  kTooManyKv,       // n_kv is more than any file of this size could hold
  kBadString,       // a string length past any sane limit (1 GiB)
  kBadKey,          // a key that is empty, longer than 65535 bytes, or not printable ASCII
  kDuplicateKey,
  kBadValueType,   // a value type outside the GGUF enum
  kBadValue,       // a value its type forbids (bool other than 0/1)
  kBadArray,       // array of arrays, or an element count past any sane limit (2^30)
  kBadAlignment,   // general.alignment not uint32, zero, or not a power of two
  kBadTensorName,  // empty, >= 64 bytes (ggml's limit) or containing NUL
  kDuplicateTensor,
  kBadDims,           // n_dims outside 1..4, a dim <= 0, or ne[0] not a multiple of the block
  kBadTensorType,     // a ggml type this build does not know, or a removed one
  kShapeOverflow,     // element count or byte size does not fit in 63 bits
  kMisalignedOffset,  // a tensor offset not a multiple of the alignment
  kDataOutOfFile,     // a tensor's bytes reach past the end of the file
  kOverlap,           // two tensors share bytes
  kBadMetadata,       // a well-known key with the wrong type (general.architecture, tokenizer.*)
};

// Stable snake_case name, e.g. "truncated".
const char* gguf_error_name(GgufError error);

// What the header says. Filled as far as the check got; complete when error is kNone.
struct GgufSummary {
  uint32_t version = 0;
  uint64_t n_kv = 0;
  uint64_t n_tensors = 0;
  uint64_t alignment = 32;   // general.alignment, or GGUF's default 32
  uint64_t data_offset = 0;  // start of the tensor data (header end rounded up to alignment)
  uint64_t data_bytes = 0;   // from data_offset to the end of the last tensor
  uint64_t file_bytes = 0;
  std::string architecture;  // general.architecture; empty when absent
};

struct GgufCheckResult {
  GgufError error = GgufError::kNone;
  // The field where the problem is, e.g. "kv[3] tokenizer.ggml.tokens" or
  // "tensor[12] blk.0.attn_q.weight .offset". Empty when error is kNone.
  std::string field;
  uint64_t offset = 0;  // byte offset in the file where the field starts
  // Ok when error is kNone. Otherwise kCorruptData (see kIo for the exceptions) with a
  // message that names the file and the field, says what is wrong and what to do.
  Status status;
  GgufSummary summary;

  bool ok() const { return error == GgufError::kNone; }
};

// Checks the file at `path`, reading only its header and tensor table (pread, 64 KiB buffer).
GgufCheckResult check_gguf_file(const std::string& path);

// Checks `size` bytes at `data` (e.g. for a fuzzer). `name` stands for the file in messages.
GgufCheckResult check_gguf_bytes(const uint8_t* data, size_t size,
                                 const std::string& name = "GGUF buffer");

}  // namespace edgellm
