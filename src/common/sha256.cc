#include "common/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace abx {

struct Sha256::Context {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  EVP_DigestInit_ex(context_->md, EVP_sha256(), nullptr);
}

Sha256::~Sha256() = default;

Sha256& Sha256::update(std::string_view bytes) {
  EVP_DigestUpdate(context_->md, bytes.data(), bytes.size());
  return *this;
}

std::string Sha256::bytes() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(context_->md, digest, &size);
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Sha256::hex() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char raw : bytes()) {
    const auto byte = static_cast<unsigned char>(raw);
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) { return Sha256().update(bytes).hex(); }

Result<std::string> sha256_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open", path);
  Sha256 digest;
  const Status read = read_to_end(
      fd.get(),
      [&](std::string_view piece) {
        digest.update(piece);
        return Status{};
      },
      path);
  if (!read) return read.error();
  return digest.hex();
}

}  // namespace abx
