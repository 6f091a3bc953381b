#include "egress/tls_ca.h"

#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include "common/fd_io.h"
#include "common/unique_fd.h"

namespace abx::egress {
namespace {

constexpr long kCaDays = 3650;
constexpr long kLeafDays = 7;
constexpr auto kLeafReuse = std::chrono::hours(24);
constexpr size_t kMaxCachedLeaves = 1024;

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

Error ssl_error(const std::string& step) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  char text[256] = "unknown error";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  return Error::with_message(step + ": " + text);
}

std::string pem_of(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string pem_of_key(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

bool set_random_serial(X509* cert) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
  bytes[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  const bool ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
  BN_free(bn);
  return ok;
}

// The common part of a certificate: version 3, serial, validity, key, subject CN.
X509Ptr new_certificate(EVP_PKEY* key, const std::string& common_name, long days) {
  X509Ptr cert(X509_new());
  if (!cert || X509_set_version(cert.get(), 2) != 1 || !set_random_serial(cert.get()) ||
      !X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), days * 24 * 3600) ||
      X509_set_pubkey(cert.get(), key) != 1)
    return nullptr;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  // A CN holds at most 64 characters; the SAN is what clients check anyway.
  if (common_name.size() <= 64 &&
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1)
    return nullptr;
  return cert;
}

bool add_dns_name(X509* cert, const std::string& name) {
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  GENERAL_NAME* entry = GENERAL_NAME_new();
  ASN1_IA5STRING* text = ASN1_IA5STRING_new();
  bool ok = names && entry && text &&
            ASN1_STRING_set(text, name.data(), static_cast<int>(name.size())) == 1;
  if (ok) {
    GENERAL_NAME_set0_value(entry, GEN_DNS, text);
    text = nullptr;
    ok = sk_GENERAL_NAME_push(names, entry) > 0;
    if (ok) entry = nullptr;
  }
  ok = ok && X509_add1_ext_i2d(cert, NID_subject_alt_name, names, 1, X509V3_ADD_DEFAULT) == 1;
  ASN1_IA5STRING_free(text);
  GENERAL_NAME_free(entry);
  sk_GENERAL_NAME_pop_free(names, GENERAL_NAME_free);
  return ok;
}

Result<std::pair<X509Ptr, KeyPtr>> create_ca() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return ssl_error("egress CA: generate key");
  unsigned char id[4];
  RAND_bytes(id, sizeof id);
  char suffix[16];
  snprintf(suffix, sizeof suffix, "%02x%02x%02x%02x", id[0], id[1], id[2], id[3]);
  X509Ptr cert =
      new_certificate(key.get(), std::string("Agent Sandbox egress CA ") + suffix, kCaDays);
  if (!cert || X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) != 1 ||
      !add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash") ||
      X509_sign(cert.get(), key.get(), EVP_sha256()) == 0)
    return ssl_error("egress CA: make certificate");
  return std::pair{std::move(cert), std::move(key)};
}

// Writes `data` to `path` through a temporary file and a rename, with `mode`.
Status write_private(const std::filesystem::path& path, const std::string& data, mode_t mode) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  ::unlink(temporary.c_str());
  UniqueFd fd(
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
  if (!fd.valid()) return Error::from_errno("egress CA: create", temporary.string());
  if (Status s = write_all(fd.get(), data, "egress CA: write", temporary.string()); !s) return s;
  if (::fsync(fd.get()) != 0) return Error::from_errno("egress CA: fsync", temporary.string());
  if (::rename(temporary.c_str(), path.c_str()) != 0)
    return Error::from_errno("egress CA: rename", path.string());
  return {};
}

Result<std::pair<X509Ptr, KeyPtr>> load_ca(const std::filesystem::path& cert_path,
                                           const std::filesystem::path& key_path) {
  struct stat st {};
  if (::stat(key_path.c_str(), &st) != 0)
    return Error::from_errno("egress CA: stat", key_path.string());
  if ((st.st_mode & 077) != 0)
    return Error::with_message("egress CA: " + key_path.string() +
                               " is readable by group or others: chmod 600 it");
  auto cert_text = read_file(cert_path);
  if (!cert_text) return cert_text.error();
  auto key_text = read_file(key_path);
  if (!key_text) return key_text.error();
  BioPtr cert_bio(BIO_new_mem_buf(cert_text->data(), static_cast<int>(cert_text->size())));
  BioPtr key_bio(BIO_new_mem_buf(key_text->data(), static_cast<int>(key_text->size())));
  X509Ptr cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  KeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  OPENSSL_cleanse(key_text->data(), key_text->size());
  if (!cert || !key || X509_check_private_key(cert.get(), key.get()) != 1)
    return ssl_error("egress CA: " + cert_path.string() + " and " + key_path.string() +
                     " are not a matching certificate and key (remove both to make a new CA)");
  return std::pair{std::move(cert), std::move(key)};
}

int select_http11(SSL*, const unsigned char** out, unsigned char* out_size,
                  const unsigned char* offered, unsigned int offered_size, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_size, kHttp11, sizeof kHttp11, offered, offered_size) !=
      OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;  // the client offers no http/1.1: no ALPN at all
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

std::shared_ptr<SSL_CTX> own(SSL_CTX* ctx) { return std::shared_ptr<SSL_CTX>(ctx, SSL_CTX_free); }

constexpr long kStreamModes = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;

