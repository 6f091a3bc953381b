#include "egress/lookup.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <atomic>

namespace abx::egress {
bool LookupSlots::take() {
  size_t now = running_.load();
  do {
    if (now >= most_) return false;
  } while (!running_.compare_exchange_weak(now, now + 1));
  return true;
}

LookupSlots& proxy_lookups() {
  static LookupSlots* slots = new LookupSlots(kMaxLookups);  // never destroyed: see LookupSlots
  return *slots;
}

LookupSlots& registry_lookups() {
  static LookupSlots* slots = new LookupSlots(8);
  return *slots;
}

namespace {

struct Found {
  int rc = 0;
  std::vector<uint32_t> addresses;
};

Found getaddrinfo_ipv4(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  Found out;
  out.rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found);
  if (out.rc != 0) return out;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next)
    out.addresses.push_back(ntohl(reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr.s_addr));
  ::freeaddrinfo(found);
  return out;
}

}  // namespace

Result<std::vector<uint32_t>> ipv4_addresses(const std::string& name,
                                             std::chrono::milliseconds timeout) {
  auto found = within<Found>(timeout, [name] { return getaddrinfo_ipv4(name); });
  if (!found) return Error{"look up " + name, found.error().errnum, found.error().message()};
  if (found->rc != 0)
    return Error::with_message("look up " + name + ": " + ::gai_strerror(found->rc));
  return std::move(found->addresses);
}

}  // namespace abx::egress
