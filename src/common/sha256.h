// SHA-256 digests (OpenSSL's libcrypto): template layer cache keys (content
// hashes, so a collision would serve the wrong files) and envd's signed URLs.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/error.h"

namespace abx {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(std::string_view bytes);
  // The 32 digest bytes; the object is spent afterwards.
  std::string bytes();
  // Lower-case hex of the digest; the object is spent afterwards.
  std::string hex();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

std::string sha256_hex(std::string_view bytes);

// The digest of a file's contents.
Result<std::string> sha256_file(const std::string& path);

}  // namespace abx
