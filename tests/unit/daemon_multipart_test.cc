#include <gtest/gtest.h>

#include "daemon/error_map.h"
#include "daemon/multipart.h"
#include "daemon/proto_json.h"

namespace abx::daemon {
namespace {

struct Collected {
  std::vector<MultipartPart> parts;
  std::vector<std::string> bodies;
  MultipartHandlers handlers() {
    MultipartHandlers h;
    h.begin = [this](const MultipartPart& p) {
      parts.push_back(p);
      bodies.emplace_back();
      return true;
    };
    h.data = [this](std::string_view d) {
      bodies.back().append(d);
      return true;
    };
    h.end = [] { return true; };
    return h;
  }
};

const std::string kBody =
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"
    "Content-Type: application/octet-stream\r\n\r\n"
    "hello\r\n--XyW not yet\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"b.bin\"\r\n\r\n"
    "\r\n\r\n"
    "--XyZ--\r\n";

TEST(DaemonMultipart, BoundaryFromContentType) {
  EXPECT_EQ(MultipartParser::boundary_of("multipart/form-data; boundary=XyZ").value(), "XyZ");
  EXPECT_EQ(MultipartParser::boundary_of("multipart/form-data; boundary=\"a b\"").value(), "a b");
  EXPECT_FALSE(MultipartParser::boundary_of("application/octet-stream"));
}

TEST(DaemonMultipart, ParsesWholeAndByteByByte) {
  for (size_t step : {kBody.size(), size_t{1}, size_t{3}}) {
    Collected got;
    MultipartParser parser("XyZ");
    auto handlers = got.handlers();
    for (size_t i = 0; i < kBody.size(); i += step) {
      ASSERT_TRUE(parser.feed(std::string_view(kBody).substr(i, step), handlers));
    }
    EXPECT_TRUE(parser.finished());
    ASSERT_EQ(got.parts.size(), 2u);
    EXPECT_EQ(got.parts[0].name, "file");
    EXPECT_EQ(got.parts[0].filename, "/home/user/a.txt");
    EXPECT_EQ(got.bodies[0], "hello\r\n--XyW not yet");
    EXPECT_EQ(got.parts[1].filename, "b.bin");
    EXPECT_EQ(got.bodies[1], "\r\n");
  }
}

TEST(DaemonMultipart, MalformedBoundaryLine) {
  Collected got;
  MultipartParser parser("XyZ");
  EXPECT_FALSE(parser.feed("--XyZ!!", got.handlers()));
  EXPECT_FALSE(parser.error().empty());
}

// A long destination name reaches the upload intact: refusing it (400,
// ENAMETOOLONG) is the filesystem's call, not the parser's.
TEST(DaemonMultipart, LongFilenameIsPassedThrough) {
  const std::string name = "/home/user/" + std::string(5000, 'a');
  const std::string body = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
                           name + "\"\r\n\r\nx\r\n--B--\r\n";
  Collected got;
  MultipartParser parser("B");
  ASSERT_TRUE(parser.feed(body, got.handlers()));
  EXPECT_TRUE(parser.finished());
  ASSERT_EQ(got.parts.size(), 1u);
  EXPECT_EQ(got.parts[0].filename, name);
}

TEST(DaemonMultipart, OversizedPartHeadersAreRefused) {
  const std::string body = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
                           std::string(20000, 'a') + "\"\r\n\r\nx\r\n--B--\r\n";
  Collected got;
  MultipartParser parser("B");
  EXPECT_FALSE(parser.feed(body, got.handlers()));
  EXPECT_FALSE(parser.error().empty());
}

TEST(DaemonProtoJson, EntryInfo) {
  runtime::sandbox_fs::EntryInfo entry;
  entry.name = "a.txt";
  entry.path = "/home/user/a.txt";
  entry.type = runtime::sandbox_fs::FileType::kFile;
  entry.size = 12;
  entry.mode = 0644;
  entry.owner = "user";
  entry.group = "user";
  entry.mtime_sec = 1700000000;
  const auto info = proto_json::entry_info(entry);
  EXPECT_EQ(info.at("type"), "FILE_TYPE_FILE");
  EXPECT_EQ(info.at("size"), "12");  // int64 as a string
  EXPECT_EQ(info.at("mode"), 0644);
  EXPECT_EQ(info.at("permissions"), "-rw-r--r--");
  EXPECT_EQ(info.at("modifiedTime"), "2023-11-14T22:13:20.000Z");
  EXPECT_FALSE(info.contains("symlinkTarget"));
  entry.type = runtime::sandbox_fs::FileType::kDirectory;
  entry.mode = 0755;
  EXPECT_EQ(proto_json::entry_info(entry).at("permissions"), "drwxr-xr-x");
}

TEST(DaemonProtoJson, EventsOmitDefaults) {
  EXPECT_EQ(proto_json::start_event(42), R"({"event":{"start":{"pid":42}}})");
  EXPECT_EQ(proto_json::data_event("stdout", "hi\n"), R"({"event":{"data":{"stdout":"aGkK"}}})");
  EXPECT_EQ(proto_json::end_event({0, true, "exit status 0"}, ""),
            R"({"event":{"end":{"exited":true,"status":"exit status 0"}}})");
  EXPECT_EQ(proto_json::end_event({137, false, "signal: killed"}, ""),
            R"({"event":{"end":{"exitCode":137,"status":"signal: killed"}}})");
  EXPECT_EQ(error_map::connect_code(ENOENT), "not_found");
  EXPECT_EQ(error_map::connect_code(ENOSPC), "resource_exhausted");
  EXPECT_EQ(error_map::http_status_for_connect_code("already_exists"), 409);
}

}  // namespace
}  // namespace abx::daemon
