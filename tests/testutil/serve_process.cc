#include "testutil/serve_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "testutil/fixtures.h"

namespace testutil {

ServeProcess::ServeProcess(const std::string& model, const std::vector<std::string>& args,
                           const std::vector<std::string>& env) {
  static int seq = 0;
  out_ = fixture_dir() + "/serve-" + std::to_string(::getpid()) + "-" + std::to_string(++seq);
  std::remove(out_.c_str());
  std::remove((out_ + ".err").c_str());
  std::vector<std::string> argv_s = {EDGELLM_CLI, "serve", "--port", "0"};
  if (!model.empty()) {  // empty: an embedding server (--embedding-model in args)
    argv_s.push_back("-m");
    argv_s.push_back(model);
  }
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  pid_ = ::fork();
  if (pid_ < 0) return;
  if (pid_ == 0) {
    (void)!std::freopen(out_.c_str(), "w", stdout);
    (void)!std::freopen((out_ + ".err").c_str(), "w", stderr);
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv;
    for (std::string& s : argv_s) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(EDGELLM_CLI, argv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 600 && port_ == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::string url = read_file(out_);
    const size_t colon = url.rfind(':');
    if (url.find('\n') != std::string::npos && colon != std::string::npos) {
      port_ = std::atoi(url.c_str() + colon + 1);
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
  }
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  std::remove(out_.c_str());
  std::remove((out_ + ".err").c_str());
}

void ServeProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string ServeProcess::url() const { return "http://127.0.0.1:" + std::to_string(port_); }
std::string ServeProcess::log() const { return read_file(out_ + ".err"); }

}  // namespace testutil
