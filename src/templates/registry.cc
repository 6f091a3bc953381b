#include "templates/registry.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "egress/lookup.h"
#include "templates/child_process.h"
#include "templates/tree_ops.h"

namespace abx::templates::registry {
namespace {

using nlohmann::json;

constexpr const char* kSkopeo = "skopeo";
constexpr size_t kMaxReference = 512;
// A registry that stops answering mid-blob would hold a pull (and its lane) for
// ever: skopeo gives up after this, however large the image.
constexpr const char* kCommandTimeout = "--command-timeout=2h";
// The templates filesystem (usually also the state db's and every sandbox's)
// keeps this share free, as an upload does: a registry's blobs are as large
// as it says, and skopeo writes them there.
constexpr double kFreeReserve = 0.10;

bool is_host(const std::string& part) {
  return part == "localhost" || part.find('.') != std::string::npos ||
         part.find(':') != std::string::npos;
}

// A reference's characters: what Docker's grammar allows, nothing a shell or
// skopeo's "transport:" syntax could read otherwise.
bool plain_chars(const std::string& text) {
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_' || c == '/' || c == ':' || c == '@' ||
                    c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

// The credentials file skopeo reads: Docker's config.json with one entry.
Result<fs::path> write_authfile(const Access& access, const fs::path& private_dir) {
  if (access.credentials_json.empty()) return fs::path();
  json entry = json::parse(access.credentials_json, nullptr, false);
  const json doc = {{"auths", {{access.ref.host, entry}}}};
  const fs::path path = private_dir / "auth.json";
  if (auto st = tree::write_text(path, doc.dump(), 0600); !st) return st.error();
  return path;
}

// skopeo's last lines say what went wrong; the usual causes get our words.
Error copy_failed(const char* verb, const Access& access, const ChildResult& result) {
  std::string last = result.tail.empty() ? "" : result.tail.back();
  std::string all;
  for (const auto& line : result.tail) all += line + "\n";
  const std::string where = access.ref.text();
  if (all.find("unauthorized") != std::string::npos ||
      all.find("authentication required") != std::string::npos ||
      all.find("401 Unauthorized") != std::string::npos || all.find("denied") != std::string::npos)
    return Error{std::string(verb) + " " + where, EACCES,
                 "the registry refused access; run `abx registry login " + access.ref.host + "`"};
  if (all.find("did not match") != std::string::npos ||
      all.find("digest mismatch") != std::string::npos)
    return Error{
        std::string(verb) + " " + where, EBADMSG,
        "a blob's digest did not match what the registry promised; refused (" + last + ")"};
  if (all.find("manifest unknown") != std::string::npos ||
      all.find("name unknown") != std::string::npos)
    return Error{std::string(verb) + " " + where, ENOENT, "the registry has no such image"};
  if (all.find("http: server gave HTTP response to HTTPS client") != std::string::npos)
    return Error{std::string(verb) + " " + where, EPROTO,
                 "the registry speaks plain HTTP; pass --insecure if you trust the network"};
  return Error{std::string(verb) + " " + where, EIO, "skopeo: " + last};
}

// Whether the filesystem holding `dir` keeps kFreeReserve free.
bool room_left(const fs::path& dir) {
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0 || vfs.f_blocks == 0) return true;
  return static_cast<double>(vfs.f_bavail) >= static_cast<double>(vfs.f_blocks) * kFreeReserve;
}

// `watched`: the dir skopeo writes into, when it does; it is stopped before
// that filesystem runs under the reserve.
Status run_skopeo(const char* verb, const Access& access, std::vector<std::string> argv,
                  const LineFn& progress, const fs::path& watched = {}) {
  bool out_of_room = false;
  KeepGoingFn keep_going;
  if (!watched.empty()) {
    keep_going = [&] {
      out_of_room = !room_left(watched);
      return !out_of_room;
    };
  }
  auto result = run_child(
      argv,
      [&](const std::string& line) {
        if (progress) progress(line);
      },
      keep_going);
  if (out_of_room)
    return Error{std::string(verb) + " " + access.ref.text(), ENOSPC,
                 "the image would leave the templates filesystem under " +
                     std::to_string(static_cast<int>(kFreeReserve * 100)) +
                     " % free; free some space (abx template rm) or pull a smaller image"};
  if (!result && result.error().errnum == ENOENT)
    return Error{std::string(verb) + " " + access.ref.text(), ENOENT,
                 "skopeo is not installed; install it (apt install skopeo) on the daemon's host"};
  if (!result) return result.error();
  if (result->exit_code != 0) return copy_failed(verb, access, *result);
  return {};
}

// The flags for one side ("src" or "dest") of a copy.
Result<std::vector<std::string>> side_flags(const char* side, const Access& access,
                                            const fs::path& private_dir) {
  auto authfile = write_authfile(access, private_dir);
  if (!authfile) return authfile.error();
  const std::string prefix = std::string("--") + side + "-";
  std::vector<std::string> flags;
  // Never the daemon host's own credentials (root's auth.json): the caller's or none.
  if (authfile->empty())
    flags.push_back(prefix + "no-creds");
  else
    flags.push_back(prefix + "authfile=" + authfile->string());
  flags.push_back(prefix + "tls-verify=" + (access.insecure ? "false" : "true"));
  return flags;
}

}  // namespace

bool is_reference(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0) return false;
  const std::string first = text.substr(0, slash);
  return first != "." && first != ".." && is_host(first);
}

