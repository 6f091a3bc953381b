// Sandbox plane: envd's GET/POST /files, streamed both ways through
// runtime::sandbox_fs so a symlink in the sandbox never reaches a host file.
// spec/e2b-protocol.md §10.
#include <unistd.h>

#include "daemon/gunzip.h"
#include "daemon/gzip.h"
#include "daemon/multipart.h"
#include "daemon/routes.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
namespace sfs = runtime::sandbox_fs;

constexpr size_t kReadChunk = 256 * 1024;

// One destination file being written; removed again if the upload fails.
class UploadTarget {
 public:
  UploadTarget(const runtime::Sandbox& sb, std::string path) : sb_(sb), path_(std::move(path)) {}
  ~UploadTarget() {
    if (fd_.valid() && !done_) {
      fd_.reset();
      (void)sfs::remove(sb_, path_);
    }
  }
  bool open(uint32_t uid) {
    auto fd = sfs::open_write(sb_, path_, uid);
    if (!fd) return fail(fd.error());
    fd_ = std::move(fd.value());
    return true;
  }
  bool write(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_.get(), data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return fail(Error::from_errno("write " + path_));
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  bool close() {
    if (::fsync(fd_.get()) != 0 && errno != EINVAL) return fail(Error::from_errno("sync " + path_));
    done_ = true;
    fd_.reset();
    return true;
  }
  const std::string& path() const { return path_; }
  const std::optional<Error>& error() const { return error_; }

 private:
  bool fail(Error error) {
    error_ = std::move(error);
    return false;
  }
  const runtime::Sandbox& sb_;
  std::string path_;
  UniqueFd fd_;
  bool done_ = false;
  std::optional<Error> error_;
};

json written_entry(const std::string& path) {
  return {{"path", path}, {"name", path.substr(path.rfind('/') + 1)}, {"type", "file"}};
}

json written_entries(const std::vector<std::string>& paths) {
  json out = json::array();
  for (const auto& path : paths) out.push_back(written_entry(path));
  return out;
}

std::string write_error_message(const Error& error) {
  return error_map::http_status(error) == 507 ? "not enough disk space in the sandbox"
                                               : error.message();
}

// Messages are computed outside co_await expressions: g++ 12 destroys a
// conditional's temporary twice there.
Task<void> respond_write_error(Exchange& exchange, const Error& error) {
  const std::string message = write_error_message(error);
  co_await respond_error(exchange, error_map::http_status(error), message);
}

struct UploadState {
  std::vector<std::unique_ptr<UploadTarget>> targets;
  std::optional<Error> error;
  std::string bad_input;
};

// Streams a multipart body: each part named `file` becomes one file.
Task<void> upload_multipart(SandboxCall& call, Exchange& exchange, const std::string& boundary,
                            const std::string& query_path, const envd_auth::SandboxUser& user) {
  UploadState state;
  MultipartParser parser(boundary);
  UploadTarget* current = nullptr;
  MultipartHandlers handlers;
  handlers.begin = [&](const MultipartPart& part) {
    if (part.name != "file") return true;  // other form fields are ignored
    const std::string wanted =
        !query_path.empty() && state.targets.empty() ? query_path : part.filename;
    if (wanted.empty()) {
      state.bad_input = "path: required (query parameter or the part's filename)";
      return false;
    }
    state.targets.push_back(
        std::make_unique<UploadTarget>(*call.live->sandbox, sfs::absolute_path(wanted, user.home)));
    current = state.targets.back().get();
    return current->open(user.uid);
  };
  handlers.data = [&](std::string_view bytes) { return !current || current->write(bytes); };
  handlers.end = [&] {
    UploadTarget* finished = std::exchange(current, nullptr);
    return !finished || finished->close();
  };
  for (;;) {
    const std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) break;
    if (!parser.feed(piece, handlers)) break;
  }
  for (const auto& target : state.targets) {
    if (target->error()) co_return co_await respond_write_error(exchange, *target->error());
  }
  if (!state.bad_input.empty()) co_return co_await respond_error(exchange, 400, state.bad_input);
  if (!parser.error().empty() || !parser.finished() || state.targets.empty()) {
    const std::string why = !parser.error().empty() ? parser.error()
                            : state.targets.empty() ? "multipart: no part named 'file'"
                                                    : "multipart: body ended early";
    co_return co_await respond_error(exchange, 400, why);
  }
  std::vector<std::string> paths;
  for (const auto& target : state.targets) paths.push_back(target->path());
  co_await respond_json(exchange, 200, written_entries(paths));
}

