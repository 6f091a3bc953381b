#include "egress/http_rewrite.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

#include "egress/http_text.h"

namespace abx::egress {
namespace {

constexpr size_t kMaxLine = 4096;  // a chunk-size or trailer line

bool ends_with_chunked(std::string_view value) {
  const auto comma = value.rfind(',');
  const std::string_view last =
      trim(comma == std::string_view::npos ? value : value.substr(comma + 1));
  return iequals(last, "chunked");
}

// A chunk-size line: hex digits, then optional ";extensions".
std::optional<uint64_t> chunk_size_of(std::string_view line) {
  line = trim(line.substr(0, line.find(';')));
  if (line.empty() || line.size() > 15) return std::nullopt;
  uint64_t size = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
  if (ec != std::errc{} || end != line.data() + line.size()) return std::nullopt;
  return size;
}

struct Head {
  std::string_view request_line;
  std::vector<std::pair<std::string_view, std::string_view>> fields;
};

std::optional<Head> parse_head(std::string_view head) {
  Head out;
  const auto eol = head.find("\r\n");
  out.request_line = head.substr(0, eol);
  if (std::count(out.request_line.begin(), out.request_line.end(), ' ') != 2) return std::nullopt;
  head.remove_prefix(eol + 2);
  while (head.size() > 2) {  // the head ends with an empty line
    const auto end = head.find("\r\n");
    const std::string_view line = head.substr(0, end);
    head.remove_prefix(end + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    if (!is_header_name(name) || !is_header_value(value)) return std::nullopt;  // also obs-fold
    out.fields.emplace_back(name, value);
  }
  return out;
}

}  // namespace

bool is_header_value(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool is_header_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

RequestRewriter::RequestRewriter(HostRule rule, std::string host, SecretLookup secret,
                                 bool secrets_allowed)
    : rule_(std::move(rule)),
      host_(std::move(host)),
      secret_(std::move(secret)),
      secrets_allowed_(secrets_allowed) {}

bool RequestRewriter::fail(int status, std::string_view reason) {
  error_ = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
           "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
           std::to_string(reason.size() + 1) + "\r\n\r\n" + std::string(reason) + "\n";
  return false;
}

// The next line of `in` (with its CRLF) once complete; partial lines collect in pending_.
std::string_view RequestRewriter::take_line(std::string_view& in, bool& complete) {
  const auto eol = in.find('\n');
  pending_.append(in.substr(0, eol == std::string_view::npos ? in.size() : eol + 1));
  in.remove_prefix(eol == std::string_view::npos ? in.size() : eol + 1);
  complete = eol != std::string_view::npos;
  return pending_;
}

bool RequestRewriter::feed(std::string_view in, std::string& out) {
  while (!in.empty()) {
    switch (state_) {
      case State::kHead: {
        // Look for the end of the head across the pending bytes and the new ones.
        const size_t before = pending_.size();
        const size_t from = before >= 3 ? before - 3 : 0;
        pending_.append(in.substr(0, std::min(in.size(), kMaxHead + 1 - before)));
        const auto end = pending_.find("\r\n\r\n", from);
        if (end == std::string::npos) {
          if (pending_.size() > kMaxHead) return fail(431, "Request Header Fields Too Large");
          in = {};
          break;
        }
        const size_t head_size = end + 4;
        in.remove_prefix(head_size - before);
        const std::string head = pending_.substr(0, head_size);
        pending_.clear();
        if (!on_head(head, out)) return false;
        break;
      }
      case State::kBody:
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
        out.append(in.substr(0, n));
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = state_ == State::kBody ? State::kHead : State::kChunkEnd;
        break;
      }
      case State::kChunkEnd: {
        bool complete = false;
        const std::string line(take_line(in, complete));
        if (!complete && line.size() < 2) break;
        if (line != "\r\n") return fail(400, "Bad Request");
        out.append(line);
        pending_.clear();
        state_ = State::kChunkSize;
        break;
      }
      case State::kChunkSize:
      case State::kTrailer: {
        bool complete = false;
        const std::string line(take_line(in, complete));
        if (line.size() > kMaxLine) return fail(400, "Bad Request");
        if (!complete) break;
        pending_.clear();
        if (line.size() < 2 || line[line.size() - 2] != '\r') return fail(400, "Bad Request");
        out.append(line);
        if (state_ == State::kTrailer) {
          if (line == "\r\n") state_ = State::kHead;
          break;
        }
        const auto size = chunk_size_of(std::string_view(line).substr(0, line.size() - 2));
        if (!size) return fail(400, "Bad Request");
        remaining_ = *size;
        state_ = remaining_ == 0 ? State::kTrailer : State::kChunkData;
        break;
      }
      case State::kTunnel:
        out.append(in);
        in = {};
        break;
    }
  }
  return true;
}

bool RequestRewriter::on_head(std::string_view text, std::string& out) {
  const auto head = parse_head(text);
  if (!head) return fail(400, "Bad Request");
  // TRACE echoes the request, added headers (secrets) included, back to the sandbox.
  if (head->request_line.rfind("TRACE ", 0) == 0) return fail(405, "Method Not Allowed");
  std::optional<uint64_t> length;
  bool chunked = false, upgrade = false;
  for (const auto& [name, value] : head->fields) {
    if (iequals(name, "host") && !host_matches(host_, value))
      return fail(421, "Misdirected Request");
    if (iequals(name, "upgrade")) upgrade = true;
    if (iequals(name, "transfer-encoding")) {
      if (!ends_with_chunked(value) || chunked) return fail(400, "Bad Request");
      chunked = true;
    }
    if (iequals(name, "content-length")) {
      uint64_t n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc{} || end != value.data() + value.size() || (length && *length != n))
        return fail(400, "Bad Request");
      length = n;
    }
  }
  if (chunked && length) return fail(400, "Bad Request");  // a smuggling attempt: never guess
  const bool connect = head->request_line.rfind("CONNECT ", 0) == 0;

