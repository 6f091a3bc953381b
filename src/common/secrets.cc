#include "common/secrets.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace abx {

bool secrets_equal(std::string_view a, std::string_view b) {
  unsigned char digest_a[SHA256_DIGEST_LENGTH];
  unsigned char digest_b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(a.data()), a.size(), digest_a);
  SHA256(reinterpret_cast<const unsigned char*>(b.data()), b.size(), digest_b);
  return CRYPTO_memcmp(digest_a, digest_b, sizeof digest_a) == 0;
}

}  // namespace abx
