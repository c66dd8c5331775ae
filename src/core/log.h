// Internal side of include/edgellm/log.h: emitting a line from any source.
#pragma once

#include <string_view>
#include <thread>

#include "edgellm/log.h"

namespace edgellm::detail {

// Whether a line at `level` would reach a sink (skip building lines nobody reads).
bool log_wanted(LogLevel level);
// Delivers one whole line to the sink, if any and if `level` passes its minimum.
void emit_log(LogLevel level, std::string_view source, std::string_view line);

}  // namespace edgellm::detail
