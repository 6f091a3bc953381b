// The per-daemon CA the egress proxy signs intercepted hosts' leaves with.
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <fstream>

#include "egress/tls_ca.h"
#include "temp_dir.h"

namespace abx::egress {
namespace {

mode_t mode_of(const std::filesystem::path& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 0777;
}

TEST(EgressCa, IsCreatedOnceWithAPrivateKeyAndReusedAfter) {
  abx::testing::TempDir dir("abx-egress-ca");
  const auto ca_dir = dir.path() / "egress";
  auto first = CertificateAuthority::open(ca_dir);
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(mode_of(ca_dir / "ca.key"), 0600u);
  EXPECT_NE((*first)->pem().find("BEGIN CERTIFICATE"), std::string::npos);
  auto again = CertificateAuthority::open(ca_dir);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ((*again)->pem(), (*first)->pem());
}

TEST(EgressCa, RefusesAKeyOthersCanReadOrACertificateWithoutItsKey) {
  abx::testing::TempDir dir("abx-egress-ca");
  ASSERT_TRUE(CertificateAuthority::open(dir.path()).ok());
  ::chmod((dir.path() / "ca.key").c_str(), 0644);
  auto readable = CertificateAuthority::open(dir.path());
  ASSERT_FALSE(readable.ok());
  EXPECT_NE(readable.error().message().find("chmod 600"), std::string::npos);
  ::chmod((dir.path() / "ca.key").c_str(), 0600);
  abx::testing::TempDir other("abx-egress-ca");
  ASSERT_TRUE(CertificateAuthority::open(other.path()).ok());
  std::filesystem::copy_file(other.path() / "ca.pem", dir.path() / "ca.pem",
                             std::filesystem::copy_options::overwrite_existing);
  auto mismatched = CertificateAuthority::open(dir.path());
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.error().message().find("not a matching"), std::string::npos);
}

TEST(EgressCa, MintsALeafForTheNameThatTheCaVerifies) {
  abx::testing::TempDir dir("abx-egress-ca");
  auto ca = CertificateAuthority::open(dir.path());
  ASSERT_TRUE(ca.ok());
  const auto context = (*ca)->server_context("api.example.com");
  ASSERT_NE(context, nullptr);
  EXPECT_EQ((*ca)->server_context("api.example.com"), context);  // cached
  X509* leaf = SSL_CTX_get0_certificate(context.get());
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(X509_check_host(leaf, "api.example.com", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_host(leaf, "other.example.com", 0, 0, nullptr), 1);
  BIO* bio = BIO_new_mem_buf((*ca)->pem().data(), static_cast<int>((*ca)->pem().size()));
  X509* root = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, root);
  X509_STORE_CTX* verify = X509_STORE_CTX_new();
  X509_STORE_CTX_init(verify, store, leaf, nullptr);
  // Python 3.13 and others verify strictly (key usage, key identifiers): so do we.
  X509_STORE_CTX_set_flags(verify, X509_V_FLAG_X509_STRICT);
  EXPECT_EQ(X509_verify_cert(verify), 1)
      << X509_verify_cert_error_string(X509_STORE_CTX_get_error(verify));
  X509_STORE_CTX_free(verify);
  X509_STORE_free(store);
  X509_free(root);
}

}  // namespace
}  // namespace abx::egress