// Read ahead: one read() takes in whatever records the socket holds (up to
// 64 KiB) instead of a header and a record body per record.
void tune_for_streams(SSL_CTX* context) {
  SSL_CTX_set_mode(context, kStreamModes);
  SSL_CTX_set_read_ahead(context, 1);
  SSL_CTX_set_default_read_buffer_len(context, 64 * 1024);
}

}  // namespace

Result<std::unique_ptr<CertificateAuthority>> CertificateAuthority::open(
    const std::filesystem::path& dir) {
  const auto cert_path = dir / "ca.pem", key_path = dir / "ca.key";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error::with_message("egress CA: create " + dir.string() + ": " + ec.message());
  const bool have_cert = std::filesystem::exists(cert_path),
             have_key = std::filesystem::exists(key_path);
  Result<std::pair<X509Ptr, KeyPtr>> pair = Error{};
  if (!have_cert && !have_key) {
    pair = create_ca();
    if (!pair) return pair.error();
    if (Status s = write_private(key_path, pem_of_key(pair->second.get()), 0600); !s)
      return s.error();
    if (Status s = write_private(cert_path, pem_of(pair->first.get()), 0644); !s) return s.error();
  } else {
    pair = load_ca(cert_path, key_path);
    if (!pair) return pair.error();
  }
  std::string pem = pem_of(pair->first.get());
  return std::unique_ptr<CertificateAuthority>(
      new CertificateAuthority(pair->first.release(), pair->second.release(), std::move(pem)));
}

CertificateAuthority::CertificateAuthority(X509* cert, EVP_PKEY* key, std::string pem)
    : cert_(cert), key_(key), pem_(std::move(pem)) {}

CertificateAuthority::~CertificateAuthority() {
  X509_free(cert_);
  EVP_PKEY_free(key_);
}

std::shared_ptr<SSL_CTX> CertificateAuthority::server_context(const std::string& name) {
  const auto now = std::chrono::system_clock::now();
  std::lock_guard lock(mutex_);
  if (auto it = leaves_.find(name); it != leaves_.end() && now - it->second.at < kLeafReuse)
    return it->second.context;
  if (leaves_.size() >= kMaxCachedLeaves) leaves_.clear();
  auto context = mint(name);
  if (context) leaves_[name] = Minted{context, now};
  return context;
}

std::shared_ptr<SSL_CTX> CertificateAuthority::mint(const std::string& name) {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return nullptr;
  X509Ptr cert = new_certificate(key.get(), name, kLeafDays);
  if (!cert || X509_set_issuer_name(cert.get(), X509_get_subject_name(cert_)) != 1 ||
      !add_extension(cert.get(), cert_, NID_basic_constraints, "critical,CA:FALSE") ||
      !add_extension(cert.get(), cert_, NID_key_usage, "critical,digitalSignature") ||
      !add_extension(cert.get(), cert_, NID_ext_key_usage, "serverAuth") ||
      !add_extension(cert.get(), cert_, NID_authority_key_identifier, "keyid:always") ||
      !add_dns_name(cert.get(), name) || X509_sign(cert.get(), key_, EVP_sha256()) == 0) {
    ERR_clear_error();
    return nullptr;
  }
  auto context = own(SSL_CTX_new(TLS_server_method()));
  if (!context || SSL_CTX_set_min_proto_version(context.get(), TLS1_2_VERSION) != 1 ||
      SSL_CTX_use_certificate(context.get(), cert.get()) != 1 ||
      SSL_CTX_use_PrivateKey(context.get(), key.get()) != 1) {
    ERR_clear_error();
    return nullptr;
  }
  tune_for_streams(context.get());
  SSL_CTX_set_options(context.get(), SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_alpn_select_cb(context.get(), select_http11, nullptr);
  return context;
}

Result<std::shared_ptr<SSL_CTX>> upstream_context(const std::string& extra_ca_file) {
  auto context = own(SSL_CTX_new(TLS_client_method()));
  if (!context || SSL_CTX_set_min_proto_version(context.get(), TLS1_2_VERSION) != 1)
    return ssl_error("egress: upstream TLS context");
  if (SSL_CTX_set_default_verify_paths(context.get()) != 1) ERR_clear_error();  // may be empty
  if (!extra_ca_file.empty() &&
      SSL_CTX_load_verify_locations(context.get(), extra_ca_file.c_str(), nullptr) != 1)
    return ssl_error("egress: load upstream CA file " + extra_ca_file);
  SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER, nullptr);
  tune_for_streams(context.get());
  SSL_CTX_set_options(context.get(), SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  SSL_CTX_set_alpn_protos(context.get(), kHttp11, sizeof kHttp11);
  return context;
}

Result<std::shared_ptr<SSL_CTX>> client_context_trusting(const std::string& ca_pem) {
  auto context = own(SSL_CTX_new(TLS_client_method()));
  if (!context || SSL_CTX_set_min_proto_version(context.get(), TLS1_2_VERSION) != 1)
    return ssl_error("egress: SOCKS TLS context");
  if (ca_pem.empty()) {
    if (SSL_CTX_set_default_verify_paths(context.get()) != 1) ERR_clear_error();
  } else {
    BioPtr bio(BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size())));
    X509_STORE* store = SSL_CTX_get_cert_store(context.get());
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      added += X509_STORE_add_cert(store, cert);
      X509_free(cert);
    }
    ERR_clear_error();  // the end of the PEM text reads as an error
    if (added == 0) return Error::with_message("egress: the SOCKS proxy's CA is not PEM");
  }
  SSL_CTX_set_verify(context.get(), SSL_VERIFY_PEER, nullptr);
  tune_for_streams(context.get());
  SSL_CTX_set_options(context.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
  return context;
}

}  // namespace abx::egress
