#include "edgellm/platform.h"

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

}  // namespace edgellm
