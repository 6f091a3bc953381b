// upload and download: host files in and out of a sandbox, host paths
// confined to the allowed directories.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_replacement.h"
#include "common/unique_fd.h"
#include "mcp/allowed_paths.h"
#include "mcp/file_entries.h"
#include "mcp/stream_reader.h"
#include "mcp/tools.h"

namespace abx::mcp::tools {
namespace {
namespace fs = std::filesystem;

constexpr size_t kChunk = 256 * 1024;

Result<fs::path> host_path_of(Call& call) {
  const auto& options = call.box.options();
  if (options.allow_dirs.empty()) return Error{options.transfer_refusal};
  return allowed_host_path(string_arg(call.args, "host_path"), options.allow_dirs);
}

// Into a temp file renamed over `path` once whole: a link that appears at `path` meanwhile is
// replaced, never written through (the path was judged with its symlinks resolved).
Result<uint64_t> save_stream(http::ResponseStream& stream, const fs::path& path,
                             const CancelFlag& cancel) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const PieceSource source{[&] { return read_unless_cancelled(stream, cancel); },
                           [&] { return stream.done(); }};
  return download_to_file(source, path);
}

}  // namespace

ToolResult upload(Call& call) {
  auto local = host_path_of(call);
  if (!local) return ToolResult::failure(local.error().message());
  UniqueFd fd(::open(local->c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return ToolResult::failure("cannot read " + local->string() +
                               " on the host: not an existing regular file");
  }
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string& id = plane->id();
  const http::BodySource from_file = http::fd_body(fd.get(), local->string(), kChunk);
  const http::BodySource source = [&]() -> Result<std::string> {
    if (call.cancel) return Error{"cancelled by the client", ECANCELED};
    return from_file();
  };
  const std::string path = string_arg(call.args, "path");
  if (auto sent = plane->upload(path, source); !sent) {
    return ToolResult::failure(sent.error().message());
  }
  ToolResult result;
  result.structured = {{"sandbox_id", id},
                       {"host_path", local->string()},
                       {"path", path},
                       {"bytes", static_cast<uint64_t>(st.st_size)}};
  result.text = "Uploaded " + local->string() + " (" + std::to_string(st.st_size) + " bytes) to " +
                path + " in sandbox " + id + ".";
  return result;
}

ToolResult download(Call& call) {
  auto local = host_path_of(call);
  if (!local) return ToolResult::failure(local.error().message());
  auto plane = plane_for(call);
  if (!plane) return ToolResult::failure(plane.error().message());
  const std::string& id = plane->id();
  const std::string path = string_arg(call.args, "path");
  if (auto file = require_file(*plane, path); !file) {
    return ToolResult::failure(file.error().message());
  }
  auto stream = plane->download(path);
  if (!stream) return ToolResult::failure(stream.error().message());
  auto saved = save_stream(**stream, *local, call.cancel);
  if (!saved) return ToolResult::failure(saved.error().message());
  ToolResult result;
  result.structured = {
      {"sandbox_id", id}, {"path", path}, {"host_path", local->string()}, {"bytes", *saved}};
  result.text = "Downloaded " + path + " (" + std::to_string(*saved) + " bytes) from sandbox " +
                id + " to " + local->string() + ".";
  return result;
}

}  // namespace abx::mcp::tools
