#include "common/daemon_port.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>

#include "common/file_replacement.h"

namespace abx::daemon_port {
namespace {

std::filesystem::path port_file(const std::filesystem::path& data_dir) {
  return data_dir / "daemon.port";
}

}  // namespace

std::optional<uint16_t> remembered(const std::filesystem::path& data_dir) {
  std::ifstream in(port_file(data_dir));
  std::string text;
  std::getline(in, text);
  uint16_t port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc{} || end != text.data() + text.size() || port == 0) return std::nullopt;
  return port;
}

Status remember(const std::filesystem::path& data_dir, uint16_t port) {
  return replace_file(port_file(data_dir), std::to_string(port) + "\n", 0644, true);
}

}  // namespace abx::daemon_port
