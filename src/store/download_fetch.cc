#include "store/download_fetch.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "store/download_journal.h"
#include "store/sha256.h"

namespace edgellm::store {
namespace {

constexpr uint64_t kWritebackEvery = uint64_t{1} << 20;

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

// The total after '/' in "bytes a-b/total"; UINT64_MAX when absent or not a number.
uint64_t content_range_total(const std::string& v) {
  const size_t slash = v.rfind('/');
  if (slash == std::string::npos || slash + 1 >= v.size()) return UINT64_MAX;
  uint64_t total = 0;
  for (size_t i = slash + 1; i < v.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(v[i])) || total > UINT64_MAX / 10 - 1)
      return UINT64_MAX;
    total = total * 10 + static_cast<uint64_t>(v[i] - '0');
  }
  return total;
}

}  // namespace

void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct RangeFetcher::Transfer {
  const FetchConfig* config = nullptr;
  CURL* curl = nullptr;
  uint64_t offset = 0, length = 0, received = 0;
  std::string expected_range;  // "bytes a-b/size"
  std::string content_range;   // of the latest response, trimmed
  bool checked = false;        // status and Content-Range accepted
  enum class Abort { kNone, kStatus, kRange, kTooLong, kWrite } abort = Abort::kNone;
  int write_errno = 0;
  Sha256 hash;               // of the bytes written so far
  uint64_t writeback_from = 0;  // received bytes before this already have writeback started
  // Stall detection: libcurl's LOW_SPEED check averages over a ~5 s window, so a burst
  // followed by silence would be noticed late; this notices "no byte for stall_seconds".
  curl_off_t last_dlnow = 0;
  std::chrono::steady_clock::time_point last_change = std::chrono::steady_clock::now();
  bool stalled = false;
};

namespace {

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<RangeFetcher::Transfer*>(user);
  const std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) t->content_range.clear();  // a new response (redirects)
  const size_t colon = line.find(':');
  if (colon != std::string::npos && lower(line.substr(0, colon)) == "content-range") {
    t->content_range = trim(line.substr(colon + 1));
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  using Abort = RangeFetcher::Transfer::Abort;
  auto* t = static_cast<RangeFetcher::Transfer*>(user);
  const size_t len = size * n;
  auto reject = [t](Abort why) {
    t->abort = why;
    return size_t{0};  // makes curl_easy_perform fail with CURLE_WRITE_ERROR
  };
  if (t->config->bytes_fetched) t->config->bytes_fetched->fetch_add(len);
  if (!t->checked) {
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    if (code != 206) return reject(Abort::kStatus);
    if (t->content_range != t->expected_range) return reject(Abort::kRange);
    t->checked = true;
  }
  if (t->received + len > t->length) return reject(Abort::kTooLong);
  size_t done = 0;
  while (done < len) {
    const ssize_t w = ::pwrite(t->config->fd, data + done, len - done,
                               static_cast<off_t>(t->offset + t->received + done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      t->write_errno = w < 0 ? errno : EIO;
      return reject(Abort::kWrite);
    }
    done += static_cast<size_t>(w);
  }
  const auto h0 = std::chrono::steady_clock::now();
  t->hash.Update(data, len);
  if (t->config->hash_us) {
    *t->config->hash_us += std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - h0)
                               .count();
  }
  t->received += len;
#ifdef __linux__
  // Start writeback of every full MiB now, so the fdatasync at the chunk's end waits for the
  // last MiB only instead of stalling the transfer for the whole chunk.
  if (t->received - t->writeback_from >= kWritebackEvery) {
    ::sync_file_range(t->config->fd, static_cast<off_t>(t->offset + t->writeback_from),
                      static_cast<off_t>(t->received - t->writeback_from), SYNC_FILE_RANGE_WRITE);
    t->writeback_from = t->received;
  }
#endif
  return len;
}

// Called about once a second even while nothing arrives; non-zero aborts the transfer.
int on_xfer(void* user, curl_off_t, curl_off_t dlnow, curl_off_t, curl_off_t) {
  auto* t = static_cast<RangeFetcher::Transfer*>(user);
  if (t->config->stop && t->config->stop()) return 1;
  const auto now = std::chrono::steady_clock::now();
  if (dlnow != t->last_dlnow) {
    t->last_dlnow = dlnow;
    t->last_change = now;
  } else if (now - t->last_change >= std::chrono::seconds(t->config->stall_seconds)) {
    t->stalled = true;
    return 1;
  }
  return 0;
}

}  // namespace

RangeFetcher::RangeFetcher(const FetchConfig& config) : config_(config) {
  curl_init_once();
  CURL* c = curl_easy_init();
  curl_ = c;
  if (!c) return;
  curl_easy_setopt(c, CURLOPT_URL, config_.url.c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM-based DNS timeouts
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(config_.connect_timeout_s));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, kStallBytesPerSecond);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(config_.stall_seconds));
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "edgellm-download/1");
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf_);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xfer);
}

