// The dashboard's files, embedded in the binary at build time
// (src/dashboard/assets.cmake): the daemon serves them from memory.
#pragma once

#include <string_view>

namespace abx::dashboard {

struct Asset {
  std::string_view name;  // "app.js": the file's name in src/dashboard/
  std::string_view content_type;
  std::string_view body;
};

// The asset with this file name, or nullptr (names are exact: no paths).
const Asset* find_asset(std::string_view name);

// A hash of every asset but the page (embed_assets.cmake): the page names the
// others under /dashboard/assets/<version>/, so a browser may keep them.
std::string_view assets_version();

}  // namespace abx::dashboard
