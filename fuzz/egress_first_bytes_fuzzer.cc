// What the egress proxy reads from a sandbox's first bytes (TLS ClientHello
// SNI, HTTP Host) and the request stream it rewrites for hosts with header
// rules (and the responses it filters when the rule sends a secret), fed in
// pieces as a socket would deliver them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "egress/http_response.h"
#include "egress/http_rewrite.h"
#include "egress/peek.h"

namespace {

constexpr std::string_view kSecret = "SECRET-VALUE";

std::optional<std::string> secret(const std::string& name, const std::string&) {
  if (name == "K") return std::string(kSecret);
  return std::nullopt;
}

// The rewritten stream, or what it said when it refused ("!" + response).
std::string rewrite(std::string_view input, size_t piece, bool secrets_allowed) {
  abx::egress::RequestRewriter rewriter(
      abx::egress::HostRule{"api.com", {{"X-Key", "abx-secret:K"}, {"X-Team", "blue"}}}, "api.com",
      secret, secrets_allowed);
  std::string out;
  for (size_t at = 0; at < input.size(); at += piece)
    if (!rewriter.feed(input.substr(at, piece), out)) return out + "!" + rewriter.error_response();
  return out;
}

// The filtered response stream, or "!" + what it said when it refused.
std::string filter_responses(std::string_view input, size_t piece) {
  abx::egress::ExchangeLog log;
  log.secrets = {std::string(kSecret)};
  log.requests = {abx::egress::RequestKind::kOther, abx::egress::RequestKind::kHead};
  abx::egress::ResponseFilter filter(log);
  std::string out;
  for (size_t at = 0; at < input.size(); at += piece)
    if (!filter.feed(input.substr(at, piece), out)) return out + "!" + filter.error_response();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const abx::egress::FirstBytes first = abx::egress::classify(input);
  if (!first.name.empty() && !abx::egress::is_host_name(first.name)) __builtin_trap();
  const std::string sni = abx::egress::sni_of_client_hello(input);
  if (!sni.empty() && !abx::egress::is_host_name(sni)) __builtin_trap();

  // The same bytes in any pieces are rewritten the same; a secret the rule may
  // not send never appears in what goes upstream.
  const size_t piece = static_cast<size_t>(data[0] % 16) + 1;
  const bool secrets_allowed = (data[0] & 0x80) != 0;
  const std::string whole = rewrite(input, input.size() + 1, secrets_allowed);
  if (rewrite(input, piece, secrets_allowed) != whole) __builtin_trap();
  if (!secrets_allowed && whole.find(kSecret) != std::string::npos) __builtin_trap();
  if (filter_responses(input, piece) != filter_responses(input, input.size() + 1)) __builtin_trap();
  return 0;
}
