// The build and the process: versions, the allocator setting, CPU cores and resident memory.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>

namespace edgellm {
// This library's version, "0.1.0": the same as the CLI's, the npm package's and the HAR's.
// An app built against one version's headers must run with that version's libedgellm.so
// (its SONAME, libedgellm.so.MAJOR.MINOR while the major version is 0, says so).
const char* version();
// The git commit the library was built from, "6e10230c1a2b" ("unknown" outside a git checkout).
const char* git_commit();
// The llama.cpp release this build links, e.g. "v0.4.0 (80fb11a)".
const char* llama_build();

// Pins glibc malloc's trim and mmap thresholds at their 128 KiB defaults (glibc otherwise raises
// both, up to 32/64 MiB, after each large free). With the dynamic thresholds, memory freed by a
// model, a session or a released KV cache can stay resident as the untrimmed top of a worker
// thread's arena; malloc_trim() does not trim a thread arena's top. Measured on 200 Node
// load -> generate -> dispose cycles of a 41 MiB model: RSS +12% to +20% without, +0.6% with.
// Process-wide: call it once, early. `threshold_bytes` <= 0 keeps 128 KiB. Returns false where
// it does nothing (not glibc, or mallopt refused). The Node addon calls it at load unless the
// environment sets EDGELLM_MALLOC_TUNING=0; the edgellm CLI calls it at start.
bool TuneAllocator(long threshold_bytes = 0);
// Hands the heap pages freed so far back to the system now (glibc's malloc_trim(0)): after a
// model, a session or a KV cache is freed, so RSS drops at once instead of at some later free.
// Returns false where the C library has no such call (musl, HarmonyOS's libc, returns large
// freed blocks to the system by itself).
bool ReturnFreedMemory();

// Physical CPU cores of this machine (distinct core ids), at least 1.
int32_t physical_cores();
// Current and peak resident set size of this process in bytes (from /proc/self/status).
int64_t current_rss_bytes();
int64_t peak_rss_bytes();
}  // namespace edgellm
