// abx upload / abx download: files and whole directories (-r) through the
// sandbox's /files endpoint, streamed both ways so size does not matter.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/progress.h"
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
  bool recursive = false;
};

std::string remote_join(const std::string& dir, const std::string& relative) {
  if (relative.empty() || relative == ".") return dir;
  return (dir.ends_with('/') ? dir : dir + "/") + relative;
}

std::string remote_basename(std::string path) {
  while (path.size() > 1 && path.ends_with('/')) path.pop_back();
  return path.substr(path.rfind('/') + 1);
}

Status upload_file(const SandboxPlane& plane, const fs::path& local, const std::string& remote) {
  UniqueFd fd(::open(local.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("open " + local.string());
  struct stat st {};
  ::fstat(fd.get(), &st);
  Progress progress(local.filename().string(), static_cast<std::uint64_t>(st.st_size));
  const http::BodySource source =
      http::fd_body(fd.get(), local.string(), kChunk, [&](size_t n) { progress.add(n); });
  return plane.upload(remote, source);
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

Result<int> run_upload(const TransferOptions& options) {
  const fs::path local = options.from;
  std::error_code ec;
  const auto status = fs::status(local, ec);
  if (!fs::exists(status)) return Error{"local path " + options.from + " not found"};
  const bool is_dir = fs::is_directory(status);
  if (is_dir && !options.recursive) {
    return Error{options.from + " is a directory; pass -r to upload it with its contents"};
  }
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto plane = SandboxPlane::open(ControlPlane(*endpoint), options.id);
  if (!plane) return plane.error();
  std::string remote = options.to;
  if (remote.ends_with('/')) remote += fs::absolute(local).lexically_normal().filename().string();
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

Result<int> run_download(const TransferOptions& options) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto plane = SandboxPlane::open(ControlPlane(*endpoint), options.id);
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
  app->add_option(from, options->from, from + " path")->required();
  app->add_option(to, options->to, to + " path")->required();
  app->add_flag("-r,--recursive", options->recursive, "Copy a directory with its contents");
  commands.push_back({app, [options, run] { return run(*options); }});
}

}  // namespace

void add_transfers(CLI::App& root, Commands& commands) {
  add_transfer(root, commands, "upload", "Copy a local file or directory into a sandbox", "local",
               "remote", &run_upload);
  add_transfer(root, commands, "download", "Copy a file or directory out of a sandbox", "remote",
               "local", &run_download);
}

}  // namespace abx::cli
