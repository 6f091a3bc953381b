#include "daemon/sandbox_trust.h"

#include "common/fd_io.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon {
namespace {

constexpr const char* kBundle = "/etc/ssl/certs/ca-certificates.crt";  // Debian's
constexpr const char* kOwnFile = "/etc/ssl/certs/abx-egress-ca.pem";   // /usr may be read-only
constexpr size_t kMaxBundleBytes = 8 << 20;

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

Status install_egress_ca(const runtime::Sandbox& sandbox, const std::string& ca_pem) {
  auto bundle = read_bundle(sandbox);
  if (!bundle) return bundle.error();
  if (bundle->find(ca_pem) == std::string::npos) {
    if (!bundle->empty() && bundle->back() != '\n') bundle->push_back('\n');
    if (auto s = write_file(sandbox, kBundle, *bundle + ca_pem); !s) return s;
  }
  return write_file(sandbox, kOwnFile, ca_pem);
}

std::map<std::string, std::string> egress_ca_env() {
  return {{"SSL_CERT_FILE", kBundle},
          {"REQUESTS_CA_BUNDLE", kBundle},
          {"NODE_EXTRA_CA_CERTS", kOwnFile}};
}

}  // namespace abx::daemon
