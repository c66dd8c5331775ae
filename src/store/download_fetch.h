// One HTTP Range request for one chunk, written with pwrite at the chunk's offset and hashed
// as it is written, and the verdict on how it failed: transient (retry), permanent, cancelled, or fatal (local disk).
//
// Thread safety: a RangeFetcher (one libcurl easy handle, kept for connection reuse) is used
// by one thread at a time; several fetchers may write to the same fd concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "edgellm/status.h"

namespace edgellm::store {

enum class FetchOutcome {
  kOk,         // exactly the requested bytes arrived and were written
  kTransient,  // 5xx, 408/429, reset, timeout, stall, short/long body, wrong range: retry
  kPermanent,  // 4xx, a server ignoring Range, a file of another size: do not retry
  kCancelled,  // the stop predicate became true
  kFatal,      // writing the local file failed (disk full, I/O error)
};

struct FetchResult {
  FetchOutcome outcome = FetchOutcome::kOk;
  Status status;       // why, when not kOk
  std::string sha256;  // kOk: SHA-256 of the body bytes exactly as written to the file
};

struct FetchConfig {
  std::string url;
  uint64_t file_size = 0;  // the expected total in Content-Range
  int fd = -1;             // written with pwrite; not owned
  std::string path;        // of fd, for messages
  int connect_timeout_s = 10;
  int stall_seconds = 15;      // no byte (or under kStallBytesPerSecond) this long = stalled
  std::function<bool()> stop;  // polled during transfers; true aborts (kCancelled)
  std::atomic<uint64_t>* bytes_fetched = nullptr;  // every body byte received is added here
  std::atomic<int64_t>* hash_us = nullptr;         // microseconds spent hashing are added here
};

// "Stalled" means under this many bytes per second for FetchConfig::stall_seconds.
constexpr long kStallBytesPerSecond = 1024;

// Once per process, before any easy handle (curl_global_init is not thread-safe).
void curl_init_once();

class RangeFetcher {
 public:
  explicit RangeFetcher(const FetchConfig& config);
  ~RangeFetcher();
  RangeFetcher(const RangeFetcher&) = delete;
  RangeFetcher& operator=(const RangeFetcher&) = delete;

  // GET with "Range: bytes=offset-(offset+length-1)". Accepts only HTTP 206 with exactly that
  // Content-Range over file_size and exactly `length` body bytes; never writes outside
  // [offset, offset + length).
  FetchResult Fetch(uint64_t offset, uint64_t length);

  struct Transfer;  // one request's state, seen by the libcurl callbacks

 private:
  FetchResult Classify(int curl_code, const Transfer& t) const;

  const FetchConfig& config_;
  void* curl_ = nullptr;  // CURL*
  char errbuf_[256] = {};
};

}  // namespace edgellm::store
