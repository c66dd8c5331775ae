#include "testutil/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

namespace testutil {

struct TestHttpServer::Impl {
  std::string body, name;
  uint64_t chunk_size = 0;
  httplib::Server server;
  std::thread thread;
  int port = 0;
  std::atomic<bool> stopping{false};

  mutable std::mutex mu;  // guards faults, requests, per_chunk
  HttpFaults faults;
  int requests = 0;
  std::map<int, int> per_chunk;
  std::atomic<uint64_t> bytes_served{0};

  // Sleeps up to `ms`; false when the server is stopping.
  bool Sleep(int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      if (stopping) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return !stopping;
  }

  void Handle(const httplib::Request& req, httplib::Response& res);
  void Stream(httplib::Response& res, uint64_t first, uint64_t length, bool corrupt, bool truncate,
              int stall_ms);
};

namespace {

// "bytes=a-b" -> (a, b); false for anything else (a test server needs no more).
bool parse_range(const std::string& h, uint64_t* a, uint64_t* b) {
  if (h.rfind("bytes=", 0) != 0) return false;
  const size_t dash = h.find('-', 6);
  if (dash == std::string::npos || dash == 6 || dash + 1 >= h.size()) return false;
  try {
    *a = std::stoull(h.substr(6, dash - 6));
    *b = std::stoull(h.substr(dash + 1));
  } catch (...) {
    return false;
  }
  return *a <= *b;
}

}  // namespace

// Streams body[first, first + length) in 64 KiB writes; the faults act at the half-way mark.
void TestHttpServer::Impl::Stream(httplib::Response& res, uint64_t first, uint64_t length,
                                  bool corrupt, bool truncate, int stall_ms) {
  struct State {
    bool paused = false;
  };
  auto state = std::make_shared<State>();
  res.set_content_provider(static_cast<size_t>(length), "application/octet-stream",
                           [this, first, length, corrupt, truncate, stall_ms, state](
                               size_t off, size_t, httplib::DataSink& sink) {
                             const size_t half = static_cast<size_t>(length / 2);
                             if (off >= half && !state->paused) {
                               state->paused = true;
                               if (truncate)
                                 return false;  // httplib closes the connection mid-body
                               if (stall_ms > 0 && !Sleep(stall_ms)) return false;
                             }
                             const size_t end = off < half ? half : static_cast<size_t>(length);
                             const size_t n = std::min<size_t>(end - off, 64 << 10);
                             std::string piece = body.substr(static_cast<size_t>(first) + off, n);
                             if (corrupt && off <= half && half < off + n)
                               piece[half - off] ^= 0x5a;
                             if (!sink.write(piece.data(), piece.size())) return false;
                             bytes_served += n;
                             return true;
                           });
}

void TestHttpServer::Impl::Handle(const httplib::Request& req, httplib::Response& res) {
  // httplib 0.11 would re-slice our body by the request's Range; this server answers Range
  // itself (the Request object is httplib's own non-const local).
  const_cast<httplib::Request&>(req).ranges.clear();
  uint64_t a = 0, b = 0;
  const bool ranged = parse_range(req.get_header_value("Range"), &a, &b);
  const int chunk = ranged ? static_cast<int>(a / chunk_size) : -1;
  HttpFaults f;
  int n = 0, k = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    f = faults;
    n = ++requests;
    if (ranged) k = ++per_chunk[chunk];
  }
  if (f.delay_ms > 0 && !Sleep(f.delay_ms)) return;
  if (f.not_found) {
    res.status = 404;
    res.set_content("not found\n", "text/plain");
    return;
  }
  if (n <= f.error_5xx_first_n) {
    res.status = 503;
    res.set_content("try later\n", "text/plain");
    return;
  }
  res.set_header("Accept-Ranges", "bytes");
  if (!ranged || f.ignore_range) {
    res.status = 200;
    Stream(res, 0, body.size(), false, false, 0);
    return;
  }
  if (b >= body.size()) {
    res.status = 416;
    res.set_header("Content-Range", "bytes */" + std::to_string(body.size()));
    return;
  }
  const uint64_t shift = f.wrong_content_range ? 1 : 0;
  res.status = 206;
  res.set_header("Content-Range", "bytes " + std::to_string(a + shift) + "-" +
                                      std::to_string(b + shift) + "/" +
                                      std::to_string(body.size()));
  const bool corrupt = chunk == f.corrupt_chunk && k <= f.corrupt_first_n;
  const bool stall = chunk == f.stall_chunk && k <= f.stall_first_n;
  Stream(res, a, b - a + 1, corrupt, n <= f.truncate_first_n, stall ? f.stall_ms : 0);
}

TestHttpServer::TestHttpServer(std::string body, uint64_t chunk_size, std::string name)
    : impl_(std::make_unique<Impl>()) {
  impl_->body = std::move(body);
  impl_->chunk_size = chunk_size;
  impl_->name = std::move(name);
  Impl* impl = impl_.get();
  impl->server.set_keep_alive_max_count(1000);
  impl->server.set_keep_alive_timeout(2);
  impl->server.Get("/" + impl->name,
                   [impl](const httplib::Request& q, httplib::Response& r) { impl->Handle(q, r); });
  impl->port = impl->server.bind_to_any_port("127.0.0.1");
  impl->thread = std::thread([impl] { impl->server.listen_after_bind(); });
  while (!impl->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TestHttpServer::~TestHttpServer() {
  impl_->stopping = true;
  impl_->server.stop();
  impl_->thread.join();
}

std::string TestHttpServer::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port) + "/" + impl_->name;
}
int TestHttpServer::port() const { return impl_->port; }

void TestHttpServer::set_faults(const HttpFaults& faults) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->faults = faults;
  impl_->requests = 0;
  impl_->per_chunk.clear();
  impl_->bytes_served = 0;
}

int TestHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->requests;
}
uint64_t TestHttpServer::bytes_served() const { return impl_->bytes_served; }
int TestHttpServer::requests_for_chunk(int k) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  auto it = impl_->per_chunk.find(k);
  return it == impl_->per_chunk.end() ? 0 : it->second;
}

HttpReply http_request(int port, const std::string& method, const std::string& path,
                       const std::string& range) {
  httplib::Client client("127.0.0.1", port);
  client.set_url_encode(false);
  httplib::Headers headers;
  if (!range.empty()) headers.emplace("Range", range);
  auto res =
      method == "HEAD" ? client.Head(path.c_str(), headers) : client.Get(path.c_str(), headers);
  HttpReply r;
  if (!res) return r;
  r.status = res->status;
  r.body = res->body;
  r.content_range = res->get_header_value("Content-Range");
  r.content_length = res->get_header_value("Content-Length");
  return r;
}

}  // namespace testutil
