#include "egress/http_rewrite.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "egress/http_text.h"

namespace abx::egress {
namespace {

// Requests sent and not yet answered that a connection's log keeps: beyond
// this a client is pipelining far ahead of its server, and is refused.
constexpr size_t kMaxUnanswered = 1024;
constexpr size_t kMaxNotedPath = 512;

// "GET /a/b?token=x HTTP/1.1" → {"GET", "/a/b"}; bounded.
std::pair<std::string, std::string> method_and_path(std::string_view request_line) {
  const size_t space = request_line.find(' ');
  if (space == std::string_view::npos) return {};
  std::string_view target = request_line.substr(space + 1);
  target = target.substr(0, target.find(' '));
  target = target.substr(0, target.find('?'));
  return {std::string(request_line.substr(0, space)), std::string(target.substr(0, kMaxNotedPath))};
}

}  // namespace

RequestRewriter::RequestRewriter(HostRule rule, std::string host, SecretLookup secret,
                                 bool secrets_allowed, ExchangeLog* log, RequestObserver observe)
    : rule_(std::move(rule)),
      host_(std::move(host)),
      secret_(std::move(secret)),
      secrets_allowed_(secrets_allowed),
      log_(log),
      observe_(std::move(observe)) {}

bool RequestRewriter::fail(int status, std::string_view reason) {
  error_ = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
           "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
           std::to_string(reason.size() + 1) + "\r\n\r\n" + std::string(reason) + "\n";
  return false;
}

bool RequestRewriter::feed(std::string_view in, std::string& out) {
  while (!in.empty()) {
    if (tunnel_) {
      out.append(in);
      return true;
    }
    if (body_.active()) {
      if (!body_.feed(in, out)) return fail(400, "Bad Request");
      continue;
    }
    // Look for the end of the head across the pending bytes and the new ones.
    const size_t before = pending_.size();
    const size_t from = before >= 3 ? before - 3 : 0;
    pending_.append(in.substr(0, std::min(in.size(), kMaxHead + 1 - before)));
    const auto end = pending_.find("\r\n\r\n", from);
    if (end == std::string::npos) {
      if (pending_.size() > kMaxHead) return fail(431, "Request Header Fields Too Large");
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

// Rewrites the head, and tells the observer of the request (a head not even
// a request line is not one).
bool RequestRewriter::on_head(std::string_view text, std::string& out) {
  note_ = RequestNote{};
  const bool sent = rewrite_head(text, out);
  if (observe_ && !note_.method.empty()) {
    if (!sent) note_.refusal = error_.substr(0, error_.find("\r\n"));  // the status line
    observe_(note_);
  }
  return sent;
}

bool RequestRewriter::rewrite_head(std::string_view text, std::string& out) {
  const auto head = parse_head(text);
  if (!head) return fail(400, "Bad Request");
  const std::string_view request_line = head->first_line;
  if (std::count(request_line.begin(), request_line.end(), ' ') != 2)
    return fail(400, "Bad Request");
  std::tie(note_.method, note_.path) = method_and_path(request_line);
  // TRACE echoes the request, added headers (secrets) included, back to the sandbox.
  if (request_line.rfind("TRACE ", 0) == 0) return fail(405, "Method Not Allowed");
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
      const auto n = content_length_of(value);
      if (!n || (length && *length != *n)) return fail(400, "Bad Request");
      length = n;
    }
  }
  if (chunked && length) return fail(400, "Bad Request");  // a smuggling attempt: never guess
  if (log_ != nullptr && log_->requests.size() >= kMaxUnanswered)
    return fail(429, "Too Many Requests: over 1024 unanswered on one connection");

  std::string rewritten(request_line);
  rewritten += "\r\n";
  for (const auto& field : head->fields) {  // (clang 14 cannot capture a structured binding)
    const bool replaced =
        std::any_of(rule_.headers.begin(), rule_.headers.end(),
                    [&](const Header& h) { return iequals(h.name, field.first); });
    if (replaced) continue;
    rewritten.append(field.first).append(": ").append(field.second).append("\r\n");
  }
  if (!add_rule_headers(rewritten)) return false;
  rewritten += "\r\n";
  out += rewritten;
  note(request_line);

  if (upgrade || request_line.rfind("CONNECT ", 0) == 0) {
    tunnel_ = true;  // what follows is not HTTP any more
  } else if (chunked) {
    body_.expect_chunked();
  } else if (length) {
    body_.expect_length(*length);
  }
  return true;
}

// The rule's headers, secrets put in; false (and the error set) if one cannot be sent.
bool RequestRewriter::add_rule_headers(std::string& out) {
  for (const Header& header : rule_.headers) {
    // Refused when the rule is made; a rule stored before that is refused here.
    if (forbidden_rule_header(header.name))
      return fail(502, "Bad Gateway: a rule may not set the header " + header.name);
    std::string value = header.value;
    // "abx-secret:NAME" ends the value: "Bearer abx-secret:NAME" works too.
    if (const auto at = value.find(kSecretPrefix); at != std::string::npos) {
      const std::string name = value.substr(at + kSecretPrefix.size());
      note_.secrets.push_back(name);  // asked for; sent only if the head is
      const auto resolved = secrets_allowed_ && secret_ ? secret_(name, header.name) : std::nullopt;
      if (!resolved) return fail(502, "Bad Gateway: a header secret cannot be sent");
      value = value.substr(0, at) + *resolved;
      if (log_ != nullptr &&
          std::find(log_->secrets.begin(), log_->secrets.end(), *resolved) == log_->secrets.end())
        log_->secrets.push_back(*resolved);
    }
    if (!is_header_name(header.name) || !is_header_value(value))
      return fail(502, "Bad Gateway: a rule header is not valid HTTP");
    out.append(header.name).append(": ").append(value).append("\r\n");
  }
  return true;
}

void RequestRewriter::note(std::string_view request_line) {
  if (log_ == nullptr) return;
  const RequestKind kind = request_line.rfind("HEAD ", 0) == 0      ? RequestKind::kHead
                           : request_line.rfind("CONNECT ", 0) == 0 ? RequestKind::kConnect
                                                                    : RequestKind::kOther;
  log_->requests.push_back(kind);
}

size_t RequestRewriter::read_limit() const {
  constexpr size_t kHeadRead = 512, kPassRead = 64 * 1024;
  if (tunnel_) return kPassRead;
  if (const uint64_t left = body_.data_left(); left > 0)
    return static_cast<size_t>(std::min<uint64_t>(left, kPassRead));
  return kHeadRead;
}

}  // namespace abx::egress
