// abx upload / abx download: files and whole directories (-r) through the
// sandbox's /files endpoint, streamed both ways so size does not matter;
// `-` for stdin or stdout, as cp-like tools do.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/terminal.h"
#include "common/fd_io.h"
#include "common/file_replacement.h"
#include "common/unique_fd.h"

namespace abx::cli {
namespace {
namespace fs = std::filesystem;

constexpr size_t kChunk = 256 * 1024;
constexpr int kListDepth = 64;

struct TransferOptions {
  std::string id;
  std::string from;
  std::string to;
  std::string user;  // as whom files are read and written in the sandbox ("" its default)
  bool recursive = false;
};

constexpr std::string_view kStdio = "-";

// The plane to the sandbox, as the user the options name.
Result<SandboxPlane> open_plane(const TransferOptions& options) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  return SandboxPlane::open(ControlPlane(*endpoint), options.id, options.user);
}

std::string remote_join(const std::string& dir, const std::string& relative) {
  if (relative.empty() || relative == ".") return dir;
  return (dir.ends_with('/') ? dir : dir + "/") + relative;
}

std::string remote_basename(std::string path) {
  while (path.size() > 1 && path.ends_with('/')) path.pop_back();
  return path.substr(path.rfind('/') + 1);
}

// Sends what `fd` holds; a bar shows when its size is known (a regular file).
Status upload_fd(const SandboxPlane& plane, int fd, const std::string& what,
                 const std::string& label, const std::string& remote) {
  struct stat st {};
  const bool sized = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  Progress progress(label, sized ? static_cast<std::uint64_t>(st.st_size) : 0);
  const http::BodySource source =
      http::fd_body(fd, what, kChunk, [&](size_t n) { progress.add(n); });
  return plane.upload(remote, source);
}

Status upload_file(const SandboxPlane& plane, const fs::path& local, const std::string& remote) {
  UniqueFd fd(::open(local.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open " + local.string());
  return upload_fd(plane, fd.get(), local.string(), local.filename().string(), remote);
}

Status make_remote_dir(const SandboxPlane& plane, const std::string& path) {
  auto response = plane.rpc_response("filesystem.Filesystem/MakeDir", {{"path", path}});
  if (!response) return response.error();
  // 409 is Connect's already_exists: the directory is there, which is all we need.
  if (response->status == 200 || response->status == 409) return {};
  return plane.failure(response->status, response->body, "create " + path + " in the sandbox");
}

Status upload_tree(const SandboxPlane& plane, const fs::path& root, const std::string& remote) {
  if (auto st = make_remote_dir(plane, remote); !st) return st;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string target = remote_join(remote, fs::relative(it->path(), root).string());
    if (it->is_directory()) {
      if (auto st = make_remote_dir(plane, target); !st) return st;
    } else if (it->is_regular_file()) {
      if (auto st = upload_file(plane, it->path(), target); !st) return st;
    }
  }
  if (ec) return Error{"read " + root.string(), ec.value()};
  return {};
}

Result<int> run_upload_stdin(const TransferOptions& options) {
  if (options.recursive) {
    return Error{
        "-r reads a directory, not stdin; to send a tree through stdin, pipe a tar "
        "archive: tar c DIR | abx exec -i ID -- tar x -C DEST"};
  }
  if (options.to.ends_with('/')) {
    return Error{"stdin has no file name: give the remote file's full path, not a directory"};
  }
  auto plane = open_plane(options);
  if (!plane) return plane.error();
  if (Status done = upload_fd(*plane, STDIN_FILENO, "stdin", "stdin", options.to); !done)
    return done.error();
  return 0;
}

bool is_remote_dir(const SandboxPlane& plane, const std::string& path) {
  auto stat = plane.rpc("filesystem.Filesystem/Stat", {{"path", path}});
  return stat && stat->value("entry", json::object()).value("type", "") == "FILE_TYPE_DIRECTORY";
}

Result<int> run_upload(const TransferOptions& options) {
  if (options.from == kStdio) return run_upload_stdin(options);
  const fs::path local = options.from;
  std::error_code ec;
  const auto status = fs::status(local, ec);
  if (!fs::exists(status)) return Error{"local path " + options.from + " not found"};
  const bool is_dir = fs::is_directory(status);
  if (is_dir && !options.recursive) {
    return Error{options.from + " is a directory; pass -r to upload it with its contents"};
  }
  auto plane = open_plane(options);
  if (!plane) return plane.error();
  std::string remote = options.to;
  // Into a directory, as cp does: one named with a slash, or (a file) one that exists.
  if (remote.ends_with('/') || (!is_dir && is_remote_dir(*plane, remote)))
    remote = (remote.ends_with('/') ? remote : remote + "/") +
             fs::absolute(local).lexically_normal().filename().string();
  const Status done =
      is_dir ? upload_tree(*plane, local, remote) : upload_file(*plane, local, remote);
  if (!done) return done.error();
  return 0;
}

// Streams into a temp file beside `local` and renames it over on success, so
// a failed transfer never leaves a half file under the real name.
Status download_file(const SandboxPlane& plane, const std::string& remote, const fs::path& local) {
  auto stream = plane.download(remote);
  if (!stream) return stream.error();
  http::ResponseStream& body = **stream;
  const auto length = std::strtoull(body.header("Content-Length").c_str(), nullptr, 10);
  Progress progress(local.filename().string(), length);
  const PieceSource source{[&]() -> Result<std::string> {
                             auto piece = body.read_some();
                             if (piece) progress.add(piece->size());
                             return piece;
                           },
                           [&] { return body.done(); }};
  auto saved = download_to_file(source, local);
  if (!saved) return saved.error();
  return {};
}

// Writes the file to stdout as it comes (binary-safe: bytes, unchanged).
Status download_to_stdout(const SandboxPlane& plane, const std::string& remote) {
  auto stream = plane.download(remote);
  if (!stream) return stream.error();
  http::ResponseStream& body = **stream;
  const auto length = std::strtoull(body.header("Content-Length").c_str(), nullptr, 10);
  // No bar among the file's own bytes when both go to the same terminal.
  Progress progress(remote_basename(remote), terminal::is_tty(STDOUT_FILENO) ? 0 : length);
  while (!body.done()) {
    auto piece = body.read_some();
    if (!piece) return piece.error();
    progress.add(piece->size());
    if (Status st = write_all(STDOUT_FILENO, *piece, "write to stdout"); !st) return st;
  }
  return {};
}

Result<std::string> remote_type(const SandboxPlane& plane, const std::string& path) {
  auto response = plane.rpc_response("filesystem.Filesystem/Stat", {{"path", path}});
  if (!response) return response.error();
  if (response->status == 404) return Error{path + " not found in sandbox " + plane.id()};
  if (response->status != 200)
    return plane.failure(response->status, response->body, "stat " + path);
  auto body = json::parse(response->body, nullptr, false);
  if (!body.is_object() || !body.contains("entry")) return Error{"bad answer to Stat " + path};
  return body["entry"].value("type", "");
}

Status download_tree(const SandboxPlane& plane, const std::string& remote, const fs::path& local) {
  auto listing =
      plane.rpc("filesystem.Filesystem/ListDir", {{"path", remote}, {"depth", kListDepth}});
  if (!listing) return listing.error();
  std::error_code ec;
  fs::create_directories(local, ec);
  if (ec) return Error{"create " + local.string(), ec.value()};
  const json listed = listing->value("entries", json::array());
  std::vector<json> entries(listed.begin(), listed.end());
  // Parents before children.
  std::sort(entries.begin(), entries.end(),
            [](const json& a, const json& b) { return a.value("path", "") < b.value("path", ""); });
  const fs::path remote_root(remote);
  for (const auto& entry : entries) {
    const std::string path = entry.value("path", "");
    const fs::path target = local / fs::path(path).lexically_relative(remote_root);
    const std::string type = entry.value("type", "");
    if (type == "FILE_TYPE_DIRECTORY") {
      fs::create_directories(target, ec);
      if (ec) return Error{"create " + target.string(), ec.value()};
    } else if (type == "FILE_TYPE_FILE") {
      if (auto st = download_file(plane, path, target); !st) return st;
    }
  }
  return {};
}

Result<int> run_download_stdout(const TransferOptions& options) {
  if (options.recursive) {
    return Error{
        "-r writes a directory, not stdout; to get a tree through stdout, run "
        "abx exec ID -- tar c -C DIR . > tree.tar"};
  }
  auto plane = open_plane(options);
  if (!plane) return plane.error();
  if (Status done = download_to_stdout(*plane, options.from); !done) return done.error();
  return 0;
}

Result<int> run_download(const TransferOptions& options) {
  if (options.to == kStdio) return run_download_stdout(options);
  auto plane = open_plane(options);
  if (!plane) return plane.error();
  fs::path local = options.to;
  std::error_code ec;
  if (fs::is_directory(local, ec)) local /= remote_basename(options.from);
  if (!fs::is_directory(fs::absolute(local).parent_path(), ec)) {
    return Error{"local directory " + fs::absolute(local).parent_path().string() +
                 " does not exist; create it first"};
  }
  bool is_dir = false;
  if (options.recursive) {
    auto type = remote_type(*plane, options.from);
    if (!type) return type.error();
    is_dir = *type == "FILE_TYPE_DIRECTORY";
  }
  const Status done = is_dir ? download_tree(*plane, options.from, local)
                             : download_file(*plane, options.from, local);
  if (!done) return done.error();
  return 0;
}

void add_transfer(CLI::App& root, Commands& commands, const std::string& name,
                  const std::string& help, const std::string& from, const std::string& to,
                  Result<int> (*run)(const TransferOptions&)) {
  auto options = std::make_shared<TransferOptions>();
  auto* app = root.add_subcommand(name, help);
  app->add_option("id", options->id, "Sandbox id")->required();
  app->add_option(from, options->from, from + " path" + (from == "local" ? " (- for stdin)" : ""))
      ->required();
  app->add_option(to, options->to, to + " path" + (to == "local" ? " (- for stdout)" : ""))
      ->required();
  app->add_flag("-r,--recursive", options->recursive, "Copy a directory with its contents");
  app->add_option("-u,--user", options->user,
                  "Read and write the sandbox's files as this user (default: the sandbox's)");
  commands.push_back({app, [options, run] { return run(*options); }});
}

// docker cp's shape: SRC DEST, one of them ID:PATH. The other is local.
Result<int> run_cp(TransferOptions options, const std::string& source, const std::string& dest) {
  auto remote_of =
      [](const std::string& arg) -> std::optional<std::pair<std::string, std::string>> {
    const auto colon = arg.find(':');
    if (colon == std::string::npos || colon == 0 || arg.find('/') < colon) return std::nullopt;
    return std::pair{arg.substr(0, colon), arg.substr(colon + 1)};
  };
  const auto from = remote_of(source), to = remote_of(dest);
  if (from.has_value() == to.has_value())
    return Error{
        "one of the two paths is ID:PATH in a sandbox: abx cp ./a.txt ID:/tmp/ or "
        "abx cp ID:/tmp/out.txt ."};
  if (to) {
    options.id = to->first;
    options.from = source;
    options.to = to->second.empty() ? "/" : to->second;
    return run_upload(options);
  }
  options.id = from->first;
  options.from = from->second;
  options.to = dest;
  return run_download(options);
}

void add_cp(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<TransferOptions>();
  auto paths = std::make_shared<std::vector<std::string>>();
  auto* app = root.add_subcommand(
      "cp",
      "Copy between here and a sandbox, as docker cp: abx cp SRC ID:DEST, abx cp ID:SRC DEST");
  app->add_option("paths", *paths, "SRC then DEST; one of them ID:PATH")->required()->expected(2);
  app->add_flag("-r,--recursive", options->recursive, "Copy a directory with its contents");
  app->add_option("-u,--user", options->user,
                  "Read and write the sandbox's files as this user (default: the sandbox's)");
  commands.push_back(
      {app, [options, paths] { return run_cp(*options, paths->at(0), paths->at(1)); }});
}

}  // namespace

void add_transfers(CLI::App& root, Commands& commands) {
  add_cp(root, commands);
  add_transfer(root, commands, "upload", "Copy a local file or directory into a sandbox", "local",
               "remote", &run_upload);
  add_transfer(root, commands, "download", "Copy a file or directory out of a sandbox", "remote",
               "local", &run_download);
}

}  // namespace abx::cli
