// A small world on loopback for the egress proxy's tests: HTTP(S) and echo
// servers that record what reaches them, a SOCKS5 server, and clients that
// hand the proxy a connection as if a sandbox had dialled a destination.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "egress/proxy.h"
#include "egress/relay.h"
#include "egress/stream.h"
#include "egress/tls_ca.h"

namespace abx::egress::testing {

inline constexpr uint32_t kLoopback = 0x7f000001;
inline constexpr auto kWait = std::chrono::seconds(5);

inline sockaddr_in address_of(uint32_t ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(ip);
  a.sin_port = htons(port);
  return a;
}

// A listening socket on ip (any port); `port` receives the port.
inline UniqueFd listen_on(uint32_t ip, uint16_t& port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a = address_of(ip, 0);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd.get(), 64), 0);
  socklen_t size = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &size);
  port = ntohs(a.sin_port);
  return fd;
}

inline void make_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads up to the end of an HTTP head ("\r\n\r\n"); empty on EOF or timeout first.
inline std::string read_head(Stream& s, Clock::time_point deadline) {
  std::string head;
  char c = 0;
  while (head.size() < 256 * 1024 && read_exact(s, &c, 1, deadline)) {
    head.push_back(c);
    if (head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0) return head;
  }
  return {};
}

// Everything until EOF (or the deadline).
inline std::string read_all(Stream& s, Clock::time_point deadline) {
  std::string out;
  char buffer[4096];
  for (;;) {
    const IoResult r = s.read(buffer, sizeof buffer);
    if (r.status == Io::kOk) {
      out.append(buffer, r.bytes);
    } else if (r.status != Io::kWouldBlock || !wait_for(s.fd(), s.read_wants(), deadline)) {
      return out;
    }
  }
}

// A server thread per accepted connection, all joined at destruction.
class Server {
 public:
  explicit Server(uint32_t ip = kLoopback) : listener_(listen_on(ip, port_)) {
    make_nonblocking(listener_.get());
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  virtual ~Server() { stop(); }
  uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 protected:
  // Serves one connection (non-blocking socket); runs in a thread of its own.
  virtual void handle(int fd) = 0;
  // Derived classes call this first in their destructor (their state must outlive the threads).
  void stop() {
    if (stopping_.exchange(true)) return;
    acceptor_.join();
    for (std::thread& t : workers_) t.join();
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      if (!wait_for(listener_.get(), POLLIN, Clock::now() + std::chrono::milliseconds(20)))
        continue;
      int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) continue;
      ++connections_;
      workers_.emplace_back([this, fd] {
        UniqueFd owned(fd);
        handle(fd);
      });
    }
  }
  uint16_t port_ = 0;
  UniqueFd listener_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

// Answers each request "200 ok" (keep-alive) and records its head; TLS when given a context.
class HttpServer : public Server {
 public:
  explicit HttpServer(std::shared_ptr<SSL_CTX> tls = nullptr, uint32_t ip = kLoopback)
      : Server(ip), tls_(std::move(tls)) {}
  ~HttpServer() override { stop(); }
  std::vector<std::string> heads() {
    std::lock_guard lock(mutex_);
    return heads_;
  }

 protected:
  void handle(int fd) override {
    PlainStream plain(fd);
    std::unique_ptr<TlsStream> tls;
    const auto deadline = Clock::now() + kWait;
    if (tls_) {
      SSL* ssl = SSL_new(tls_.get());
      SSL_set_accept_state(ssl);
      tls = std::make_unique<TlsStream>(ssl, plain);
      if (!tls->handshake(deadline)) return;
    }
    Stream& s = tls ? static_cast<Stream&>(*tls) : plain;
    for (;;) {
      const std::string head = read_head(s, deadline);
      if (head.empty()) break;
      {
        std::lock_guard lock(mutex_);
        heads_.push_back(head);
      }
      const auto length = head.find("Content-Length: ");
      if (length != std::string::npos) {
        std::string body(std::stoul(head.substr(length + 16)), '\0');
        if (!read_exact(s, body.data(), body.size(), deadline)) break;
      }
      write_all(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", deadline);
    }
    s.shutdown_write();
  }

 private:
  std::shared_ptr<SSL_CTX> tls_;
  std::mutex mutex_;
  std::vector<std::string> heads_;
};

// Sends back what it reads, until EOF.
class EchoServer : public Server {
 public:
  ~EchoServer() override { stop(); }

 protected:
  void handle(int fd) override {
    PlainStream s(fd);
    char buffer[65536];
    for (;;) {
      const IoResult r = s.read(buffer, sizeof buffer);
      if (r.status == Io::kOk) {
        if (!write_all(s, std::string_view(buffer, r.bytes), Clock::now() + kWait)) return;
      } else if (r.status != Io::kWouldBlock ||
                 !wait_for(fd, POLLIN, Clock::now() + std::chrono::seconds(10))) {
        break;
      }
    }
    s.shutdown_write();
  }
};

// SOCKS5 (RFC 1928; RFC 1929 when given a username) with CONNECT to IPv4 only.
class SocksServer : public Server {
 public:
  // TLS towards its clients when given a context.
  SocksServer(std::string username = {}, std::string password = {},
              std::shared_ptr<SSL_CTX> tls = nullptr)
      : username_(std::move(username)), password_(std::move(password)), tls_(std::move(tls)) {}
  ~SocksServer() override { stop(); }
  std::vector<uint16_t> targets() {
    std::lock_guard lock(mutex_);
    return targets_;
  }

