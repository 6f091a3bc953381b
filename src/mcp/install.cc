#include "mcp/install.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/fd_io.h"
#include "common/file_replacement.h"
#include "mcp/allowed_paths.h"

namespace abx::mcp {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// VS Code names the map "servers"; Cursor and Claude Code "mcpServers".
std::string servers_key(const std::string& target) {
  return target == "vscode" ? "servers" : "mcpServers";
}

std::string default_scope(const std::string& target) {
  return target == "vscode" ? "project" : "user";
}

constexpr const char* kApiKeySetting = "ABX_SANDBOX_API_KEY";

std::string scope_of(const InstallOptions& options) {
  return options.scope.empty() ? default_scope(options.target) : options.scope;
}

// The directories the server may touch, checked now so the editor is never
// handed a server that refuses to start.
Result<std::vector<fs::path>> served_dirs(const InstallOptions& options) {
  if (!options.allow_dirs.empty() || scope_of(options) == "user") {
    return checked_allow_dirs(options.allow_dirs, options.homes);
  }
  auto project = checked_allow_dirs({options.project.string()}, options.homes);
  if (!project) {
    return Error::with_message("project scope allows the directory it is run in: " +
                               project.error().message());
  }
  return project;
}

json server_entry(const InstallOptions& options, const std::vector<fs::path>& allow_dirs) {
  json args = {"mcp", "serve"};
  for (const auto& dir : allow_dirs) {
    args.push_back("--allow-dir");
    args.push_back(dir.string());
  }
  json entry = {{"command", options.abx_path.string()}, {"args", std::move(args)}};
  if (options.target != "cursor") entry["type"] = "stdio";
  json env = json::object();
  for (const auto& [name, value] : options.settings)
    if (name != kApiKeySetting || scope_of(options) == "user") env[name] = value;
  if (!env.empty()) entry["env"] = std::move(env);
  return entry;
}

std::string transfer_off_note(const InstallOptions& options) {
  const std::string scope = options.scope.empty() ? "" : " --scope " + options.scope;
  return "\nupload and download are off (no --allow-dir): to allow a directory, run `abx mcp "
         "install --target " +
         options.target + scope + " --allow-dir DIR`";
}

size_t line_of(const std::string& text, size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + static_cast<size_t>(
                 std::count(text.begin(), text.begin() + static_cast<long>(byte), '\n'));
}

// The file's JSON object; an absent or empty file is an empty object.
Result<json> load(const fs::path& file) {
  auto read = read_file(file);
  if (!read) return json::object();
  const std::string& text = *read;
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  try {
    json document = json::parse(text, nullptr, true, /*ignore_comments=*/true);
    if (!document.is_object()) {
      return Error{file.string() + ": not a JSON object; fix or move it, then run again"};
    }
    return document;
  } catch (const json::parse_error& error) {
    return Error{file.string() + ":" + std::to_string(line_of(text, error.byte)) +
                 ": not valid JSON, left untouched; fix or move it, then run again"};
  }
}

// Saves <file>.bak, then replaces the file with `document`.
Result<std::string> save(const fs::path& file, const json& document) {
  std::error_code ec;
  const bool existed = fs::exists(file, ec);
  mode_t mode = 0644;
  std::string note;
  if (existed) {
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0) mode = st.st_mode & 07777;
    const fs::path backup = file.string() + ".bak";
    fs::copy_file(file, backup, fs::copy_options::overwrite_existing, ec);
    if (ec) return Error{"back up " + file.string(), ec.value(), backup.string()};
    note = " (the previous version is in " + backup.string() + ")";
  } else {
    fs::create_directories(file.parent_path(), ec);
    if (ec) return Error{"create " + file.parent_path().string(), ec.value()};
  }
  auto replacement = FileReplacement::create(file, mode);
  if (!replacement) return replacement.error();
  ::chmod(replacement->temp_path().c_str(), mode);  // the old file's mode, whatever the umask
  if (auto st = replacement->write(document.dump(2) + "\n"); !st) return st.error();
  if (auto st = replacement->commit(); !st) return st.error();
  return note;
}

struct Loaded {
  fs::path file;
  json document;
  std::string key;
};

Result<Loaded> load_target(const InstallOptions& options) {
  auto file = config_path(options);
  if (!file) return file.error();
  auto document = load(*file);
  if (!document) return document.error();
  const std::string key = servers_key(options.target);
  if (document->contains(key) && !(*document)[key].is_object()) {
    return Error{file->string() + ": \"" + key + "\" is not an object; fix it, then run again"};
  }
  return Loaded{*file, std::move(*document), key};
}

}  // namespace

Result<fs::path> config_path(const InstallOptions& options) {
  const std::string scope = scope_of(options);
  if (scope != "user" && scope != "project") {
    return Error{"--scope must be user or project, not '" + scope + "'"};
  }
  const bool user = scope == "user";
  if (user && options.home.empty()) return Error{"HOME is not set; set it or use --scope project"};
  if (options.target == "cursor") {
    return (user ? options.home : options.project) / ".cursor" / "mcp.json";
  }
  if (options.target == "claude") {
    return user ? options.home / ".claude.json" : options.project / ".mcp.json";
  }
  if (options.target == "vscode") {
    return user ? options.home / ".config" / "Code" / "User" / "mcp.json"
                : options.project / ".vscode" / "mcp.json";
  }
  return Error{"--target must be cursor, claude or vscode, not '" + options.target + "'"};
}

Result<std::string> install(const InstallOptions& options) {
  auto loaded = load_target(options);
  if (!loaded) return loaded.error();
  auto allow_dirs = served_dirs(options);
  if (!allow_dirs) return allow_dirs.error();
  json& servers = loaded->document[loaded->key];
  const json entry = server_entry(options, *allow_dirs);
  const bool unchanged =
      servers.is_object() && servers.contains(kServerName) && servers[kServerName] == entry;
  servers[kServerName] = entry;
  if (options.print) return loaded->document.dump(2);
  const std::string off = allow_dirs->empty() ? transfer_off_note(options) : "";
  if (unchanged) {
    return "already installed in " + loaded->file.string() + "; nothing changed" + off;
  }
  auto note = save(loaded->file, loaded->document);
  if (!note) return note.error();
  return "installed the " + std::string(kServerName) + " MCP server in " + loaded->file.string() +
         *note + "; restart or reload " + options.target + " to pick it up" + off;
}

Result<std::string> uninstall(const InstallOptions& options) {
  auto loaded = load_target(options);
  if (!loaded) return loaded.error();
  json& document = loaded->document;
  const bool present =
      document.contains(loaded->key) && document[loaded->key].contains(kServerName);
  if (present) document[loaded->key].erase(kServerName);
  if (options.print) return document.dump(2);
  if (!present) return "not installed in " + loaded->file.string() + "; nothing changed";
  auto note = save(loaded->file, document);
  if (!note) return note.error();
  return "removed the " + std::string(kServerName) + " MCP server from " + loaded->file.string() +
         *note;
}

}  // namespace abx::mcp
