#include "daemon/sandbox_trust.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "common/fd_io.h"
#include "common/unique_fd.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon {
namespace {

constexpr const char* kBundle = "/etc/ssl/certs/ca-certificates.crt";  // Debian's
constexpr const char* kOwnFile = "/etc/ssl/certs/abx-egress-ca.pem";   // /usr may be read-only
constexpr size_t kMaxBundleBytes = 8 << 20;
constexpr size_t kMaxExtraCaBytes = 1 << 20;  // far more than a few corporate CAs

// At most `limit` bytes of an admin's file (a device or a huge file is an error, not a hang
// of the daemon's start).
Result<std::string> read_small_file(const std::filesystem::path& file, size_t limit) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return Error::from_errno("open", file.string());
  std::string text;
  auto append = [&](std::string_view piece) -> Status {
    if (text.size() + piece.size() > limit) return Error{"read", EFBIG, file.string()};
    text.append(piece);
    return {};
  };
  if (auto s = read_to_end(fd.get(), append, file.string()); !s) return s.error();
  return text;
}

// Every certificate in `text`, PEM again; what is not a certificate is left out.
std::string certificates_of(const std::string& text) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(
      BIO_new_mem_buf(text.data(), static_cast<int>(text.size())), &BIO_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> out(BIO_new(BIO_s_mem()), &BIO_free);
  if (!in || !out) return {};
  while (X509* cert = PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr)) {
    PEM_write_bio_X509(out.get(), cert);
    X509_free(cert);
  }
  ERR_clear_error();  // the end of the text reads as an error
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string();
}

// The sandbox's bundle, read as its root; empty if it has none.
Result<std::string> read_bundle(const runtime::Sandbox& sandbox) {
  auto fd = runtime::sandbox_fs::open_read_as(sandbox, kBundle, 0, 0);
  if (!fd) return fd.error().errnum == ENOENT ? Result<std::string>(std::string()) : fd.error();
  std::string text;
  auto append = [&](std::string_view piece) -> Status {
    if (text.size() + piece.size() > kMaxBundleBytes)
      return Error{"read the sandbox's CA bundle", EFBIG, kBundle};
    text.append(piece);
    return {};
  };
  if (auto s = read_to_end(fd->get(), append, kBundle); !s) return s.error();
  return text;
}

Status write_file(const runtime::Sandbox& sandbox, const std::string& path,
                  const std::string& text) {
  auto out = runtime::sandbox_fs::start_write(sandbox, path, 0, 0644);
  if (!out) return out.error();
  if (auto s = out->write(text); !s) return s;
  return out->finish();
}

}  // namespace

Result<std::string> load_extra_ca(const std::filesystem::path& file) {
  const std::string what = "ABX_SANDBOX_EXTRA_CA_FILE=" + file.string();
  auto text = read_small_file(file, kMaxExtraCaBytes);
  if (!text)
    return Error::with_message(what + ": " + text.error().message() +
                               "; name a readable PEM file of CA certificates, or unset it");
  std::string pems = certificates_of(*text);
  if (pems.empty())
    return Error::with_message(what + ": holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  return pems;
}

Status install_trusted_cas(const runtime::Sandbox& sandbox, const std::vector<std::string>& pems) {
  auto bundle = read_bundle(sandbox);
  if (!bundle) return bundle.error();
  std::string added, own;
  for (const std::string& pem : pems) {
    own += pem;
    if (bundle->find(pem) == std::string::npos) added += pem;
  }
  if (!added.empty()) {
    if (!bundle->empty() && bundle->back() != '\n') bundle->push_back('\n');
    if (auto s = write_file(sandbox, kBundle, *bundle + added); !s) return s;
  }
  return write_file(sandbox, kOwnFile, own);
}

std::map<std::string, std::string> egress_ca_env() {
  return {{"SSL_CERT_FILE", kBundle},
          {"REQUESTS_CA_BUNDLE", kBundle},
          {"NODE_EXTRA_CA_CERTS", kOwnFile}};
}

}  // namespace abx::daemon
