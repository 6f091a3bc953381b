// What the egress proxy reads from hostile bytes: the ClientHello's SNI, the
// HTTP Host, and the request stream it rewrites for hosts with rules.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "egress/http_response.h"
#include "egress/http_rewrite.h"
#include "egress/peek.h"

namespace abx::egress {
namespace {

std::string u16(size_t n) { return {static_cast<char>(n >> 8), static_cast<char>(n)}; }
std::string u24(size_t n) { return static_cast<char>(n >> 16) + u16(n); }

// A minimal ClientHello record carrying `name` in server_name.
std::string client_hello(const std::string& name) {
  const std::string server_name = u16(name.size() + 3) + '\0' + u16(name.size()) + name;
  const std::string extensions = u16(0) + u16(server_name.size()) + server_name;
  std::string hello = "\x03\x03" + std::string(32, 'r') + '\0' + u16(2) + "\x13\x01" +
                      std::string("\x01\x00", 2) + u16(extensions.size()) + extensions;
  const std::string handshake = '\x01' + u24(hello.size()) + hello;
  return "\x16\x03\x01" + u16(handshake.size()) + handshake;
}

TEST(EgressPeek, ReadsTheSniOfAClientHello) {
  const std::string record = client_hello("API.Example.com");
  EXPECT_EQ(sni_of_client_hello(record), "api.example.com");
  const FirstBytes first = classify(record);
  EXPECT_EQ(first.protocol, Protocol::kTls);
  EXPECT_EQ(first.name, "api.example.com");
  EXPECT_EQ(classify(record.substr(0, 20)).protocol, Protocol::kNeedMore);
  EXPECT_EQ(classify(client_hello("bad name\n")).name, "");
}

TEST(EgressPeek, SurvivesEveryTruncationAndRandomCorruption) {
  const std::string record = client_hello("a.example.com");
  for (size_t n = 0; n < record.size(); ++n) {
    EXPECT_EQ(sni_of_client_hello(record.substr(0, n)), "");
    (void)classify(record.substr(0, n));
  }
  std::mt19937 random(42);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = record;
    for (int flips = 0; flips < 3; ++flips)
      bytes[random() % bytes.size()] = static_cast<char>(random());
    const std::string name = sni_of_client_hello(bytes);
    EXPECT_TRUE(name.empty() || is_host_name(name));
  }
}

TEST(EgressPeek, ReadsTheHostOfAnHttpRequest) {
  FirstBytes first =
      classify("GET / HTTP/1.1\r\nUser-Agent: x\r\nhost:  Example.com:8080 \r\n\r\n");
  EXPECT_EQ(first.protocol, Protocol::kHttp);
  EXPECT_EQ(first.name, "example.com");
  EXPECT_EQ(classify("GET / HTTP/1.1\r\nHost: a").protocol, Protocol::kNeedMore);
  EXPECT_TRUE(classify("GET / HTTP/1.1\r\nHost: a.com\r\nHost: b.com\r\n\r\n").ambiguous);
  EXPECT_EQ(classify("GET / HTTP/1.1\r\nHost: a b\r\n\r\n").name, "");
  EXPECT_EQ(classify("SSH-2.0-OpenSSH\r\n").protocol, Protocol::kOther);
  EXPECT_EQ(classify(std::string("\x00\x01", 2)).protocol, Protocol::kOther);
}

std::string rewrite(RequestRewriter& r, const std::string& in, size_t piece) {
  std::string out;
  for (size_t i = 0; i < in.size(); i += piece)
    if (!r.feed(std::string_view(in).substr(i, piece), out)) return "ERROR " + r.error_response();
  return out;
}

HostRule rule() { return HostRule{"api.com", {{"X-Key", "abx-secret:K"}, {"X-Team", "blue"}}}; }

std::optional<std::string> secret(const std::string& name, const std::string&) {
  if (name == "K") return std::string("v");
  return std::nullopt;
}

TEST(EgressRewrite, SetsHeadersOnEveryRequestAndPassesBodiesInAnyPieces) {
  const std::string in =
      "POST /a HTTP/1.1\r\nHost: api.com\r\nX-Key: placeholder\r\nContent-Length: 4\r\n\r\nbody"
      "POST /b HTTP/1.1\r\nHost: api.com\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\n"
      "GET /c HTTP/1.1\r\nHost: API.com:443\r\n\r\n";
  const std::string expected =
      "POST /a HTTP/1.1\r\nHost: api.com\r\nContent-Length: 4\r\nX-Key: v\r\nX-Team: blue\r\n\r\n"
      "body"
      "POST /b HTTP/1.1\r\nHost: api.com\r\nTransfer-Encoding: chunked\r\nX-Key: v\r\n"
      "X-Team: blue\r\n\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\n"
      "GET /c HTTP/1.1\r\nHost: API.com:443\r\nX-Key: v\r\nX-Team: blue\r\n\r\n";
  for (const size_t piece : {size_t{1}, size_t{2}, size_t{7}, in.size()}) {
    RequestRewriter r(rule(), "api.com", secret, true);
    EXPECT_EQ(rewrite(r, in, piece), expected) << piece;
  }
}

// The flight record's view: each request's method and path (no query), the
// secrets by name, and the refusal's status line; never a secret's value.
TEST(EgressRewrite, TellsTheObserverOfEachRequestWithSecretNamesOnly) {
  std::vector<RequestNote> notes;
  RequestRewriter r(rule(), "api.com", secret, true, nullptr,
                    [&](const RequestNote& note) { notes.push_back(note); });
  rewrite(r,
          "GET /a/b?token=t0p HTTP/1.1\r\nHost: api.com\r\n\r\n"
          "DELETE /c HTTP/1.1\r\nHost: other.com\r\n\r\n",
          5);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].method, "GET");
  EXPECT_EQ(notes[0].path, "/a/b");
  EXPECT_EQ(notes[0].secrets, std::vector<std::string>{"K"});
  EXPECT_EQ(notes[0].refusal, "");
  EXPECT_EQ(notes[1].method, "DELETE");
  EXPECT_EQ(notes[1].refusal, "HTTP/1.1 421 Misdirected Request");
  for (const RequestNote& note : notes)
    for (const std::string& name : note.secrets) EXPECT_NE(name, "v");
}

