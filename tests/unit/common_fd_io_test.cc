// The one read/write loop and the one temp-file-and-rename path every file
// write, pipe and download goes through.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/fd_io.h"
#include "common/file_replacement.h"
#include "common/unique_fd.h"
#include "temp_dir.h"

namespace abx {
namespace {

// The file's text, or what went wrong reading it (which then fails the comparison).
std::string text_of(const fs::path& path) {
  auto text = read_file(path);
  return text.ok() ? text.value() : text.error().message();
}

class FdIoTest : public ::testing::Test {
 protected:
  void SetUp() override {}

  // Every name in the test dir: a failed write must leave no temp file behind.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      out.push_back(entry.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  abx::testing::TempDir temp_{"abx-fdio-test"};
  fs::path dir_ = temp_.path();
};

TEST_F(FdIoTest, WriteAllThenReadFileRoundTripsLargeData) {
  const std::string data(3 * 65536 + 17, 'q');
  ASSERT_TRUE(replace_file(dir_ / "big", data).ok());
  auto back = read_file(dir_ / "big");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, data);
}

TEST_F(FdIoTest, WriteToAClosedPipeIsEpipeNotADeadProcess) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  read_end.reset();
  const Status written = write_all(write_end.get(), "hello", "write to helper", "pipe");
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.error().errnum, EPIPE);
  EXPECT_EQ(written.error().step, "write to helper");
  EXPECT_EQ(written.error().detail, "pipe");
}

TEST_F(FdIoTest, ReadToEndStopsAtTheFirstFailingSink) {
  ASSERT_TRUE(replace_file(dir_ / "f", std::string(200000, 'x')).ok());
  UniqueFd fd(::open((dir_ / "f").c_str(), O_RDONLY | O_CLOEXEC));
  int pieces = 0;
  const Status read = read_to_end(
      fd.get(),
      [&](std::string_view) -> Status {
        ++pieces;
        return Error::with_message("sink is full");
      },
      "f");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().message(), "sink is full");
  EXPECT_EQ(pieces, 1);
}

TEST_F(FdIoTest, ReadFileOfAMissingFileNamesIt) {
  auto text = read_file(dir_ / "nope");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().errnum, ENOENT);
  EXPECT_NE(text.error().message().find("nope"), std::string::npos);
}

TEST_F(FdIoTest, ReplaceFileSwapsContentAndKeepsTheMode) {
  ASSERT_TRUE(replace_file(dir_ / "config", "old", 0600).ok());
  ASSERT_TRUE(replace_file(dir_ / "config", "new", 0600, /*sync=*/true).ok());
  EXPECT_EQ(text_of(dir_ / "config"), "new");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "config").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(names(), std::vector<std::string>{"config"});
}

TEST_F(FdIoTest, AnUncommittedReplacementLeavesTheOldFileAndNoTemp) {
  ASSERT_TRUE(replace_file(dir_ / "file", "old").ok());
  {
    auto replacement = FileReplacement::create(dir_ / "file");
    ASSERT_TRUE(replacement.ok()) << replacement.error().message();
    ASSERT_TRUE(replacement->write("half").ok());
  }
  EXPECT_EQ(text_of(dir_ / "file"), "old");
  EXPECT_EQ(names(), std::vector<std::string>{"file"});
}

TEST_F(FdIoTest, DownloadToFileSavesEveryPiece) {
  const std::vector<std::string> pieces = {"one ", "", "two ", "three"};
  size_t next = 0;
  const PieceSource source{[&]() -> Result<std::string> { return pieces[next++]; },
                           [&] { return next == pieces.size(); }};
  auto saved = download_to_file(source, dir_ / "out");
  ASSERT_TRUE(saved.ok()) << saved.error().message();
  EXPECT_EQ(*saved, 13u);
  EXPECT_EQ(text_of(dir_ / "out"), "one two three");
}

TEST_F(FdIoTest, AFailedDownloadLeavesTheDestinationAsItWas) {
  ASSERT_TRUE(replace_file(dir_ / "out", "before").ok());
  int calls = 0;
  const PieceSource source{[&]() -> Result<std::string> {
                             if (++calls == 2) return Error::with_message("connection reset");
                             return std::string("partial");
                           },
                           [] { return false; }};
  auto saved = download_to_file(source, dir_ / "out");
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.error().message(), "connection reset");
  EXPECT_EQ(text_of(dir_ / "out"), "before");
  EXPECT_EQ(names(), std::vector<std::string>{"out"});
}

TEST_F(FdIoTest, DownloadIntoAMissingDirectorySaysCreate) {
  const PieceSource source{[]() -> Result<std::string> { return std::string(); },
                           [] { return true; }};
  auto saved = download_to_file(source, dir_ / "no-such-dir" / "out");
  ASSERT_FALSE(saved.ok());
  EXPECT_EQ(saved.error().step, "create");
  EXPECT_EQ(saved.error().errnum, ENOENT);
}

}  // namespace
}  // namespace abx
