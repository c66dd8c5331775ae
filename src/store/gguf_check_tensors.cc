// Checker's tensor table checks: names, shapes, types, offsets, and the data layout (inside
// the file, aligned, no overlaps).
// GCC 12 at -O3 reports a false -Wrestrict inside std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <algorithm>
#include <string>
#include <vector>

#include "ggml.h"
#include "store/gguf_reader.h"

namespace edgellm::store {

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

}  // namespace edgellm::store
