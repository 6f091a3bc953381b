#include <gtest/gtest.h>
#include <zlib.h>

#include "common/base64.h"
#include "common/sha256.h"
#include "daemon/codec.h"
#include "daemon/envd_auth.h"
#include "daemon/gunzip.h"

namespace abx::daemon {
namespace {

TEST(DaemonCodec, Base64RoundTrip) {
  EXPECT_EQ(base64::encode("hi\n"), "aGkK");
  EXPECT_EQ(base64::encode("a"), "YQ==");
  EXPECT_EQ(base64::encode("a", false), "YQ");
  EXPECT_EQ(base64::decode("aGkK").value(), "hi\n");
  EXPECT_EQ(base64::decode("YQ").value(), "a");
  EXPECT_FALSE(base64::decode("a*b").has_value());
}

TEST(DaemonCodec, Sha256KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(DaemonCodec, Rfc3339IsUtc) {
  EXPECT_EQ(codec::rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(codec::rfc3339(1700000000, 123000000, true), "2023-11-14T22:13:20.123Z");
}

TEST(DaemonEnvdAuth, BasicUser) {
  std::string error;
  EXPECT_EQ(envd_auth::user_from_authorization("", envd_auth::standard_user(), &error)->name,
            "user");
  const auto root = envd_auth::user_from_authorization("Basic cm9vdDo=", envd_auth::standard_user(),
                                                       &error);  // "root:"
  ASSERT_TRUE(root);
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->home, "/root");
  EXPECT_EQ(
      envd_auth::user_from_authorization("Basic dXNlcjo=", envd_auth::standard_user(), &error)->uid,
      1000u);
  EXPECT_FALSE(envd_auth::user_from_authorization("Basic Ym9iOg==", envd_auth::standard_user(),
                                                  &error));  // "bob:"
  EXPECT_NE(error.find("unknown user 'bob'"), std::string::npos);
  EXPECT_FALSE(envd_auth::user_from_authorization("Bearer x", envd_auth::standard_user(), &error));
  // Without a header, the sandbox's default user (its template's USER).
  const envd_auth::SandboxUser app{"app", 1001, 1001, "/srv"};
  EXPECT_EQ(envd_auth::user_from_authorization("", app, &error)->uid, 1001u);
  EXPECT_EQ(envd_auth::user_from_authorization("Basic dXNlcjo=", app, &error)->uid, 1000u);
}

TEST(DaemonEnvdAuth, FileSignatureMatchesE2b) {
  EXPECT_EQ(envd_auth::file_signature("/home/user/a.txt", "read", "user", "tok", "1700000000"),
            "v1_rjyaqcqTmWCotSjgdIM5sPngpduJ8ZZz/orD09SpFng");
  std::map<std::string, std::string> query = {
      {"path", "/home/user/a.txt"},
      {"username", "user"},
      {"signature", "v1_rjyaqcqTmWCotSjgdIM5sPngpduJ8ZZz/orD09SpFng"},
      {"signature_expiration", "1700000000"}};
  EXPECT_TRUE(envd_auth::file_signature_valid(query, "read", "tok", 1699999999));
  EXPECT_FALSE(envd_auth::file_signature_valid(query, "read", "tok", 1700000001));  // expired
  EXPECT_FALSE(envd_auth::file_signature_valid(query, "write", "tok", 1699999999));
  EXPECT_FALSE(envd_auth::file_signature_valid(query, "read", "other", 1699999999));
}

std::string gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(data.size() + 128, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(DaemonGunzip, DecodesInPieces) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string packed = gzip(text);
  Gunzip gunzip(1 << 20);
  std::string out;
  for (size_t i = 0; i < packed.size(); i += 7) {
    ASSERT_TRUE(gunzip.feed(std::string_view(packed).substr(i, 7), [&](std::string_view piece) {
      out.append(piece);
      return true;
    }));
  }
  EXPECT_TRUE(gunzip.finished());
  EXPECT_EQ(out, text);
}

TEST(DaemonGunzip, StopsAtTheOutputBound) {
  const std::string packed = gzip(std::string(4 << 20, '\0'));  // 4 MiB of zeros: ~4 KB packed
  Gunzip gunzip(1 << 20);
  size_t out = 0;
  EXPECT_FALSE(gunzip.feed(packed, [&](std::string_view piece) {
    out += piece.size();
    return true;
  }));
  EXPECT_TRUE(gunzip.too_large());
  EXPECT_LE(out, size_t{1} << 20);
  EXPECT_NE(gunzip.error().find("more than 1048576 bytes"), std::string::npos);
}

TEST(DaemonGunzip, RejectsGarbage) {
  Gunzip gunzip(1 << 20);
  EXPECT_FALSE(gunzip.feed("not gzip at all", [](std::string_view) { return true; }));
  EXPECT_FALSE(gunzip.error().empty());
}

}  // namespace
}  // namespace abx::daemon
