#include <gtest/gtest.h>

#include "cli/progress.h"

namespace abx::cli {
namespace {

TEST(ProgressLine, ShowsBarAmountsRateAndEta) {
  EXPECT_EQ(progress_line("f", 5u << 20, 10u << 20, 1.0, 100),
            "f [###############---------------]  50%  5.0 MiB/10.0 MiB  5.0 MiB/s  ETA 0:01");
  EXPECT_EQ(progress_line("f", 0, 0, 0, 40), "f [#####################] 100%  0 B/0 B");
}

TEST(ProgressLine, NeverReachesTheLastColumn) {
  for (int columns = 1; columns <= 120; ++columns) {
    const std::string line =
        progress_line("a-rather-long-file-name.tar.gz", 3u << 20, 1u << 30, 2.0, columns);
    EXPECT_LT(static_cast<int>(line.size()), std::max(columns, 1)) << columns;
  }
}

TEST(ProgressLine, DropsTheRateThenTheNameWhenNarrow) {
  const std::string line = progress_line("data.bin", 1u << 20, 4u << 20, 1.0, 50);
  EXPECT_EQ(line.find("/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 0:03"), std::string::npos) << line;
  EXPECT_EQ(line, "data.bin [#-----]  25%  1.0 MiB/4.0 MiB  ETA 0:03");
}

TEST(ProgressLine, KeepsEscapesOutOfTheTerminal) {
  const std::string line = progress_line("\x1b]0;owned\x07", 1, 2, 1.0, 80);
  EXPECT_EQ(line.find('\x1b'), std::string::npos);
  EXPECT_EQ(line.find('\x07'), std::string::npos);
}

}  // namespace
}  // namespace abx::cli
