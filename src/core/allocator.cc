// The C library's allocator controls (edgellm/platform.h): the one place that names glibc's
// malloc extensions, so the library builds against musl (HarmonyOS's libc) unchanged.
#include "edgellm/platform.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace edgellm {

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

bool ReturnFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
  return true;
#else
  return false;
#endif
}

}  // namespace edgellm
