// A server process on loopback for the benchmarks (llama-server, edgellm serve): started with
// its output in a log file, waited for until /health answers 200, killed when the object goes
// (and by the kernel if the benchmark dies first: PR_SET_PDEATHSIG).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace bench {

// A TCP port on 127.0.0.1 that was free a moment ago.
inline int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) close(fd);
  return port;
}

class RefServer {
 public:
  RefServer() = default;
  RefServer(const RefServer&) = delete;
  RefServer& operator=(const RefServer&) = delete;
  ~RefServer() { Stop(); }

  // Starts `argv` (argv[0] a path) with `--host 127.0.0.1 --port P` appended; returns false with
  // the log's tail in *error when it exits or does not answer /health within `timeout_s`.
  bool Start(const std::string& name, std::vector<std::string> argv, std::string* error,
             int timeout_s = 300) {
    name_ = name;
    port_ = free_port();
    log_ = "/tmp/edgellm-bench-" + name + "-" + std::to_string(getpid()) + ".log";
    argv.insert(argv.end(), {"--host", "127.0.0.1", "--port", std::to_string(port_)});
    std::vector<char*> cargv;
    for (auto& s : argv) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
      }
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    const auto t0 = std::chrono::steady_clock::now();
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(1);
    for (;;) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *error = name + " exited during start: " + LogTail();
        return false;
      }
      auto r = c.Get("/health");
      if (r && r->status == 200) return true;
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(timeout_s)) {
        *error =
            name + " did not answer /health in " + std::to_string(timeout_s) + " s: " + LogTail();
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  void Stop() {
    if (pid_ <= 0) return;
    unlink(log_.c_str());
    kill(pid_, SIGTERM);
    for (int i = 0; i < 50; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // POSTs a JSON body; the response body, or "" with *error set.
  std::string Post(const std::string& path, const std::string& body, std::string* error) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(600);
    c.set_write_timeout(600);
    auto r = c.Post(path, body, "application/json");
    if (!r) {
      *error = name_ + " " + path + ": " + httplib::to_string(r.error());
      return "";
    }
    if (r->status != 200) {
      *error =
          name_ + " " + path + " -> " + std::to_string(r->status) + ": " + r->body.substr(0, 500);
      return "";
    }
    return r->body;
  }

  std::string LogTail() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string s = ss.str();
    return s.size() > 1500 ? s.substr(s.size() - 1500) : s;
  }
  int port() const { return port_; }

 private:
  std::string name_, log_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace bench
