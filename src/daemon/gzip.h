// Streaming gzip encoding for GET /files when the client asks for it
// (e2b's files.read(gzip=True) sends Accept-Encoding: gzip).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace abx::daemon {

class Gzip {
 public:
  Gzip();
  ~Gzip();
  Gzip(const Gzip&) = delete;
  Gzip& operator=(const Gzip&) = delete;

  // The compressed bytes ready so far (may be empty).
  std::string feed(std::string_view input);
  // `count` zero bytes (a hole in a sparse file), as ready-made deflate
  // blocks: the work is a copy per KiB of output, where deflating the zeros
  // would take a core for half a minute per GiB.
  std::string zeros(uint64_t count);
  // The rest of the stream, trailer included.
  std::string finish();

 private:
  std::string run(std::string_view input, int flush);
  struct State;
  std::unique_ptr<State> state_;
};

// True when an Accept-Encoding value asks for gzip alone. A generic client's
// default list ("gzip, deflate, br") gets identity: on loopback compressing
// costs CPU and saves nothing, and identity is always acceptable to it.
bool wants_gzip(std::string_view accept_encoding);

}  // namespace abx::daemon
