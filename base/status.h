// Status and Result<T>: how every fallible runtime call in lagwatch reports failure.
// No exception crosses a worker thread; I/O returns one of these instead.
// Thread-safety: values; safe to copy between threads.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace lagwatch {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kInvalidArgument,   // bad config or bad input; the message names the key or value
    kUnavailable,       // server refused, closed, or could not be reached
    kDeadlineExceeded,  // the call did not finish before its deadline
    kServerError,       // the server answered with an error (message carries it)
    kDataError,         // the server answered, but with something we cannot use
    kCancelled,         // the caller is shutting down
    kTls,               // TLS failed or was refused; tls_reason() names why (base/net_stream.h)
  };

  Status() = default;
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string msg) {
    return {Code::kInvalidArgument, std::move(msg)};
  }
  static Status Unavailable(std::string msg) { return {Code::kUnavailable, std::move(msg)}; }
  static Status DeadlineExceeded(std::string msg) {
    return {Code::kDeadlineExceeded, std::move(msg)};
  }
  static Status ServerError(std::string msg) { return {Code::kServerError, std::move(msg)}; }
  static Status DataError(std::string msg) { return {Code::kDataError, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {Code::kCancelled, std::move(msg)}; }
  // `tls_reason` is one of base/net_stream.h's tls_reason tokens (a string of static storage).
  static Status Tls(const char* tls_reason, std::string msg) {
    Status s(Code::kTls, std::move(msg));
    s.tls_reason_ = tls_reason;
    return s;
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // For kTls: the named reason ("unknown_ca", "expired", ...); "" for every other code.
  const char* tls_reason() const { return tls_reason_; }

  // A short stable token for metrics labels and logs ("timeout", "unavailable", ...).
  const char* reason() const {
    switch (code_) {
      case Code::kOk:
        return "ok";
      case Code::kInvalidArgument:
        return "invalid";
      case Code::kUnavailable:
        return "unavailable";
      case Code::kDeadlineExceeded:
        return "timeout";
      case Code::kServerError:
        return "server_error";
      case Code::kDataError:
        return "bad_data";
      case Code::kCancelled:
        return "cancelled";
      case Code::kTls:
        return "tls";
    }
    return "unknown";
  }
  std::string ToString() const { return ok() ? "ok" : std::string(reason()) + ": " + message_; }

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}
  Code code_ = Code::kOk;
  std::string message_;
  const char* tls_reason_ = "";
};

// Either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace lagwatch
