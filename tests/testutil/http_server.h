// An in-process HTTP server on 127.0.0.1 (a free port) serving one file with Range support,
// with faults switchable per test, for the downloader's tests.
//
// Thread safety: every method may be called from the test thread while the server's own
// threads serve requests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace testutil {

// "First N requests" counts every request since the last set_faults(), in arrival order;
// "chunk K" is the chunk whose first byte a Range request starts at (offset / chunk_size).
struct HttpFaults {
  bool ignore_range = false;         // 200 with the whole body, as a server without Range support
  bool wrong_content_range = false;  // 206 whose Content-Range start and end are off by one
  bool not_found = false;            // 404 for everything
  int error_5xx_first_n = 0;         // the first N requests get 503
  int truncate_first_n = 0;          // the first N requests send half their body, then close
  int corrupt_chunk = -1;            // one byte of this chunk's body flipped ...
  int corrupt_first_n = 0;           // ... on its first N requests
  int stall_chunk = -1;              // this chunk's body pauses half-way ...
  int stall_first_n = 0;             // ... on its first N requests ...
  int stall_ms = 0;                  // ... for this long (cut short when the server stops)
  int delay_ms = 0;                  // every response waits this long first (throttling)
};

class TestHttpServer {
 public:
  // Serves `body` at /<name>. Listens until destroyed.
  TestHttpServer(std::string body, uint64_t chunk_size, std::string name = "model.bin");
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  std::string url() const;  // http://127.0.0.1:PORT/<name>
  int port() const;
  // Replaces the faults and resets every counter.
  void set_faults(const HttpFaults& faults);
  int requests() const;                 // requests received since set_faults (or start)
  uint64_t bytes_served() const;        // body bytes written to sockets since then
  int requests_for_chunk(int k) const;  // Range requests starting at chunk k since then

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One request to 127.0.0.1:port with `path` sent as given (no normalization), for tests of
// other servers. status 0 when no response came.
struct HttpReply {
  int status = 0;
  std::string body, content_range, content_length;
};
HttpReply http_request(int port, const std::string& method, const std::string& path,
                       const std::string& range = "");

}  // namespace testutil
