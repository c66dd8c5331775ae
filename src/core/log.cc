// The process-wide log sink (include/edgellm/log.h). llama.cpp's lines arrive through
// engine/llama_glue.cc, which assembles its fragments into lines and calls detail::emit_log.
#include "core/log.h"

#include <memory>
#include <mutex>
#include <shared_mutex>

namespace edgellm {
namespace {

struct Installed {
  LogSink sink;
  LogLevel min_level = LogLevel::kInfo;
};

// Readers copy the shared_ptr under a shared lock and call the sink outside it. SetLogSink
// takes the lock exclusively and then waits for the calls of the previous sink in flight, so
// that it is never called once SetLogSink has returned.
std::shared_mutex g_mu;
std::shared_ptr<Installed>* g_installed = new std::shared_ptr<Installed>();

}  // namespace

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

void SetLogSink(LogSink sink, LogLevel min_level) {
  std::shared_ptr<Installed> old;
  {
    std::unique_lock<std::shared_mutex> lock(g_mu);
    old = std::move(*g_installed);
    if (sink) *g_installed = std::make_shared<Installed>(Installed{std::move(sink), min_level});
  }
  // Calls in flight hold their own reference: wait until ours is the last one.
  while (old && old.use_count() > 1) std::this_thread::yield();
}

void Log(LogLevel level, std::string_view line) { detail::emit_log(level, "edgellm", line); }

namespace detail {

bool log_wanted(LogLevel level) {
  std::shared_lock<std::shared_mutex> lock(g_mu);
  return *g_installed && level >= (*g_installed)->min_level;
}

void emit_log(LogLevel level, std::string_view source, std::string_view line) {
  std::shared_ptr<Installed> s;
  {
    std::shared_lock<std::shared_mutex> lock(g_mu);
    s = *g_installed;
  }
  if (s && level >= s->min_level) s->sink(level, source, line);
}

}  // namespace detail
}  // namespace edgellm
