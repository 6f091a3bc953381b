// Non-blocking byte streams the egress proxy relays between: a TCP socket, or
// TLS over another stream (TLS to a SOCKS proxy, then TLS to the real host
// through it). Blocking helpers bound every wait by a deadline.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string_view>

#include "common/error.h"

using SSL = struct ssl_st;

namespace abx::egress {

using Clock = std::chrono::steady_clock;

enum class Io { kOk, kWouldBlock, kEof, kError };
struct IoResult {
  Io status = Io::kError;
  size_t bytes = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  virtual IoResult read(char* buffer, size_t size) = 0;
  virtual IoResult write(const char* data, size_t size) = 0;
  virtual void shutdown_write() = 0;
  virtual int fd() const = 0;  // the socket underneath, for poll
  // The poll events the last read (write) that would block waits for: TLS may
  // need to write in order to read, and the reverse.
  virtual short read_wants() const = 0;
  virtual short write_wants() const = 0;
  // Bytes readable without the socket becoming readable (decrypted, buffered).
  virtual bool buffered() const { return false; }
};

// A non-blocking TCP socket the stream does not own.
class PlainStream final : public Stream {
 public:
  explicit PlainStream(int fd) : fd_(fd) {}
  IoResult read(char* buffer, size_t size) override;
  IoResult write(const char* data, size_t size) override;
  void shutdown_write() override;
  int fd() const override { return fd_; }
  short read_wants() const override { return POLLIN; }
  short write_wants() const override { return POLLOUT; }

 private:
  int fd_;
};

// TLS over `inner` (which must outlive it); owns the SSL object.
class TlsStream final : public Stream {
 public:
  TlsStream(SSL* ssl, Stream& inner);
  ~TlsStream() override;
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // SSL_accept or SSL_connect (as the SSL object was set up), until `deadline`.
  Status handshake(Clock::time_point deadline);
  IoResult read(char* buffer, size_t size) override;
  IoResult write(const char* data, size_t size) override;
  void shutdown_write() override;
  int fd() const override { return inner_.fd(); }
  short read_wants() const override { return read_wants_; }
  short write_wants() const override { return write_wants_; }
  bool buffered() const override;
  SSL* ssl() const { return ssl_; }

 private:
  IoResult result_of(int ret, short& wants);
  SSL* ssl_;
  Stream& inner_;
  short read_wants_ = POLLIN, write_wants_ = POLLOUT;
  bool shut_ = false;
};

// Waits until `fd` has one of `events` (or an error/hangup); false at the deadline.
bool wait_for(int fd, short events, Clock::time_point deadline);
// Writes all of `data` / reads exactly `size` bytes, waiting until `deadline`.
bool write_all(Stream& stream, std::string_view data, Clock::time_point deadline);
bool read_exact(Stream& stream, char* buffer, size_t size, Clock::time_point deadline);

}  // namespace abx::egress
