#include "egress/http_response.h"

#include <algorithm>

#include "egress/http_text.h"

namespace abx::egress {
namespace {

// "HTTP/1.1 200 OK" → 200; nullopt if not a status line.
std::optional<int> status_of(std::string_view line) {
  if (line.rfind("HTTP/1.", 0) != 0 || line.size() < 12 || line[8] != ' ') return std::nullopt;
  const std::string_view code = line.substr(9, 3);
  if (!std::all_of(code.begin(), code.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  if (line.size() > 12 && line[12] != ' ') return std::nullopt;
  return (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
}

}  // namespace

bool ResponseFilter::fail() {
  const std::string reason = "Bad Gateway: the server's response is not HTTP/1.1 the proxy reads";
  error_ =
      "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
      "Content-Length: " +
      std::to_string(reason.size() + 1) + "\r\n\r\n" + reason + "\n";
  return false;
}

bool ResponseFilter::echoes_secret(std::string_view value) const {
  return std::any_of(log_.secrets.begin(), log_.secrets.end(), [&](const std::string& secret) {
    return value.find(secret) != std::string_view::npos;
  });
}

bool ResponseFilter::feed(std::string_view in, std::string& out) {
  while (!in.empty()) {
    if (until_close_) {
      out.append(in);
      return true;
    }
    if (body_.active()) {
      if (!body_.feed(in, out)) return fail();
      continue;
    }
    const size_t before = pending_.size();
    const size_t from = before >= 3 ? before - 3 : 0;
    pending_.append(in.substr(0, std::min(in.size(), kMaxHead + 1 - before)));
    const auto end = pending_.find("\r\n\r\n", from);
    if (end == std::string::npos) {
      if (pending_.size() > kMaxHead) return fail();
      return true;
    }
    const size_t head_size = end + 4;
    in.remove_prefix(head_size - before);
    const std::string head = pending_.substr(0, head_size);
    pending_.clear();
    if (!on_head(head, out)) return false;
  }
  return true;
}

bool ResponseFilter::on_head(std::string_view text, std::string& out) {
  const auto head = parse_head(text);
  const auto status = head ? status_of(head->first_line) : std::nullopt;
  if (!status) return fail();
  std::optional<uint64_t> length;
  bool chunked = false, other_coding = false;
  out.append(head->first_line).append("\r\n");
  for (const auto& [name, value] : head->fields) {
    if (iequals(name, "transfer-encoding"))
      (ends_with_chunked(value) ? chunked : other_coding) = true;
    if (iequals(name, "content-length")) {
      const auto n = content_length_of(value);
      if (!n || (length && *length != *n)) return fail();
      length = n;
    }
    if (echoes_secret(value)) continue;
    out.append(name).append(": ").append(value).append("\r\n");
  }
  out.append("\r\n");
  // RFC 9112 6.3: how long the body is, in order of precedence.
  if (*status == 101) {
    until_close_ = true;  // switched protocols: no longer HTTP
    return true;
  }
  if (*status < 200) return true;  // an interim response: the final one follows
  RequestKind kind = RequestKind::kOther;
  if (!log_.requests.empty()) {
    kind = log_.requests.front();
    log_.requests.pop_front();
  }
  if (kind == RequestKind::kConnect && *status < 300) {
    until_close_ = true;
  } else if (kind == RequestKind::kHead || *status == 204 || *status == 304) {
    // no body
  } else if (chunked && !other_coding) {
    body_.expect_chunked();
  } else if (chunked || other_coding) {
    until_close_ = true;  // not chunked last: the body ends with the connection
  } else if (length) {
    body_.expect_length(*length);
  } else {
    until_close_ = true;
  }
  return true;
}

}  // namespace abx::egress