RangeFetcher::~RangeFetcher() {
  if (curl_) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

FetchResult RangeFetcher::Fetch(uint64_t offset, uint64_t length) {
  if (!curl_) return {FetchOutcome::kFatal, Status::Internal("curl_easy_init failed")};
  CURL* c = static_cast<CURL*>(curl_);
  const uint64_t last = offset + length - 1;
  Transfer t;
  t.config = &config_;
  t.curl = c;
  t.offset = offset;
  t.length = length;
  t.expected_range = "bytes " + std::to_string(offset) + "-" + std::to_string(last) + "/" +
                     std::to_string(config_.file_size);
  const std::string range = std::to_string(offset) + "-" + std::to_string(last);
  curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
  errbuf_[0] = '\0';
  const CURLcode rc = curl_easy_perform(c);
  FetchResult r = Classify(static_cast<int>(rc), t);
  if (r.outcome == FetchOutcome::kOk) r.sha256 = t.hash.HexDigest();
  return r;
}

FetchResult RangeFetcher::Classify(int curl_code, const Transfer& t) const {
  using A = Transfer::Abort;
  const auto rc = static_cast<CURLcode>(curl_code);
  const std::string what = config_.url + " (bytes=" + std::to_string(t.offset) + "-" +
                           std::to_string(t.offset + t.length - 1) + ")";
  auto transient = [](std::string m) {
    return FetchResult{FetchOutcome::kTransient, Status::Unavailable(std::move(m))};
  };
  auto permanent = [](Status s) { return FetchResult{FetchOutcome::kPermanent, std::move(s)}; };
  if (t.abort == A::kWrite) {
    return {FetchOutcome::kFatal, write_error(t.write_errno, config_.path, "writing")};
  }
  if (t.stalled || (rc == CURLE_OPERATION_TIMEDOUT && t.received > 0)) {
    return transient("transfer from " + what + " stalled (no data for " +
                     std::to_string(config_.stall_seconds) + " s, or under " +
                     std::to_string(kStallBytesPerSecond) + " B/s) after " +
                     std::to_string(t.received) + " of " + std::to_string(t.length) + " bytes");
  }
  if (rc == CURLE_ABORTED_BY_CALLBACK) {
    return {FetchOutcome::kCancelled, Status::Cancelled("download cancelled")};
  }
  if (rc == CURLE_TOO_MANY_REDIRECTS) {
    return permanent(Status::Unavailable("too many redirects from " + what));
  }
  long code = 0;
  curl_easy_getinfo(static_cast<CURL*>(curl_), CURLINFO_RESPONSE_CODE, &code);
  const std::string http = "HTTP " + std::to_string(code) + " from " + what;
  if (code == 200) {
    return permanent(
        Status::Unavailable("the server ignored the Range request (" + http +
                            " instead of 206): downloads need a server with byte-range support"));
  }
  if (code == 404 || code == 410) {
    return permanent(Status::NotFound(http + ": the file is not on the server; check the URL"));
  }
  if (code == 408 || code == 429 || code >= 500) return transient(http);
  if (code >= 400) {
    return permanent(Status::Unavailable(http + ": the server refuses the request; check the "
                                                "URL and access rights"));
  }
  if (code != 0 && code != 206) return transient("unexpected " + http);
  if (code == 206) {
    if (t.abort == A::kRange || (rc == CURLE_OK && t.content_range != t.expected_range)) {
      const uint64_t total = content_range_total(t.content_range);
      if (total != UINT64_MAX && total != config_.file_size) {
        return permanent(Status::CorruptData(
            "the server's file is " + std::to_string(total) + " bytes (Content-Range '" +
            t.content_range + "' from " + what + ") but the manifest says " +
            std::to_string(config_.file_size) + ": the URL and the manifest do not match"));
      }
      return transient("wrong Content-Range '" + t.content_range + "' from " + what +
                       ", expected '" + t.expected_range + "'");
    }
    if (t.abort == A::kTooLong) return transient("body longer than the range asked from " + what);
    if (rc != CURLE_OK || t.received != t.length) {
      return transient("body from " + what + " ended after " + std::to_string(t.received) + " of " +
                       std::to_string(t.length) + " bytes" +
                       (errbuf_[0] ? std::string(": ") + errbuf_ : std::string()));
    }
    return {FetchOutcome::kOk, Status::Ok()};
  }
  // No HTTP response at all.
  const std::string why = errbuf_[0] ? errbuf_ : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      return permanent(Status::Unavailable("cannot fetch " + what + ": " + why));
    default:
      return transient("cannot fetch " + what + ": " + why);
  }
}

}  // namespace edgellm::store
