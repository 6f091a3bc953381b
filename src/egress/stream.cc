#include "egress/stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <mutex>

namespace abx::egress {
namespace {

// A BIO that reads and writes through a Stream, so TLS can run over TLS.
int bio_write(BIO* bio, const char* data, int size) {
  auto* inner = static_cast<Stream*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  const IoResult r = inner->write(data, static_cast<size_t>(size));
  if (r.status == Io::kOk) return static_cast<int>(r.bytes);
  if (r.status == Io::kWouldBlock) {
    if (inner->write_wants() & POLLIN)
      BIO_set_retry_read(bio);
    else
      BIO_set_retry_write(bio);
  }
  return -1;
}

int bio_read(BIO* bio, char* buffer, int size) {
  auto* inner = static_cast<Stream*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  const IoResult r = inner->read(buffer, static_cast<size_t>(size));
  if (r.status == Io::kOk) return static_cast<int>(r.bytes);
  if (r.status == Io::kEof) return 0;
  if (r.status == Io::kWouldBlock) {
    if (inner->read_wants() & POLLOUT)
      BIO_set_retry_write(bio);
    else
      BIO_set_retry_read(bio);
  }
  return -1;
}

long bio_ctrl(BIO*, int command, long, void*) { return command == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* stream_bio_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "abx stream");
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  return method;
}

int clamp_int(size_t size) { return size > INT_MAX ? INT_MAX : static_cast<int>(size); }

}  // namespace

IoResult PlainStream::read(char* buffer, size_t size) {
  for (;;) {
    const ssize_t n = ::recv(fd_, buffer, size, 0);
    if (n > 0) return {Io::kOk, static_cast<size_t>(n)};
    if (n == 0) return {Io::kEof, 0};
    if (errno == EINTR) continue;
    return {errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWouldBlock : Io::kError, 0};
  }
}

IoResult PlainStream::write(const char* data, size_t size) {
  for (;;) {
    const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
    if (n >= 0) return {Io::kOk, static_cast<size_t>(n)};
    if (errno == EINTR) continue;
    return {errno == EAGAIN || errno == EWOULDBLOCK ? Io::kWouldBlock : Io::kError, 0};
  }
}

void PlainStream::shutdown_write() { ::shutdown(fd_, SHUT_WR); }

TlsStream::TlsStream(SSL* ssl, Stream& inner) : ssl_(ssl), inner_(inner) {
  BIO* bio = BIO_new(stream_bio_method());
  BIO_set_data(bio, &inner_);
  SSL_set_bio(ssl_, bio, bio);
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

IoResult TlsStream::result_of(int ret, short& wants) {
  if (ret > 0) return {Io::kOk, static_cast<size_t>(ret)};
  const int error = SSL_get_error(ssl_, ret);
  ERR_clear_error();  // errors are per thread: never leave one for the next connection
  switch (error) {
    case SSL_ERROR_WANT_READ:
      wants = POLLIN;
      return {Io::kWouldBlock, 0};
    case SSL_ERROR_WANT_WRITE:
      wants = POLLOUT;
      return {Io::kWouldBlock, 0};
    case SSL_ERROR_ZERO_RETURN:
      return {Io::kEof, 0};
    default:
      return {Io::kError, 0};
  }
}

Status TlsStream::handshake(Clock::time_point deadline) {
  for (;;) {
    const int ret = SSL_do_handshake(ssl_);
    if (ret == 1) return {};
    const int error = SSL_get_error(ssl_, ret);
    if (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE) {
      const unsigned long code = ERR_peek_last_error();
      char text[256] = "the peer closed the connection";
      if (code != 0) ERR_error_string_n(code, text, sizeof text);
      ERR_clear_error();
      return Error::with_message(std::string("TLS handshake: ") + text);
    }
    const short events = error == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    if (!wait_for(fd(), events, deadline)) return Error::with_message("TLS handshake: timed out");
  }
}

// SSL_read hands out one TLS record (at most 16 KiB) a call: the records
// already read ahead from the socket are taken too, so a relay step moves a
// full buffer rather than a record per poll.
IoResult TlsStream::read(char* buffer, size_t size) {
  IoResult first = result_of(SSL_read(ssl_, buffer, clamp_int(size)), read_wants_);
  while (first.status == Io::kOk && first.bytes < size && SSL_has_pending(ssl_) == 1) {
    const int more = SSL_read(ssl_, buffer + first.bytes, clamp_int(size - first.bytes));
    if (more <= 0) {
      ERR_clear_error();  // what it was shows again on the next read
      break;
    }
    first.bytes += static_cast<size_t>(more);
  }
  return first;
}

IoResult TlsStream::write(const char* data, size_t size) {
  if (size == 0) return {Io::kOk, 0};
  return result_of(SSL_write(ssl_, data, clamp_int(size)), write_wants_);
}

void TlsStream::shutdown_write() {
  if (shut_) return;
  shut_ = true;
  SSL_shutdown(ssl_);  // close_notify, best effort; reading goes on
  ERR_clear_error();
  inner_.shutdown_write();
}

bool TlsStream::buffered() const { return SSL_pending(ssl_) > 0 || inner_.buffered(); }

bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

bool write_all(Stream& stream, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const IoResult r = stream.write(data.data(), data.size());
    if (r.status == Io::kOk) {
      data.remove_prefix(r.bytes);
    } else if (r.status != Io::kWouldBlock ||
               !wait_for(stream.fd(), stream.write_wants(), deadline)) {
      return false;
    }
  }
  return true;
}

bool read_exact(Stream& stream, char* buffer, size_t size, Clock::time_point deadline) {
  size_t done = 0;
  while (done < size) {
    const IoResult r = stream.read(buffer + done, size - done);
    if (r.status == Io::kOk) {
      done += r.bytes;
    } else if (r.status != Io::kWouldBlock ||
               !wait_for(stream.fd(), stream.read_wants(), deadline)) {
      return false;
    }
  }
  return true;
}

}  // namespace abx::egress
