// edgellm serve-models DIR [--port P] [--host H]: the files under DIR over HTTP with byte
// ranges (what `download` needs), for a LAN, a phone on USB tethering, or tests. GET and
// HEAD only, no listings, nothing outside DIR; one log line per request on stderr; runs until
// SIGINT or SIGTERM.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <thread>

#include <httplib.h>

#include "common.h"
#include "http_serve.h"

namespace cli {
namespace {

namespace fs = std::filesystem;

struct ServeArgs {
  std::string dir, host = "127.0.0.1";
  int port = 8080;
};

// One "bytes=" range of RFC 9110 (a-b, a-, -n) against `size`; multiple ranges are refused.
// Returns false when the header is malformed or unsatisfiable (-> 416).
bool parse_range(const std::string& h, uint64_t size, uint64_t* first, uint64_t* last) {
  if (h.rfind("bytes=", 0) != 0 || h.find(',') != std::string::npos) return false;
  const std::string spec = h.substr(6);
  const size_t dash = spec.find('-');
  if (dash == std::string::npos) return false;
  const std::string a = spec.substr(0, dash), b = spec.substr(dash + 1);
  auto number = [](const std::string& s, uint64_t* v) {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    *v = std::stoull(s);
    return true;
  };
  uint64_t x = 0, y = 0;
  if (a.empty()) {  // suffix: the last y bytes
    if (!number(b, &y) || y == 0 || size == 0) return false;
    *first = y >= size ? 0 : size - y;
    *last = size - 1;
    return true;
  }
  if (!number(a, &x) || x >= size) return false;
  if (b.empty()) {
    y = size - 1;
  } else if (!number(b, &y) || y < x) {
    return false;
  }
  *first = x;
  *last = std::min(y, size - 1);
  return true;
}

// The file under `root` that `url_path` (already percent-decoded by httplib) names, or empty
// when it would leave root (.., symlinks pointing outside) or is not a regular file.
std::string resolve(const fs::path& root, const std::string& url_path, int* status) {
  *status = 404;
  std::string rel = url_path;
  while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
  if (rel.empty() || rel.find('\0') != std::string::npos || rel.find('\\') != std::string::npos) {
    return {};
  }
  for (const auto& part : fs::path(rel)) {
    if (part == "..") {
      *status = 403;
      return {};
    }
  }
  std::error_code ec;
  const fs::path full = fs::weakly_canonical(root / rel, ec);
  if (ec) return {};
  const std::string r = root.string(), f = full.string();
  if (f.size() <= r.size() || f.compare(0, r.size(), r) != 0 || f[r.size()] != '/') {
    *status = 403;
    return {};
  }
  if (!fs::is_regular_file(full, ec)) return {};
  *status = 200;
  return f;
}

void serve_file(const fs::path& root, const httplib::Request& req, httplib::Response& res) {
  // httplib 0.11 would apply the Range itself on top of ours; this handler answers it (the
  // Request is httplib's own non-const object).
  const_cast<httplib::Request&>(req).ranges.clear();
  int status = 404;
  const std::string path = resolve(root, req.path, &status);
  if (path.empty()) {
    res.status = status;
    res.set_content(status == 403 ? "forbidden\n" : "not found\n", "text/plain");
    return;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    if (fd >= 0) ::close(fd);
    res.status = 404;
    res.set_content("not found\n", "text/plain");
    return;
  }
  auto file = std::shared_ptr<int>(new int(fd), [](int* p) {
    ::close(*p);
    delete p;
  });
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t first = 0, last = size ? size - 1 : 0;
  res.set_header("Accept-Ranges", "bytes");
  if (req.has_header("Range")) {
    if (!parse_range(req.get_header_value("Range"), size, &first, &last)) {
      res.status = 416;
      res.set_header("Content-Range", "bytes */" + std::to_string(size));
      return;
    }
    res.status = 206;
    res.set_header("Content-Range", "bytes " + std::to_string(first) + "-" + std::to_string(last) +
                                        "/" + std::to_string(size));
  } else {
    res.status = 200;
  }
  const uint64_t length = size ? last - first + 1 : 0;
  if (length == 0) {
    res.set_content("", "application/octet-stream");
    return;
  }
  res.set_content_provider(static_cast<size_t>(length), "application/octet-stream",
                           [file, first](size_t offset, size_t n, httplib::DataSink& sink) {
                             char buf[1 << 16];
                             const ssize_t got = ::pread(*file, buf, std::min(n, sizeof(buf)),
                                                         static_cast<off_t>(first + offset));
                             return got > 0 && sink.write(buf, static_cast<size_t>(got));
                           });
}

void log_request(const httplib::Request& req, const httplib::Response& res) {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
  const std::string range = req.get_header_value("Range");
  std::fprintf(stderr, "%s %s %s %s%s%s %d %s\n", when, req.remote_addr.c_str(), req.method.c_str(),
               req.path.c_str(), range.empty() ? "" : " ", range.c_str(), res.status,
               res.get_header_value("Content-Length").c_str());
}

int serve(const ServeArgs& a) {
  std::error_code ec;
  const fs::path root = fs::canonical(a.dir, ec);
  if (ec || !fs::is_directory(root)) {
    return fail(edgellm::Status::NotFound("model folder not found: " + a.dir));
  }
  // SIGINT/SIGTERM are taken by sigwait, never by a server thread (they inherit this).
  const sigset_t stop_signals = block_stop_signals();
  httplib::Server server;
  server.Get(".*", [&root](const httplib::Request& req, httplib::Response& res) {
    serve_file(root, req, res);
  });
  server.set_logger(log_request);
  return serve_until_signal(server, stop_signals, a.host, a.port, [&](int port) {
    std::fprintf(stderr, "serving %s on http://%s:%d/ (Ctrl-C to stop)\n", root.c_str(),
                 a.host.c_str(), port);
  });
}

}  // namespace

Action add_serve(CLI::App& app) {
  static ServeArgs a;
  auto* cmd = app.add_subcommand(
      "serve-models", "Serve the files of a folder over HTTP with byte ranges (for downloads)");
  cmd->add_option("dir", a.dir, "Folder to serve")->required();
  cmd->add_option("--port", a.port, "TCP port; 0 picks a free one (default 8080)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--host", a.host, "Address to listen on (default 127.0.0.1; 0.0.0.0 for a LAN)");
  return [] { return serve(a); };
}

}  // namespace cli
