// libFuzzer target for the GGUF validator (check_gguf_bytes): any input must come back with a
// verdict, never a crash, a hang or an unbounded allocation (run under ASan + UBSan with
// -rss_limit_mb). A verdict of "valid" must also be self-consistent.
#include <cstdint>
#include <cstdlib>

#include "edgellm/gguf_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const edgellm::GgufCheckResult r = edgellm::check_gguf_bytes(data, size, "fuzz input");
  if (r.ok()) {
    const edgellm::GgufSummary& s = r.summary;
    // A valid file's tensor data lies inside it, after an aligned header.
    if (s.data_offset > size || s.data_bytes > size - s.data_offset) std::abort();
    if (s.alignment == 0 || (s.alignment & (s.alignment - 1)) != 0) std::abort();
    if (!r.status.ok() || !r.field.empty()) std::abort();
  } else if (r.status.ok() || r.field.empty() && size > 0) {
    std::abort();  // a rejection always says why and where
  }
  return 0;
}
