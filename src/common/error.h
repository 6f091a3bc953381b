// Errors that name the step that failed and carry errno, so the reason for a
// failure reaches the API caller instead of only a log line.
#pragma once

#include <cerrno>
#include <string>
#include <utility>
#include <variant>

namespace abx {

// Kinds of failure that are not errno values; negative so they never collide.
inline constexpr int kErrBadInput = EINVAL;  // the caller's input is wrong (400)
inline constexpr int kErrQuota = -1;         // a team quota or host cap refused it (429)
inline constexpr int kErrUnauthorized = -2;  // no credential, or a wrong one (401)
inline constexpr int kErrTooLarge = -3;      // a body or field larger than allowed (413)

struct Error {
  std::string step;       // e.g. "mount overlay", "cgroup memory.limit_in_bytes"
  int errnum = 0;         // errno when the step was a syscall, else 0
  std::string detail;     // extra context for humans (path, value)
  bool whole = false;     // `step` is the whole message (with_message): no strerror added
  int retry_after_s = 0;  // kErrQuota: a retry may succeed after this many seconds

  // "mount overlay: No such file or directory (/x/y)"
  std::string message() const;

  // A failure that is not a syscall's: `message` is the whole text, `errnum`
  // (an errno or one of the kErr* kinds below) picks its status.
  static Error with_message(std::string message, int errnum = 0) {
    return Error{std::move(message), errnum, {}, true};
  }

  static Error from_errno(std::string step, std::string detail = {}) {
    return Error{std::move(step), errno, std::move(detail)};
  }
};

// A value or the Error that prevented it. Small on purpose: no std::expected in C++20.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace abx
