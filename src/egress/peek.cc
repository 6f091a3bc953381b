#include "egress/peek.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <thread>
#include <vector>

#include "egress/http_text.h"

namespace abx::egress {
namespace {

// A cursor over hostile bytes: every read is checked, a short read fails the parse.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool u8(size_t& out) {
    if (bytes_.size() < 1) return false;
    out = static_cast<unsigned char>(bytes_[0]);
    bytes_.remove_prefix(1);
    return true;
  }
  bool u16(size_t& out) {
    if (bytes_.size() < 2) return false;
    out =
        size_t{static_cast<unsigned char>(bytes_[0])} << 8 | static_cast<unsigned char>(bytes_[1]);
    bytes_.remove_prefix(2);
    return true;
  }
  bool u24(size_t& out) {
    size_t high = 0, low = 0;
    if (!u8(high) || !u16(low)) return false;
    out = high << 16 | low;
    return true;
  }
  bool take(size_t n, std::string_view& out) {
    if (bytes_.size() < n) return false;
    out = bytes_.substr(0, n);
    bytes_.remove_prefix(n);
    return true;
  }
  bool skip(size_t n) {
    std::string_view ignored;
    return take(n, ignored);
  }
  bool empty() const { return bytes_.empty(); }

 private:
  std::string_view bytes_;
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

constexpr size_t kTlsRecordHeader = 5;
constexpr size_t kMaxTlsRecord = 16 * 1024;

// The server_name extension's body: a list of (type, name); type 0 is host_name.
std::string host_name_of(std::string_view extension) {
  Reader r(extension);
  size_t list_size = 0;
  std::string_view list;
  if (!r.u16(list_size) || !r.take(list_size, list)) return {};
  Reader names(list);
  while (!names.empty()) {
    size_t type = 0, size = 0;
    std::string_view name;
    if (!names.u8(type) || !names.u16(size) || !names.take(size, name)) return {};
    if (type == 0) return is_host_name(name) ? lower(name) : std::string();
  }
  return {};
}

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// "host", "host:port", "[v6]:port" → the host part when it is a name or IPv4.
std::string host_of_header(std::string_view value) {
  if (value.empty() || value.front() == '[') return {};
  const auto colon = value.find(':');
  std::string_view host = value.substr(0, colon);
  if (colon != std::string_view::npos) {
    const std::string_view port = value.substr(colon + 1);
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return {};
  }
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  return is_host_name(host) ? lower(host) : std::string();
}

FirstBytes classify_tls(std::string_view bytes) {
  FirstBytes out{Protocol::kTls, {}, false};
  if (bytes.size() < kTlsRecordHeader) return {Protocol::kNeedMore, {}, false};
  const size_t record_size =
      size_t{static_cast<unsigned char>(bytes[3])} << 8 | static_cast<unsigned char>(bytes[4]);
  if (record_size > kMaxTlsRecord + 2048) return out;  // not a TLS record we can read: no name
  if (bytes.size() < kTlsRecordHeader + record_size) return {Protocol::kNeedMore, {}, false};
  out.name = sni_of_client_hello(bytes.substr(0, kTlsRecordHeader + record_size));
  return out;
}

FirstBytes classify_http(std::string_view bytes) {
  auto head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (bytes.size() < kHttpPeekLimit) return {Protocol::kNeedMore, {}, false};
    head_end = bytes.rfind("\r\n");  // a head too long to see whole: its complete lines
    if (head_end == std::string_view::npos) return {Protocol::kHttp, {}, false};
  }
  FirstBytes out{Protocol::kHttp, {}, false};
  std::string_view head = bytes.substr(0, head_end + 2);
  head.remove_prefix(head.find("\r\n") + 2);  // the request line
  bool seen_host = false;
  while (!head.empty()) {
    const auto eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || !iequals(trim(line.substr(0, colon)), "host")) continue;
    if (seen_host) return {Protocol::kHttp, {}, true};
    seen_host = true;
    out.name = host_of_header(trim(line.substr(colon + 1)));
  }
  return out;
}

}  // namespace

bool is_host_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

std::string sni_of_client_hello(std::string_view record) {
  Reader r(record);
  size_t content_type = 0, ignored = 0, record_size = 0;
  if (!r.u8(content_type) || content_type != 0x16 || !r.u16(ignored) || !r.u16(record_size))
    return {};
  std::string_view body;
  if (!r.take(record_size, body)) return {};
  Reader hello(body);
  size_t type = 0, hello_size = 0, size = 0;
  if (!hello.u8(type) || type != 0x01 || !hello.u24(hello_size)) return {};
  // A ClientHello longer than its first record is cut: what follows is unread (no name).
  std::string_view message;
  if (!hello.take(hello_size, message)) return {};
  Reader m(message);
  if (!m.skip(2 + 32)) return {};                            // version, random
  if (!m.u8(size) || size > 32 || !m.skip(size)) return {};  // session id
  if (!m.u16(size) || !m.skip(size)) return {};              // cipher suites
  if (!m.u8(size) || !m.skip(size)) return {};               // compression methods
  size_t extensions_size = 0;
  std::string_view extensions;
  if (!m.u16(extensions_size) || !m.take(extensions_size, extensions)) return {};
  Reader e(extensions);
  while (!e.empty()) {
    size_t extension_type = 0, extension_size = 0;
    std::string_view extension;
    if (!e.u16(extension_type) || !e.u16(extension_size) || !e.take(extension_size, extension))
      return {};
    if (extension_type == 0) return host_name_of(extension);
  }
  return {};
}

FirstBytes classify(std::string_view bytes) {
  if (bytes.empty()) return {Protocol::kNeedMore, {}, false};
  if (bytes[0] == 0x16) {
    if (bytes.size() >= 2 && bytes[1] != 0x03) return {};
    return classify_tls(bytes);
  }
  // An HTTP request line starts with a method token and a space.
  const size_t token = static_cast<size_t>(
      std::find_if_not(bytes.begin(), bytes.end(), is_token_char) - bytes.begin());
  if (token == bytes.size())
    return {token < 32 ? Protocol::kNeedMore : Protocol::kOther, {}, false};
  if (token == 0 || token > 32 || bytes[token] != ' ') return {};
  return classify_http(bytes);
}

namespace {

// Poll says a socket is readable while bytes wait in it, and a peek leaves
// them there: so the peek asks to be woken only once more than `seen` bytes
// are in (TCP honours the low mark in poll), instead of waking at once again.
void wake_past(int fd, size_t seen) {
  const int low_mark = static_cast<int>(seen + 1);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &low_mark, sizeof low_mark);
}

}  // namespace

FirstBytes peek_first_bytes(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<char> buffer(kHttpPeekLimit);
  size_t seen = 0;
  FirstBytes first{Protocol::kNeedMore, {}, false};
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0) {
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      break;  // closed before saying anything
    }
    const size_t size = static_cast<size_t>(n);
    first = classify(std::string_view(buffer.data(), size));
    if (first.protocol != Protocol::kNeedMore) break;
    if (size == seen) {
      // No new bytes: the client has closed its side (nothing more will come),
      // or the socket ignores the low mark (not TCP) and is waited on gently.
      if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    seen = size;
    wake_past(fd, seen);
  }
  if (seen > 0) wake_past(fd, 0);  // the relay reads as usual
  if (first.protocol != Protocol::kNeedMore) return first;
  FirstBytes unknown = classify(std::string_view(buffer.data(), seen));
  if (unknown.protocol == Protocol::kNeedMore) unknown.protocol = Protocol::kOther;
  return unknown;
}

}  // namespace abx::egress
