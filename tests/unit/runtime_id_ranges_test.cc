// runtime/id_ranges (one host uid range per sandbox) and the owner translation
// layer_copy applies when a sandbox's layer is stored.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/unique_fd.h"
#include "runtime/id_ranges.h"
#include "runtime/layer_copy.h"
#include "temp_dir.h"

namespace abx::runtime {
namespace {

namespace fs = std::filesystem;

const user::IdMap kStored{100000, 100001, 100000, 100001, 65536, false};

TEST(IdRanges, SlotsAreDisjointRangesAboveTheSharedOneAndComeBackLast) {
  testing::TempDir dir("abx-id-ranges");
  auto ranges = IdRanges::claim(kStored, -1, dir.path());
  ASSERT_TRUE(ranges) << ranges.error().message();
  std::set<uid_t> firsts;
  const uint32_t a = (*ranges)->take(), b = (*ranges)->take();
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  ASSERT_NE(a, b);
  for (uint32_t slot : {a, b}) {
    const user::IdMap map = (*ranges)->map_of(slot);
    EXPECT_GE(map.uid_zero, IdRanges::kFirstId);
    EXPECT_EQ(map.host_uid(65535), map.uid_zero + 65535);
    EXPECT_EQ((*ranges)->slot_of(map.uid_zero), slot);
    EXPECT_EQ((*ranges)->slot_of(map.uid_zero + 1), 0u);  // not a range's first id
    firsts.insert(map.uid_zero);
  }
  EXPECT_GE(*firsts.rbegin() - *firsts.begin(), IdRanges::kIdsPerSlot);
  EXPECT_EQ((*ranges)->slot_of(kStored.uid_zero), 0u);
  (*ranges)->give_back(a);
  EXPECT_NE((*ranges)->take(), a);   // a freed range is reused as late as possible
  EXPECT_FALSE((*ranges)->hold(b));  // in use
  EXPECT_FALSE((*ranges)->hold(0));
}

TEST(IdRanges, TwoDaemonsHoldDifferentRegionsAndTheFirstKeepsItsOwn) {
  testing::TempDir dir("abx-id-ranges");
  auto first = IdRanges::claim(kStored, 3, dir.path());
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)->region(), 3u);  // the state dir's region before, when free
  auto second = IdRanges::claim(kStored, 3, dir.path());
  ASSERT_TRUE(second);
  EXPECT_NE((*second)->region(), 3u);
  EXPECT_NE((*first)->map_of(1).uid_zero, (*second)->map_of(1).uid_zero);
}

TEST(IdRanges, AStoredLayerGetsTheSharedOwnersBack) {
  if (::geteuid() != 0) GTEST_SKIP() << "chown to other ids needs root";
  testing::TempDir dir("abx-id-ranges");
  const fs::path from = dir.path() / "from", to = dir.path() / "to";
  fs::create_directories(from / "home");
  std::ofstream(from / "home/note") << "x";
  const user::IdMap own{3000000000u, 3000000001u, 3000000000u, 3000000001u, 65536, false};
  ASSERT_EQ(::chown(from.c_str(), own.host_uid(0), own.host_gid(0)), 0);
  ASSERT_EQ(::chown((from / "home").c_str(), own.host_uid(1000), own.host_gid(1000)), 0);
  ASSERT_EQ(::chown((from / "home/note").c_str(), own.host_uid(1000), own.host_gid(0)), 0);
  ASSERT_EQ(::symlink("note", (from / "home/link").c_str()), 0);
  ASSERT_EQ(::lchown((from / "home/link").c_str(), own.host_uid(7), own.host_gid(7)), 0);
  fs::create_directories(to);
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd out(::open(to.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  layer_copy::Limits limits;
  limits.max_bytes = 1 << 20;
  limits.owners = {own, kStored};
  ASSERT_TRUE(layer_copy::copy(in.get(), out.get(), limits));
  auto owner = [](const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0);
    return std::pair{st.st_uid, st.st_gid};
  };
  EXPECT_EQ(owner(to), std::pair(kStored.host_uid(0), kStored.host_gid(0)));
  EXPECT_EQ(owner(to / "home"), std::pair(kStored.host_uid(1000), kStored.host_gid(1000)));
  EXPECT_EQ(owner(to / "home/note"), std::pair(kStored.host_uid(1000), kStored.host_gid(0)));
  EXPECT_EQ(owner(to / "home/link"), std::pair(kStored.host_uid(7), kStored.host_gid(7)));
}

}  // namespace
}  // namespace abx::runtime
