// `edgellm serve` as a child process on a free loopback port, for tests of the cloud client,
// the router and `run --fallback`. Stopped with SIGTERM (then SIGKILL) when destroyed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace testutil {

class ServeProcess {
 public:
  // Starts `edgellm serve -m MODEL --port 0 ARGS...` (no -m when MODEL is empty) with `env` ("NAME=value") added to its
  // environment, and waits (up to 30 s) for the address it prints. port() is 0 on failure and
  // log() says why.
  ServeProcess(const std::string& model, const std::vector<std::string>& args = {},
               const std::vector<std::string>& env = {});
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url() const;  // http://127.0.0.1:PORT
  std::string log() const;  // its stderr so far
  // SIGKILLs it now (a server that dies).
  void Kill();

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string out_;
};

}  // namespace testutil