Result<Reference> parse_reference(const std::string& text) {
  if (text.size() > kMaxReference || !is_reference(text) || !plain_chars(text) ||
      text.ends_with("/") || text.find("//") != std::string::npos)
    return Error{"registry reference", EINVAL,
                 "'" + text + "' is not a registry reference; use HOST[:PORT]/REPO[:TAG], e.g. " +
                     "registry.example.com/team/app:1.0 or localhost:5000/app"};
  const size_t slash = text.find('/');
  return Reference{text.substr(0, slash), text.substr(slash + 1)};
}

Status check_credentials(const std::string& credentials_json) {
  if (credentials_json.empty()) return {};
  const json entry = json::parse(credentials_json, nullptr, false);
  bool ok = entry.is_object() && !entry.empty();
  if (ok)
    for (const auto& [key, value] : entry.items())
      ok = ok && (key == "auth" || key == "identitytoken") && value.is_string();
  if (!ok)
    return Error{"X-Registry-Auth", EINVAL,
                 "not a credentials entry; expected base64 of {\"auth\": ...} or "
                 "{\"identitytoken\": ...} (abx registry login writes them)"};
  return {};
}

namespace {

// The host part of "host[:port]" or "[v6]:port".
std::string host_name(const std::string& host) {
  if (!host.empty() && host.front() == '[') return host.substr(1, host.find(']') - 1);
  const size_t colon = host.find(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

// An IPv6 address as what it means for `denied` (IPv4): ::1 is loopback,
// ::ffff:a.b.c.d is a.b.c.d; other local ones (link-local, unique local) are
// always denied: 127.0.0.1 stands for them.
std::optional<uint32_t> as_ipv4(const in6_addr& a) {
  if (IN6_IS_ADDR_LOOPBACK(&a) || IN6_IS_ADDR_LINKLOCAL(&a) || (a.s6_addr[0] & 0xfe) == 0xfc)
    return 0x7f000001;
  if (IN6_IS_ADDR_V4MAPPED(&a))
    return (uint32_t{a.s6_addr[12]} << 24) | (uint32_t{a.s6_addr[13]} << 16) |
           (uint32_t{a.s6_addr[14]} << 8) | a.s6_addr[15];
  return std::nullopt;
}

}  // namespace

Resolved resolve(const std::string& name) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  Resolved out;
  out.rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (out.rc != 0) return out;
  for (addrinfo* a = found; a; a = a->ai_next) {
    std::optional<uint32_t> ip;
    if (a->ai_family == AF_INET)
      ip = ntohl(reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr);
    else if (a->ai_family == AF_INET6)
      ip = as_ipv4(reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (ip) out.addresses.push_back(*ip);
  }
  ::freeaddrinfo(found);
  return out;
}

Status check_host(const Reference& ref, const std::function<bool(uint32_t)>& denied,
                  std::chrono::milliseconds timeout, Resolver resolver) {
  const std::string name = host_name(ref.host);
  auto found = egress::within<Resolved>(
      timeout, [name, resolver = std::move(resolver)] { return resolver(name); },
      egress::registry_lookups());
  if (!found && found.error().errnum == ETIMEDOUT)
    return Error::with_message("registry " + ref.host + ": no DNS answer for " + name + " within " +
                                   std::to_string(timeout.count()) +
                                   " ms; check the daemon host's resolver (/etc/resolv.conf)",
                               ETIMEDOUT);
  if (!found)
    return Error::with_message("registry " + ref.host + ": " + found.error().message() +
                                   " (builds looking up registries at once)",
                               EAGAIN);
  if (found->rc != 0) return {};
  std::optional<uint32_t> refused;
  for (const uint32_t ip : found->addresses)
    if (!refused && denied(ip)) refused = ip;
  if (!refused) return {};
  return Error::with_message(
      "registry " + ref.host + " is on this host or a private network (" + name +
          "), which the daemon does not reach for API callers; an admin opens it with "
          "\"registries\": {\"openPrivate\": [\"CIDR\"]} in the daemon's config",
      EACCES);
}

Status pull(const Access& access, const fs::path& layout, const fs::path& private_dir,
            const LineFn& progress) {
  auto flags = side_flags("src", access, private_dir);
  if (!flags) return flags.error();
  std::vector<std::string> argv = {kSkopeo, kCommandTimeout, "copy", "--retry-times=2"};
  argv.insert(argv.end(), flags->begin(), flags->end());
  argv.push_back("docker://" + access.ref.text());
  argv.push_back("oci:" + layout.string());
  return run_skopeo("pull", access, std::move(argv), progress, private_dir);
}

Status push(const fs::path& layout, const Access& access, const fs::path& private_dir,
            const LineFn& progress) {
  auto flags = side_flags("dest", access, private_dir);
  if (!flags) return flags.error();
  std::vector<std::string> argv = {kSkopeo, kCommandTimeout, "copy", "--retry-times=2"};
  argv.insert(argv.end(), flags->begin(), flags->end());
  argv.push_back("oci:" + layout.string());
  argv.push_back("docker://" + access.ref.text());
  return run_skopeo("push", access, std::move(argv), progress);
}

}  // namespace abx::templates::registry
