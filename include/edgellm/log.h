// Log lines of the library and of llama.cpp, handed to the host: a C++ app forwards them to
// its own logger, the Node/HarmonyOS binding batches them to a JS callback (which an ArkTS app
// passes to hilog). Without a sink nothing is printed (ModelOptions::verbose aside).
//
// Thread safety: SetLogSink and Log may be called from any thread. The sink is called on the
// thread that logs (a loading or generating thread, llama.cpp's own): it must be quick and
// thread-safe, and must not call back into edgellm. After SetLogSink returns, the previous sink
// is never called again.
#pragma once

#include <functional>
#include <string_view>

namespace edgellm {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

const char* log_level_name(LogLevel level);  // "debug", "info", "warn", "error"

// One whole line (no trailing newline). `source` is "edgellm" or "llama.cpp".
using LogSink = std::function<void(LogLevel level, std::string_view source, std::string_view line)>;

// Installs `sink` for lines at `min_level` and above (nullptr removes it). Process-wide.
void SetLogSink(LogSink sink, LogLevel min_level = LogLevel::kInfo);

// A line of edgellm's own, delivered to the sink when there is one.
void Log(LogLevel level, std::string_view line);

}  // namespace edgellm