TEST(EgressRewrite, RefusesWhatCouldSmuggleOrLeak) {
  const auto refused = [](const std::string& in, const char* status, bool secrets = true,
                          HostRule r = rule()) {
    RequestRewriter rewriter(std::move(r), "api.com", secret, secrets);
    const std::string out = rewrite(rewriter, in, in.size());
    EXPECT_EQ(out.rfind("ERROR HTTP/1.1 ", 0), 0u) << in;
    EXPECT_NE(out.find(status), std::string::npos) << out;
    EXPECT_EQ(out.find("v\r\n"), std::string::npos);
  };
  refused("POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", " 400 ");
  refused("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", " 400 ");
  refused("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", " 400 ");
  refused("GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", " 400 ");
  refused("GET / HTTP/1.1\r\nX: a\nInjected: b\r\n\r\n", " 400 ");
  refused("GET / HTTP/1.1\r\nHost: other.com\r\n\r\n", " 421 ");
  refused("GET / HTTP/1.1\r\nX: " + std::string(kMaxHead, 'a'), " 431 ");
  refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", " 400 ");
  refused("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nabc", " 400 ");
  refused("GET / HTTP/1.1\r\n\r\n", " 502 ", /*secrets=*/false);
  refused("GET / HTTP/1.1\r\n\r\n", " 502 ", true, HostRule{"api.com", {{"X", "abx-secret:NONE"}}});
  refused("GET / HTTP/1.1\r\n\r\n", " 502 ", true, HostRule{"api.com", {{"X", "a\r\nY: b"}}});
}

TEST(EgressRewrite, RefusesARuleThatSetsHostOrFraming) {
  // Refused when a rule is made; one stored before that check is refused here.
  for (const char* name : {"Host", "content-length", "Transfer-Encoding", "Proxy-Authorization"}) {
    RequestRewriter r(HostRule{"api.com", {{name, "x"}}}, "api.com", secret, true);
    const std::string out = rewrite(r, "GET / HTTP/1.1\r\nHost: api.com\r\n\r\n", 64);
    EXPECT_EQ(out.rfind("ERROR HTTP/1.1 502 ", 0), 0u) << out;
    EXPECT_NE(out.find(name), std::string::npos) << out;
  }
}

