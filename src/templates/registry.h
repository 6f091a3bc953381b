// Templates to and from OCI distribution registries, through skopeo (which
// speaks the distribution protocol, its bearer-token and basic auth, and
// checks every blob's digest as it copies). Our side is the OCI image layout
// skopeo reads from or writes to, and the credentials file it is handed.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::templates::registry {

namespace fs = std::filesystem;

// "host[:port]/repo[:tag|@digest]" (a Docker reference naming its registry).
struct Reference {
  std::string host;  // "localhost:5000", "registry.example.com"
  std::string rest;  // "team/app:1.0"
  std::string text() const { return host + "/" + rest; }
};

// Whether `text` names an image in a registry rather than a template or a
// path: it has a '/', and what comes before the first one is "localhost" or
// contains a '.' or a ':' (a host name or a port), as Docker tells them apart.
// "./x.tar" and "../x.tar" are paths.
bool is_reference(const std::string& text);
// The reference, or an error saying what a reference looks like.
Result<Reference> parse_reference(const std::string& text);

struct Access {
  Reference ref;
  // The caller's credentials for ref.host as one entry of Docker's
  // config.json "auths" ({"auth": base64(user:pass)} or {"identitytoken": T});
  // empty: anonymous.
  std::string credentials_json;
  bool insecure = false;  // plain HTTP or an unverified certificate is allowed
};

using LineFn = std::function<void(const std::string& line)>;

// Checks `credentials_json` is one auths entry of string fields.
Status check_credentials(const std::string& credentials_json);

// Copies the image `access.ref` names into a new OCI layout at `layout`
// (the host's platform of a multi-platform image). `private_dir` (0700, the
// caller's, removed by it) holds the credentials file while skopeo runs.
Status pull(const Access& access, const fs::path& layout, const fs::path& private_dir,
            const LineFn& progress);
// Refuses a registry whose host resolves to an address `denied` names (the
// daemon's loopback, private networks, cloud metadata: what an API caller
// must not reach through skopeo, which runs in the host's network). A name
// that does not resolve is left to skopeo to report. Names resolve again
// when skopeo dials: a DNS answer that changes in between is not caught.
// The lookup is given `timeout` (egress::within): getaddrinfo takes no
// deadline, and a resolver that never answers would hold the request's
// thread for ever; past it the pull or push fails naming host and limit.
struct Resolved {
  int rc = 0;                       // getaddrinfo's
  std::vector<uint32_t> addresses;  // IPv4 as `denied` reads them (host order)
};
using Resolver = std::function<Resolved(const std::string& name)>;
Resolved resolve(const std::string& name);  // getaddrinfo, IPv4 and IPv6
inline constexpr std::chrono::milliseconds kLookupTimeout{10000};
Status check_host(const Reference& ref, const std::function<bool(uint32_t)>& denied,
                  std::chrono::milliseconds timeout = kLookupTimeout, Resolver resolver = resolve);
// Copies the single image of the OCI layout at `layout` to `access.ref`.
Status push(const fs::path& layout, const Access& access, const fs::path& private_dir,
            const LineFn& progress);

}  // namespace abx::templates::registry