// Streams an application/octet-stream body (optionally gzip) into `path`.
Task<void> upload_raw(SandboxCall& call, Exchange& exchange, const std::string& query_path,
                      const envd_auth::SandboxUser& user) {
  if (query_path.empty()) co_return co_await respond_error(exchange, 400, "path: required");
  const std::string encoding = exchange.request().header("content-encoding");
  const bool gzip = encoding == "gzip";
  if (!gzip && !encoding.empty() && encoding != "identity") {
    co_return co_await respond_error(exchange, 400,
                                     "Content-Encoding: only gzip and identity are supported");
  }
  UploadTarget target(*call.live->sandbox, sfs::absolute_path(query_path, user.home));
  if (!target.open(user.uid)) co_return co_await respond_write_error(exchange, *target.error());
  Gunzip gunzip;
  auto sink = [&](std::string_view bytes) { return target.write(bytes); };
  bool ok = true;
  for (;;) {
    const std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) break;
    ok = gzip ? gunzip.feed(piece, sink) : target.write(piece);
    if (!ok) break;
  }
  if (target.error()) co_return co_await respond_write_error(exchange, *target.error());
  if (gzip && (!ok || !gunzip.finished())) {
    const std::string why = gunzip.error().empty() ? "gzip: body ended early" : gunzip.error();
    co_return co_await respond_error(exchange, 400, why);
  }
  if (!target.close()) co_return co_await respond_write_error(exchange, *target.error());
  const std::vector<std::string> paths(1, target.path());
  co_await respond_json(exchange, 200, written_entries(paths));
}

Task<void> download(SandboxCall& call, Exchange& exchange, const std::string& path,
                    const envd_auth::SandboxUser& user) {
  if (path.empty()) co_return co_await respond_error(exchange, 400, "path: required");
  auto fd = sfs::open_read(*call.live->sandbox, sfs::absolute_path(path, user.home));
  if (!fd) {
    co_return co_await respond_error(exchange, error_map::http_status(fd.error()),
                                     fd.error().message());
  }
  std::unique_ptr<Gzip> gzip;
  http::Headers headers;
  if (wants_gzip(exchange.request().header("accept-encoding"))) {
    gzip = std::make_unique<Gzip>();
    headers.emplace_back("Content-Encoding", "gzip");
  }
  co_await exchange.start_stream(200, "application/octet-stream", std::move(headers));
  std::string buffer(kReadChunk, '\0');
  for (;;) {
    const ssize_t n = ::read(fd->get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    // A read error midway can only be reported by cutting the stream short.
    if (n < 0) throw std::runtime_error("read " + path + " failed");
    if (n == 0) break;
    std::string piece = buffer.substr(0, static_cast<size_t>(n));
    if (gzip) piece = gzip->feed(piece);
    if (!co_await exchange.write_chunk(std::move(piece))) co_return;
  }
  if (gzip && !co_await exchange.write_chunk(gzip->finish())) co_return;
  co_await exchange.finish_stream();
}

}  // namespace

Task<void> files(SandboxCall& call, Exchange& exchange) {
  const auto& req = exchange.request();
  const auto value = [&](const char* key) {
    const auto it = req.query.find(key);
    return it == req.query.end() ? std::string{} : it->second;
  };
  const envd_auth::SandboxUser fallback = default_user_of(call.row);
  std::string user_name = value("username");
  if (user_name.empty()) {
    std::string ignored;
    if (auto from_header =
            envd_auth::user_from_authorization(req.header("authorization"), fallback, &ignored)) {
      user_name = from_header->name;
    }
  }
  const auto user = user_name == fallback.name ? std::optional(fallback)
                                               : envd_auth::user_by_name(user_name, fallback);
  if (!user) co_return co_await respond_error(exchange, 401, "unknown user '" + user_name + "'");
  if (req.method == "GET") co_return co_await download(call, exchange, value("path"), *user);
  if (req.method != "POST") {
    co_return co_await respond_error(exchange, 405, "/files accepts GET and POST");
  }
  if (const auto boundary = MultipartParser::boundary_of(req.header("content-type"))) {
    co_return co_await upload_multipart(call, exchange, *boundary, value("path"), *user);
  }
  co_await upload_raw(call, exchange, value("path"), *user);
}

}  // namespace abx::daemon::routes
