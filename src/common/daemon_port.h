// The port a data dir's daemon listened on last, kept in <data>/daemon.port,
// so the local daemon comes back where its clients (an exported
// E2B_API_URL, a script) expect it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

#include "common/error.h"

namespace abx::daemon_port {

inline constexpr uint16_t kDefault = 49980;

std::optional<uint16_t> remembered(const std::filesystem::path& data_dir);
Status remember(const std::filesystem::path& data_dir, uint16_t port);

}  // namespace abx::daemon_port
