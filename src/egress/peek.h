// What a new connection is about, from its first bytes (peeked, left in the
// socket): a TLS ClientHello and its SNI, an HTTP request and its Host, or
// neither. Every input is hostile: bounded, and a malformed name is no name.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace abx::egress {

enum class Protocol { kNeedMore, kTls, kHttp, kOther };

struct FirstBytes {
  Protocol protocol = Protocol::kOther;
  std::string name;        // SNI or Host (without port), lower case; empty: none
  bool ambiguous = false;  // e.g. two Host headers: refuse the connection
};

// The largest prefix looked at: a ClientHello's first record, an HTTP head.
inline constexpr size_t kPeekLimit = 16 * 1024 + 5;
inline constexpr size_t kHttpPeekLimit = 64 * 1024;

// Classifies `bytes`, the start of a connection. kNeedMore: more bytes could
// change the answer (and `bytes` is shorter than the limit).
FirstBytes classify(std::string_view bytes);

// The SNI host_name of a ClientHello (a TLS record starting at bytes[0]);
// empty when there is none or it is malformed.
std::string sni_of_client_hello(std::string_view record);

// Whether `name` is a plausible DNS name (letters, digits, '-', '_', '.'; ≤ 253).
bool is_host_name(std::string_view name);

// Peeks at `fd` (MSG_PEEK: the bytes stay for whoever reads next) until the
// bytes classify or `timeout` passes (then kOther with what is known).
FirstBytes peek_first_bytes(int fd, std::chrono::milliseconds timeout);

}  // namespace abx::egress
