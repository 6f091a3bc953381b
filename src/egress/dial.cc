#include "egress/dial.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "egress/lookup.h"
#include "egress/tls_ca.h"

namespace abx::egress {
namespace {

Error socks_error(const std::string& what) { return Error::with_message("SOCKS5 proxy: " + what); }

// The IPv4 addresses of a SOCKS proxy's host (a literal or a name), looked
// up within what is left of the dial's time.
Result<std::vector<uint32_t>> addresses_of(const std::string& host, Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  auto addresses = ipv4_addresses(host, std::max(left, std::chrono::milliseconds(1)));
  if (!addresses) return socks_error("resolve " + host + ": " + addresses.error().message());
  return addresses;
}

bool send_bytes(Stream& s, const std::vector<unsigned char>& bytes, Clock::time_point deadline) {
  return write_all(s, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                   deadline);
}

Status socks_authenticate(Stream& s, const SocksProxy& proxy, Clock::time_point deadline) {
  const bool with_password = !proxy.username.empty();
  if (proxy.username.size() > 255 || proxy.password.size() > 255)
    return socks_error("username and password must be at most 255 bytes");
  const std::vector<unsigned char> greeting =
      with_password ? std::vector<unsigned char>{5, 1, 2} : std::vector<unsigned char>{5, 1, 0};
  unsigned char choice[2];
  if (!send_bytes(s, greeting, deadline) ||
      !read_exact(s, reinterpret_cast<char*>(choice), 2, deadline))
    return socks_error("no answer to the greeting");
  if (choice[0] != 5) return socks_error("not a SOCKS5 server");
  if (choice[1] != (with_password ? 2 : 0)) return socks_error("refused the authentication method");
  if (!with_password) return {};
  std::vector<unsigned char> request{1, static_cast<unsigned char>(proxy.username.size())};
  request.insert(request.end(), proxy.username.begin(), proxy.username.end());
  request.push_back(static_cast<unsigned char>(proxy.password.size()));
  request.insert(request.end(), proxy.password.begin(), proxy.password.end());
  unsigned char status[2];
  const bool sent = send_bytes(s, request, deadline);
  std::fill(request.begin(), request.end(), 0);
  if (!sent || !read_exact(s, reinterpret_cast<char*>(status), 2, deadline))
    return socks_error("no answer to the authentication");
  if (status[1] != 0) return socks_error("wrong username or password");
  return {};
}

Status socks_connect(Stream& s, uint32_t ip, uint16_t port, Clock::time_point deadline) {
  const std::vector<unsigned char> request{5,
                                           1,
                                           0,
                                           1,
                                           static_cast<unsigned char>(ip >> 24),
                                           static_cast<unsigned char>(ip >> 16),
                                           static_cast<unsigned char>(ip >> 8),
                                           static_cast<unsigned char>(ip),
                                           static_cast<unsigned char>(port >> 8),
                                           static_cast<unsigned char>(port)};
  unsigned char reply[4];
  if (!send_bytes(s, request, deadline) ||
      !read_exact(s, reinterpret_cast<char*>(reply), 4, deadline))
    return socks_error("no answer to CONNECT");
  if (reply[0] != 5) return socks_error("not a SOCKS5 server");
  if (reply[1] != 0) return socks_error("CONNECT refused (reply " + std::to_string(reply[1]) + ")");
  size_t address_size = 0;
  if (reply[3] == 1) {
    address_size = 4;
  } else if (reply[3] == 4) {
    address_size = 16;
  } else if (reply[3] == 3) {
    char size = 0;
    if (!read_exact(s, &size, 1, deadline)) return socks_error("short CONNECT reply");
    address_size = static_cast<unsigned char>(size);
  } else {
    return socks_error("bad address type in the CONNECT reply");
  }
  char bound[258];
  if (!read_exact(s, bound, address_size + 2, deadline)) return socks_error("short CONNECT reply");
  return {};
}

Status start_tls(Tunnel& tunnel, const SocksProxy& proxy, Clock::time_point deadline) {
  auto context = client_context_trusting(proxy.tls_ca_pem);
  if (!context) return context.error();
  SSL* ssl = SSL_new(context->get());
  if (ssl == nullptr) return socks_error("TLS setup failed");
  const std::string& name = proxy.tls_server_name.empty() ? proxy.host : proxy.tls_server_name;
  in_addr literal{};
  if (::inet_pton(AF_INET, name.c_str(), &literal) == 1) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl, name.c_str());
    SSL_set1_host(ssl, name.c_str());
  }
  SSL_set_connect_state(ssl);
  tunnel.tls = std::make_unique<TlsStream>(ssl, *tunnel.plain);
  if (Status s = tunnel.tls->handshake(deadline); !s) return socks_error(s.error().message());
  return {};
}

}  // namespace

Status connect_tcp(int fd, uint32_t ip, uint16_t port, Clock::time_point deadline) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(ip);
  address.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    if (errno != EINPROGRESS) return Error::from_errno("connect");
    if (!wait_for(fd, POLLOUT, deadline)) return Error{"connect", ETIMEDOUT};
    int error = 0;
    socklen_t size = sizeof error;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
    if (error != 0) return Error{"connect", error};
  }
  return {};
}

Result<Tunnel> dial_direct(uint32_t ip, uint16_t port, const DialOptions& options) {
  if (options.always_denied && options.always_denied(ip))
    return Error::with_message("the destination is always denied");
  if (Status s = connect_tcp(options.socket, ip, port, options.deadline); !s) return s.error();
  Tunnel tunnel;
  tunnel.plain = std::make_unique<PlainStream>(options.socket);
  return tunnel;
}

Result<Tunnel> dial_socks5(const SocksProxy& proxy, uint32_t ip, uint16_t port,
                           const DialOptions& options) {
  auto addresses = addresses_of(proxy.host, options.deadline);
  if (!addresses) return addresses.error();
  // The first address that may be dialled: one socket per connection, so one attempt.
  const auto allowed = std::find_if(addresses->begin(), addresses->end(), [&](uint32_t address) {
    return !options.always_denied || !options.always_denied(address);
  });
  if (allowed == addresses->end())
    return socks_error("no address of " + proxy.host + " may be dialled");
  if (Status s = connect_tcp(options.socket, *allowed, proxy.port, options.deadline); !s)
    return socks_error("connect to " + proxy.host + ": " + s.error().message());
  Tunnel tunnel;
  tunnel.plain = std::make_unique<PlainStream>(options.socket);
  if (proxy.tls) {
    if (Status s = start_tls(tunnel, proxy, options.deadline); !s) return s.error();
  }
  if (Status s = socks_authenticate(tunnel.stream(), proxy, options.deadline); !s) return s.error();
  if (Status s = socks_connect(tunnel.stream(), ip, port, options.deadline); !s) return s.error();
  return tunnel;
}

}  // namespace abx::egress
