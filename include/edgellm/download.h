// Download: fetch a model file in verified chunks over HTTP(S), resumable after a crash.
//
// The file is written into `dest + ".partial"` (preallocated to its full size) with one HTTP
// Range request per chunk. A chunk counts as done only once its bytes are on disk (fsync'd)
// and their SHA-256, taken as they were written, matches the manifest; then its index is
// appended to `dest + ".journal"` and fsync'd. A later call re-verifies every journal entry
// against the file's bytes and fetches everything else, so a crash or `kill -9` at any moment
// costs at most the chunks that were in flight. At the end the whole file is checked against
// spec.sha256 and renamed to `dest`; that whole-file hash advances in file order while later
// chunks are still downloading, so little of it is left once the last chunk lands. Design,
// journal format and fault matrix: docs/download.md.
//
// Thread safety: download() may be called from any thread; concurrent calls for the same
// `dest` are refused (kUnavailable: the partial file is locked). Callbacks run on the thread
// that called download().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "edgellm/manifest.h"
#include "edgellm/status.h"

namespace edgellm {

// What to fetch and where. Maps 1:1 from a Manifest (see spec_from_manifest below).
struct DownloadSpec {
  std::string url;                  // http:// or https:// URL of the whole file
  std::string dest;                 // final path; its folder is created if missing
  uint64_t size = 0;                // bytes
  std::string sha256;               // whole file, lowercase hex
  uint64_t chunk_size = 0;          // bytes per chunk (the last may be shorter); > 0
  std::vector<std::string> chunks;  // sha256 of each chunk, ceil(size / chunk_size) entries
};

inline DownloadSpec spec_from_manifest(const Manifest& m, std::string url, std::string dest) {
  return {std::move(url), std::move(dest), m.size, m.sha256, m.chunk_size, m.chunks};
}

// A snapshot handed to DownloadOptions::on_progress.
struct DownloadProgress {
  uint64_t bytes_done = 0;   // verified bytes, including chunks reused from the journal
  uint64_t bytes_total = 0;  // spec.size
  double percent = 0;        // 100 * bytes_done / bytes_total
  double bytes_per_s = 0;    // network rate of this call so far
  double eta_s = -1;         // seconds left at that rate; -1 = unknown
  int chunks_done = 0;
  int chunks_total = 0;
  uint64_t bytes_fetched = 0;  // body bytes received this call, including refetches
};

// Per-call options. Lifetime: one download() call.
struct DownloadOptions {
  int concurrency = 3;   // parallel Range requests (one connection each). Default 3; 1..64
  int max_retries = 5;   // extra attempts per chunk after a transient failure. Default 5
  int backoff_ms = 200;  // wait before the first retry, doubling up to 10 s. Default 200
  // A transfer that receives nothing this long (or averages under 1 KiB/s this long, as
  // libcurl measures it) is aborted and retried. Default 15.
  int stall_seconds = 15;
  int connect_timeout_s = 10;  // TCP + TLS connect. Default 10
  // Called about every 200 ms, once after the journal is re-verified and once after success.
  // Return false to cancel (kCancelled; the partial file and journal are kept for resume).
  std::function<bool(const DownloadProgress&)> on_progress;
  // Set to true from any thread to cancel, as on_progress returning false. Not owned; must
  // outlive the call. Default none.
  std::atomic<bool>* cancel = nullptr;
};

// What a successful call did.
struct DownloadReport {
  uint64_t bytes_fetched = 0;  // body bytes received over the network, incl. failed attempts
  int chunks_total = 0;
  int chunks_fetched = 0;    // chunks downloaded and verified by this call
  int chunks_reused = 0;     // chunks taken from the journal after re-verifying their bytes
  int journal_rejected = 0;  // journal entries whose bytes failed re-verification
  int retries = 0;           // attempts repeated after a transient failure (incl. refetches)
  int refetches = 0;         // chunk attempts whose SHA-256 did not match the manifest
  double seconds = 0;        // wall time of the call
  // Where the time went (seconds; the first two are summed over the worker threads, so with
  // concurrency they overlap the transfer and each other):
  double hash_seconds = 0;  // SHA-256 of chunks (as written) and of the whole file (read back)
  double sync_seconds = 0;  // fdatasync of the file and fsync of the journal
  double tail_seconds = 0;  // after the last chunk landed: rest of the whole-file hash + commit
};

// Downloads spec.url into spec.dest. Errors (each message names the URL or file):
//   kInvalidArgument   spec or options unusable (bad digest, chunk count, URL scheme, ...)
//   kNotFound          HTTP 404 / 410 (never retried)
//   kUnavailable       other 4xx, a server that ignores Range, or transient failures (5xx,
//                      resets, stalls, wrong Content-Range, short bodies) after max_retries
//   kCorruptData       a chunk kept failing its hash, the server's file has another size, or
//                      the whole-file hash does not match (partial and journal are deleted)
//   kResourceExhausted not enough free disk (checked up front) or ENOSPC while writing
//   kCancelled         on_progress returned false or *cancel became true
// On every error except kCorruptData of the whole file, the partial file and journal are kept
// and a later call resumes. Nothing is ever created at `dest` unless the whole file verified.
// A `dest` that already has spec.size bytes and spec.sha256 (and no partial file) is only
// verified: ok, nothing fetched, every chunk counted as reused.
Result<DownloadReport> download(const DownloadSpec& spec, const DownloadOptions& options = {});

}  // namespace edgellm
