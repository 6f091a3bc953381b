// Streaming gzip encoding for GET /files when the client sends
// Accept-Encoding: gzip (as envd does).
#pragma once

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
  // The rest of the stream, trailer included.
  std::string finish();

 private:
  std::string run(std::string_view input, int flush);
  struct State;
  std::unique_ptr<State> state_;
};

// True when an Accept-Encoding value admits gzip (q=0 refuses it).
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace abx::daemon
