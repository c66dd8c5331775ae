#include "edgellm/platform.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#ifndef EDGELLM_VERSION
#define EDGELLM_VERSION "0.0.0"
#endif
#if defined(EDGELLM_LLAMA_TAG) && defined(EDGELLM_LLAMA_COMMIT)
#define EDGELLM_LLAMA_BUILD EDGELLM_LLAMA_TAG " (" EDGELLM_LLAMA_COMMIT ")"
#else
#define EDGELLM_LLAMA_BUILD "unknown"
#endif

namespace edgellm {
const char* version() { return EDGELLM_VERSION; }
const char* llama_build() { return EDGELLM_LLAMA_BUILD; }

bool TuneAllocator(long threshold_bytes) {
#if defined(__GLIBC__)
  const int t = threshold_bytes > 0 && threshold_bytes < (1L << 30)
                    ? static_cast<int>(threshold_bytes)
                    : 128 * 1024;
  // Setting either value turns off glibc's dynamic adjustment of both.
  return mallopt(M_TRIM_THRESHOLD, t) == 1 && mallopt(M_MMAP_THRESHOLD, t) == 1;
#else
  (void)threshold_bytes;
  return false;
#endif
}
}  // namespace edgellm
