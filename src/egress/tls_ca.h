// The per-daemon certificate authority the egress proxy signs leaf
// certificates with when it terminates a sandbox's TLS (only for hosts with
// header rules), and the TLS contexts of both sides of such a connection.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/error.h"

using SSL_CTX = struct ssl_ctx_st;
using X509 = struct x509_st;
using EVP_PKEY = struct evp_pkey_st;

namespace abx::egress {

class CertificateAuthority {
 public:
  // Loads dir/ca.pem and dir/ca.key, or creates both (EC P-256, key mode 0600)
  // when neither exists. A key others can read is refused.
  static Result<std::unique_ptr<CertificateAuthority>> open(const std::filesystem::path& dir);
  ~CertificateAuthority();
  CertificateAuthority(const CertificateAuthority&) = delete;
  CertificateAuthority& operator=(const CertificateAuthority&) = delete;

  const std::string& pem() const { return pem_; }

  // A server context presenting a leaf for `name` (SAN DNS:name), minted on
  // first use and cached; ALPN offers only http/1.1. Null on failure.
  std::shared_ptr<SSL_CTX> server_context(const std::string& name);

 private:
  CertificateAuthority(X509* cert, EVP_PKEY* key, std::string pem);
  std::shared_ptr<SSL_CTX> mint(const std::string& name);

  struct Minted {
    std::shared_ptr<SSL_CTX> context;
    std::chrono::system_clock::time_point at;
  };
  X509* cert_;
  EVP_PKEY* key_;
  std::string pem_;
  std::mutex mutex_;
  std::map<std::string, Minted> leaves_;
};

// The context for TLS to real hosts: TLS ≥ 1.2, peer verification against the
// system store plus `extra_ca_file` (if not empty), ALPN http/1.1.
Result<std::shared_ptr<SSL_CTX>> upstream_context(const std::string& extra_ca_file);

// A client context trusting only `ca_pem` (empty: the system store), for TLS to a SOCKS proxy.
Result<std::shared_ptr<SSL_CTX>> client_context_trusting(const std::string& ca_pem);

}  // namespace abx::egress