  std::string rewritten(head->request_line);
  rewritten += "\r\n";
  for (const auto& field : head->fields) {  // (clang 14 cannot capture a structured binding)
    const bool replaced =
        std::any_of(rule_.headers.begin(), rule_.headers.end(),
                    [&](const Header& h) { return iequals(h.name, field.first); });
    if (replaced) continue;
    rewritten.append(field.first).append(": ").append(field.second).append("\r\n");
  }
  for (const Header& header : rule_.headers) {
    std::string value = header.value;
    // "abx-secret:NAME" ends the value: "Bearer abx-secret:NAME" works too.
    if (const auto at = value.find(kSecretPrefix); at != std::string::npos) {
      const std::string name = value.substr(at + kSecretPrefix.size());
      const auto resolved = secrets_allowed_ && secret_ ? secret_(name) : std::nullopt;
      if (!resolved) return fail(502, "Bad Gateway: a header secret cannot be sent");
      value = value.substr(0, at) + *resolved;
    }
    if (!is_header_name(header.name) || !is_header_value(value))
      return fail(502, "Bad Gateway: a rule header is not valid HTTP");
    rewritten.append(header.name).append(": ").append(value).append("\r\n");
  }
  rewritten += "\r\n";
  out += rewritten;

  if (upgrade || connect) {
    state_ = State::kTunnel;  // what follows is not HTTP any more
  } else if (chunked) {
    state_ = State::kChunkSize;
  } else if (length && *length > 0) {
    remaining_ = *length;
    state_ = State::kBody;
  } else {
    state_ = State::kHead;
  }
  return true;
}

size_t RequestRewriter::read_limit() const {
  constexpr size_t kHeadRead = 512, kPassRead = 64 * 1024;
  switch (state_) {
    case State::kBody:
    case State::kChunkData:
      return static_cast<size_t>(std::min<uint64_t>(remaining_, kPassRead));
    case State::kTunnel:
      return kPassRead;
    default:
      return kHeadRead;
  }
}

}  // namespace abx::egress