TEST(EgressRewrite, AsksForASecretByTheHeaderItGoesIn) {
  std::vector<std::string> asked;
  const SecretLookup lookup = [&](const std::string& name, const std::string& header) {
    asked.push_back(name + " in " + header);
    return header == "Authorization" ? std::optional<std::string>("v") : std::nullopt;
  };
  RequestRewriter in_origin(HostRule{"api.com", {{"Origin", "abx-secret:K"}}}, "api.com", lookup,
                            true);
  EXPECT_EQ(rewrite(in_origin, "GET / HTTP/1.1\r\n\r\n", 64).rfind("ERROR HTTP/1.1 502 ", 0), 0u);
  EXPECT_EQ(asked, std::vector<std::string>{"K in Origin"});
}

std::string filter_responses(ExchangeLog& log, const std::string& in, size_t piece) {
  ResponseFilter filter(log);
  std::string out;
  for (size_t i = 0; i < in.size(); i += piece)
    if (!filter.feed(std::string_view(in).substr(i, piece), out)) return "ERROR " + out;
  return out;
}

TEST(EgressResponses, StripHeadersThatEchoASecretWhateverTheFraming) {
  const std::string echo = "Access-Control-Allow-Origin: https://x/s3cret\r\n";
  const std::string in =
      "HTTP/1.1 100 Continue\r\n" + echo +
      "\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n" +
      echo +
      "\r\ns3cret"
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n" +
      echo +
      "\r\n"  // a HEAD's: no body
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" +
      echo +
      "\r\n"
      "6\r\ns3cret\r\n0\r\nX: s3cret\r\n\r\n"
      "HTTP/1.1 304 Not Modified\r\nWww-Authenticate: Bearer s3cret\r\nX-Kept: 1\r\n\r\n";
  const std::string expected =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\ns3cret"
      "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "6\r\ns3cret\r\n0\r\n\r\n"
      "HTTP/1.1 304 Not Modified\r\nX-Kept: 1\r\n\r\n";
  for (const size_t piece : {size_t{1}, size_t{5}, in.size()}) {
    ExchangeLog log;
    log.secrets = {"s3cret"};
    log.requests = {RequestKind::kOther, RequestKind::kHead, RequestKind::kOther,
                    RequestKind::kOther};
    EXPECT_EQ(filter_responses(log, in, piece), expected) << piece;
    EXPECT_TRUE(log.requests.empty());
  }
}

TEST(EgressResponses, TheRewriterNotesWhatTheFilterNeeds) {
  ExchangeLog log;
  RequestRewriter r(rule(), "api.com", secret, true, &log);
  rewrite(r, "HEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n", 64);
  EXPECT_EQ(log.requests, (std::deque<RequestKind>{RequestKind::kHead, RequestKind::kOther}));
  EXPECT_EQ(log.secrets, std::vector<std::string>{"v"});
}

TEST(EgressRewrite, BoundsTheRequestsNotYetAnswered) {
  ExchangeLog log;
  log.requests.assign(1024, RequestKind::kOther);
  RequestRewriter r(rule(), "api.com", secret, true, &log);
  EXPECT_EQ(rewrite(r, "GET / HTTP/1.1\r\n\r\n", 64).rfind("ERROR HTTP/1.1 429 ", 0), 0u);
}

TEST(EgressRewrite, PassesUpgradedStreamsThroughUntouched) {
  RequestRewriter r(rule(), "api.com", secret, true);
  const std::string out = rewrite(
      r, "GET /ws HTTP/1.1\r\nHost: api.com\r\nUpgrade: websocket\r\n\r\nGET / HTTP/1.1\r\n\r\n",
      5);
  EXPECT_NE(out.find("X-Team: blue\r\n\r\nGET / HTTP/1.1\r\n\r\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace abx::egress
