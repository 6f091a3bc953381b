// Where abx keeps its files on this machine. Tests isolate themselves with
// ABX_STATE_DIR and ABX_CONFIG_DIR; otherwise the XDG base directories apply.
#pragma once

#include <filesystem>

namespace abx::paths {

// $ABX_STATE_DIR > $XDG_STATE_HOME/abx > ~/.local/state/abx: the local daemon's data dir.
std::filesystem::path state_dir();
// $ABX_CONFIG_DIR > $XDG_CONFIG_HOME/abx > ~/.config/abx.
std::filesystem::path config_dir();
std::filesystem::path config_file();  // <config_dir>/config.toml

std::filesystem::path daemon_address_file(const std::filesystem::path& data_dir);
std::filesystem::path daemon_pid_file(const std::filesystem::path& data_dir);
std::filesystem::path daemon_log_file(const std::filesystem::path& data_dir);
// The key file the daemon accepts (created 0600 on first start): <data_dir>/api_key,
// holding one `e2b_<40 hex>` key.
std::filesystem::path api_key_file(const std::filesystem::path& data_dir);

}  // namespace abx::paths
