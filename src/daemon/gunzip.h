// Streaming gzip decoding for `Content-Encoding: gzip` uploads (envd >= 0.5.7).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace abx::daemon {

class Gunzip {
 public:
  // At most `max_output` bytes come out: a small body must not be able to
  // expand into gigabytes (1 MB of zeros gzipped is about 1 KB).
  explicit Gunzip(uint64_t max_output);
  ~Gunzip();
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;

  // Decodes `input`, passing output pieces to `sink` (which returns false to
  // stop). False on corrupt data or output past the bound (see error()) or
  // when the sink stopped.
  bool feed(std::string_view input, const std::function<bool(std::string_view)>& sink);
  bool finished() const { return finished_; }
  // The output would have been larger than max_output.
  bool too_large() const { return too_large_; }
  const std::string& error() const { return error_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  uint64_t max_output_;
  uint64_t output_ = 0;
  bool finished_ = false;
  bool too_large_ = false;
  std::string error_;
};

}  // namespace abx::daemon