 protected:
  void handle(int fd) override {
    PlainStream plain(fd);
    std::unique_ptr<TlsStream> tls;
    const auto deadline = Clock::now() + kWait;
    if (tls_) {
      SSL* ssl = SSL_new(tls_.get());
      SSL_set_accept_state(ssl);
      tls = std::make_unique<TlsStream>(ssl, plain);
      if (!tls->handshake(deadline)) return;
    }
    Stream& s = tls ? static_cast<Stream&>(*tls) : plain;
    unsigned char greeting[2];
    if (!read_exact(s, reinterpret_cast<char*>(greeting), 2, deadline)) return;
    std::string methods(greeting[1], '\0');
    if (!read_exact(s, methods.data(), methods.size(), deadline)) return;
    const char wanted = username_.empty() ? 0 : 2;
    if (methods.find(wanted) == std::string::npos) {
      write_all(s, std::string("\x05\xff", 2), deadline);
      return;
    }
    write_all(s, std::string{5, wanted}, deadline);
    if (!username_.empty()) {
      unsigned char version_and_size[2];
      if (!read_exact(s, reinterpret_cast<char*>(version_and_size), 2, deadline)) return;
      std::string user(version_and_size[1], '\0');
      unsigned char password_size = 0;
      if (!read_exact(s, user.data(), user.size(), deadline) ||
          !read_exact(s, reinterpret_cast<char*>(&password_size), 1, deadline))
        return;
      std::string password(password_size, '\0');
      if (!read_exact(s, password.data(), password.size(), deadline)) return;
      const bool ok = user == username_ && password == password_;
      write_all(s, std::string{1, ok ? '\0' : '\1'}, deadline);
      if (!ok) return;
    }
    unsigned char request[10];
    if (!read_exact(s, reinterpret_cast<char*>(request), sizeof request, deadline)) return;
    if (request[1] != 1 || request[3] != 1) return;
    uint32_t ip = 0;
    std::memcpy(&ip, request + 4, 4);
    const uint16_t port = static_cast<uint16_t>(request[8] << 8 | request[9]);
    {
      std::lock_guard lock(mutex_);
      targets_.push_back(port);
    }
    UniqueFd out(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const sockaddr_in target = address_of(ntohl(ip), port);
    if (::connect(out.get(), reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0) {
      write_all(s, std::string("\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00", 10), deadline);
      return;
    }
    make_nonblocking(out.get());
    write_all(s, std::string("\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x00", 10), deadline);
    PlainStream upstream(out.get());
    relay(s, upstream, nullptr, nullptr, std::chrono::seconds(10));
  }

 private:
  std::string username_, password_;
  std::shared_ptr<SSL_CTX> tls_;
  std::mutex mutex_;
  std::vector<uint16_t> targets_;
};

// A connection the proxy serves as if the sandbox at 127.0.0.1 had dialled
// dst_ip:port; the returned socket is the sandbox's end (non-blocking).
inline UniqueFd connect_via(EgressProxy& proxy, uint16_t port, uint32_t dst_ip = kLoopback) {
  uint16_t listen_port = 0;
  UniqueFd listener = listen_on(kLoopback, listen_port);
  UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_in a = address_of(kLoopback, listen_port);
  EXPECT_EQ(::connect(client.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  proxy.serve(UniqueFd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC)),
              address_of(dst_ip, port));
  make_nonblocking(client.get());
  return client;
}

// Sends `request`, returns everything the other end sends before closing.
inline std::string exchange(int fd, std::string_view request) {
  PlainStream s(fd);
  const auto deadline = Clock::now() + kWait;
  if (!write_all(s, request, deadline)) return {};
  s.shutdown_write();  // the servers answer and close once the client is done
  return read_all(s, deadline);
}

// TLS to `sni` trusting only `ca_pem`, then `request`; "handshake failed" when TLS does not come
// up.
inline std::string tls_exchange(int fd, const std::string& sni, const std::string& ca_pem,
                                std::string_view request) {
  auto context = client_context_trusting(ca_pem);
  if (!context) return "no context";
  SSL* ssl = SSL_new(context->get());
  SSL_set_tlsext_host_name(ssl, sni.c_str());
  SSL_set1_host(ssl, sni.c_str());
  static const unsigned char kProtocols[] = {2,   'h', '2', 8,   'h', 't',
                                             't', 'p', '/', '1', '.', '1'};
  SSL_set_alpn_protos(ssl, kProtocols, sizeof kProtocols);
  SSL_set_connect_state(ssl);
  PlainStream plain(fd);
  TlsStream tls(ssl, plain);
  const auto deadline = Clock::now() + kWait;
  if (!tls.handshake(deadline)) return "handshake failed";
  if (!write_all(tls, request, deadline)) return "write failed";
  tls.shutdown_write();
  return read_all(tls, deadline);
}

}  // namespace abx::egress::testing
