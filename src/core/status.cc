#include "edgellm/status.h"

namespace edgellm {

const char* code_name(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotFound: return "not_found";
    case Code::kCorruptData: return "corrupt_data";
    case Code::kResourceExhausted: return "resource_exhausted";
    case Code::kCancelled: return "cancelled";
    case Code::kUnavailable: return "unavailable";
    case Code::kFailedPrecondition: return "failed_precondition";
    case Code::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(code_name(code_)) + ": " + message_;
}

}  // namespace edgellm
