// Status and Result<T>: how every edgellm call reports failure.
//
// No exception crosses the public API. A failing call returns a Status whose
// message says what happened and what to do about it.
//
// Thread safety: Status and Result are values; distinct objects may be used
// from distinct threads freely.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace edgellm {

// Error codes, grouped by range so that callers can switch on the family.
enum class Code : int32_t {
  kOk = 0,
  kInvalidArgument = 100,    // the caller passed something unusable
  kNotFound = 200,           // a file, model or key does not exist
  kCorruptData = 300,        // a file exists but its contents are malformed
  kResourceExhausted = 400,  // memory, disk or context space ran out
  kCancelled = 500,          // the caller asked to stop
  kUnavailable = 600,        // a dependency (server, device) cannot serve now
  kFailedPrecondition = 700, // valid, but this build or state cannot take it (e.g. a package
                             // made for another runtime format or toolchain)
  kInternal = 900,           // a bug in edgellm or the library under it
};

// Stable lower-case name of a code, e.g. "invalid_argument".
const char* code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status CorruptData(std::string m) { return {Code::kCorruptData, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {Code::kResourceExhausted, std::move(m)};
  }
  static Status Cancelled(std::string m) { return {Code::kCancelled, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid_argument: <message>", or "ok".
  std::string ToString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// Either a value or a non-ok Status.
// REQUIRES: value() only when ok(); status() is always valid.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).ok()) v_ = Status::Internal("Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace edgellm

// Propagates a non-ok Status from an expression returning Status.
#define EDGELLM_RETURN_IF_ERROR(expr)          \
  do {                                         \
    ::edgellm::Status _st = (expr);            \
    if (!_st.ok()) return _st;                 \
  } while (0)
