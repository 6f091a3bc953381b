// A state store in a test's temp dir (see temp_dir.h).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "daemon/store.h"
#include "temp_dir.h"

namespace abx::daemon {

inline std::unique_ptr<Store> open_store(const std::filesystem::path& dir) {
  auto store = Store::open(dir / "abx.db");
  EXPECT_TRUE(store) << store.error().message();
  return store ? std::move(*store) : nullptr;
}

}  // namespace abx::daemon
