// Linked into llama.cpp's llama-embedding, the reference the embedding tests and benchmark
// compare with: common's logger (which prints the vectors) is leaked on purpose and loses what
// its thread has not written yet when the process exits (llama.cpp issue #22142); under load
// the tests saw rows cut short. This stops the logger, writing everything queued, at exit.
#include <cstdlib>

#include "log.h"

namespace {

struct FlushAtExit {
  FlushAtExit() {
    std::atexit([] { common_log_pause(common_log_main()); });
  }
} flush_at_exit;

}  // namespace
