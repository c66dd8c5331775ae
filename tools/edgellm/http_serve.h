// Shared by serve-models and serve: block SIGINT/SIGTERM, bind, listen on a thread, wait for
// a stop signal, stop. Include after <httplib.h> with the same CPPHTTPLIB_* options.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "common.h"

namespace cli {

// Call before starting any thread, so no server thread ever takes the stop signals.
inline sigset_t block_stop_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  return s;
}

// Binds host:port (0 = any free port), calls on_listening(port), serves until SIGINT/SIGTERM.
inline int serve_until_signal(httplib::Server& server, sigset_t stop_signals,
                              const std::string& host, int port,
                              const std::function<void(int)>& on_listening) {
  const int bound = port == 0 ? server.bind_to_any_port(host)
                              : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return fail(edgellm::Status::Unavailable("cannot listen on " + host + ":" +
                                             std::to_string(port) +
                                             ": is the port in use? try another --port"));
  }
  std::thread listener([&server] { server.listen_after_bind(); });
  on_listening(bound);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  server.stop();
  listener.join();
  return 0;
}

}  // namespace cli
