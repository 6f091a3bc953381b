// Sandbox plane: envd's GET/POST /files, streamed both ways through
// runtime::sandbox_fs so a symlink in the sandbox never reaches a host file.
// Every read and write of a sandbox file runs on the blocking pool (through
// sandbox_ops), a chunk at a time.
// See spec/e2b-protocol.md §10.
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "common/fd_io.h"
#include "common/sha256.h"
#include "daemon/envd_requests.h"
#include "daemon/gunzip.h"
#include "daemon/gzip.h"
#include "daemon/multipart.h"
#include "daemon/routes.h"
#include "daemon/sandbox_ops.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
namespace sfs = runtime::sandbox_fs;

// Downloads are read, and uploads written, this much per trip to the pool.
constexpr size_t kChunk = 256 * 1024;
// A sparse file's hole is sent this much at a time (as gzip: 256 KiB).
constexpr uint64_t kMaxHolePiece = uint64_t{256} << 20;

// One destination file being written; removed again if the upload fails.
// Every member that touches the file blocks: call them through sandbox_ops::file_io.
class UploadTarget {
 public:
  UploadTarget(const runtime::Sandbox& sb, std::string path) : sb_(sb), path_(std::move(path)) {}
  // Normally discard() has run already; this only catches an unwinding route.
  ~UploadTarget() { discard(); }
  // Drops the file unless it was completed: a FileWriter dropped unfinished
  // removes it (without blocking: safe while a route unwinds, too).
  void discard() {
    if (!done_) writer_.reset();
  }
  // The same, waiting until the file is gone (blocks).
  void abandon() {
    if (!done_ && writer_) writer_->abandon();
    discard();
  }
  bool open(uint32_t uid, const std::map<std::string, std::string>& metadata) {
    auto writer = sfs::start_write(sb_, path_, uid, 0, metadata);
    if (!writer) return fail(writer.error());
    writer_.emplace(std::move(*writer));
    return true;
  }
  bool write(std::string_view data) {
    if (Status s = writer_->write(data); !s) return fail(s.error());
    digest_.update(data);
    bytes_ += data.size();
    return true;
  }
  bool close() {
    if (Status s = writer_->finish(); !s) return fail(s.error());
    done_ = true;
    writer_.reset();
    sha256_ = digest_.hex();
    return true;
  }
  const std::string& path() const { return path_; }
  // Once closed: what the file holds (the flight record's "uploaded").
  uint64_t bytes() const { return bytes_; }
  const std::string& sha256() const { return sha256_; }
  const std::optional<Error>& error() const { return error_; }

 private:
  bool fail(Error error) {
    error_ = std::move(error);
    return false;
  }
  const runtime::Sandbox& sb_;
  std::string path_;
  std::optional<sfs::FileWriter> writer_;
  bool done_ = false;
  std::optional<Error> error_;
  Sha256 digest_;
  uint64_t bytes_ = 0;
  std::string sha256_;
};

// What envd answers for each file written: its metadata as read back, when any.
struct Written {
  std::string path;
  std::map<std::string, std::string> metadata;
};

json written_entry(const Written& file) {
  json out = {
      {"path", file.path}, {"name", file.path.substr(file.path.rfind('/') + 1)}, {"type", "file"}};
  if (!file.metadata.empty()) out["metadata"] = file.metadata;
  return out;
}

json written_entries(const std::vector<Written>& files) {
  json out = json::array();
  for (const auto& file : files) out.push_back(written_entry(file));
  return out;
}

// A whole message already says what happened and what to do.
std::string write_error_message(const Error& error) {
  return error_map::http_status(error) == 507 && !error.whole
             ? "not enough disk space in the sandbox"
             : error.message();
}

// Messages are computed outside co_await expressions: g++ 12 destroys a
// conditional's temporary twice there.
Task<void> respond_write_error(Exchange& exchange, const Error& error) {
  const std::string message = write_error_message(error);
  co_await respond_error(exchange, error_map::http_status(error), message);
}

// A client still sending an upload that filled the disk reads the 507 only
// if the server reads on: closing on the rest of its body would reset the
// connection before the answer is read (a transport error for the client).
// The rest is dropped, up to `limit` bytes.
Task<void> drop_rest_of_body(Exchange& exchange, uint64_t limit) {
  for (uint64_t dropped = 0; dropped < limit;) {
    const std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) co_return;
    dropped += piece.size();
  }
}

// The body a client declared it sends (it reads the answer only after), else
// as much as the sandbox's disk; never more than kMaxDroppedBody.
uint64_t droppable_body(const SandboxCall& call, const http::Request& request) {
  constexpr uint64_t kMaxDroppedBody = uint64_t{16} << 30;
  uint64_t declared = 0;
  const std::string length = request.header("content-length");
  const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), declared);
  if (ec != std::errc{} || end != length.data() + length.size() || length.empty())
    declared = uint64_t{call.row.disk_size_mb} << 20;
  return std::min(declared, kMaxDroppedBody);
}

Task<void> respond_upload_error(SandboxCall& call, Exchange& exchange, const Error& error) {
  co_await respond_write_error(exchange, error);
  if (error_map::http_status(error) != 507) co_return;
  const uint64_t limit = droppable_body(call, exchange.request());
  co_await drop_rest_of_body(exchange, limit);
}

// Bytes through the files API count toward the owning team's usage.
void count_bytes(const SandboxCall& call, uint64_t in, uint64_t out) {
  call.service.usage().add_bytes(call.row.owner, in, out, now_ms());
}

// The body's next bytes, at least `want` of them unless it ends first ("" then).
Task<std::string> read_body_batch(Exchange& exchange, size_t want) {
  std::string batch;
  while (batch.size() < want) {
    std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) break;
    batch += piece;
  }
  co_return batch;
}

struct UploadState {
  std::vector<std::unique_ptr<UploadTarget>> targets;
  std::map<std::string, std::string> metadata;  // X-Metadata-*, for every file
  std::string bad_input;

  const std::optional<Error>& first_error() const {
    static const std::optional<Error> kNone;
    for (const auto& target : targets)
      if (target->error()) return target->error();
    return kNone;
  }
  void discard_unfinished() {
    for (const auto& target : targets) target->abandon();
  }
};

// The destination of a multipart part: the query's path for the first file,
// else the part's filename (E2B sends the destination path there).
// A secure sandbox's /files request that came without its token was let in by
// a signed URL: the signature covers ?path= and ?username= only, so nothing
// else in the request (Authorization, a part's filename) may choose the user
// or the file.
bool by_signature(const SandboxCall& call) {
  return !call.row.access_token.empty() && call.caller.kind != Caller::Kind::access_token;
}

std::string part_destination(const UploadState& state, const std::string& query_path,
                             const MultipartPart& part) {
  return !query_path.empty() && state.targets.empty() ? query_path : part.filename;
}

// Why a multipart body was refused, or "" when every file was written.
std::string multipart_problem(const MultipartParser& parser, const UploadState& state) {
  if (!state.bad_input.empty()) return state.bad_input;
  if (!parser.error().empty()) return parser.error();
  if (state.targets.empty()) return "multipart: no part named 'file'";
  if (!parser.finished()) return "multipart: body ended early";
  return {};
}

// Metadata is read back from each file, as envd does (a filesystem without
// xattrs keeps none); without any asked for, every file was left without.
Task<void> respond_written(SandboxCall& call, Exchange& exchange, const UploadState& state) {
  std::vector<Written> files;
  for (const auto& target : state.targets) {
    call.live->log->event(
        "files", "uploaded",
        {{"path", target->path()}, {"bytes", target->bytes()}, {"sha256", target->sha256()}});
    Written file{target->path(), {}};
    if (!state.metadata.empty()) {
      auto info = co_await sandbox_ops::stat(call.service, *call.live->sandbox, file.path);
      if (info) file.metadata = std::move(info->metadata);
    }
    files.push_back(std::move(file));
  }
  co_await respond_json(exchange, 200, written_entries(files));
}

// Streams a multipart body: each part named `file` becomes one file. The
// parser runs on the pool since its handlers open and write files.
Task<void> upload_multipart(SandboxCall& call, Exchange& exchange, const std::string& boundary,
                            const std::string& query_path, const envd_auth::SandboxUser& user,
                            std::map<std::string, std::string> metadata) {
  UploadState state;
  state.metadata = std::move(metadata);
  MultipartParser parser(boundary);
  UploadTarget* current = nullptr;
  MultipartHandlers handlers;
  handlers.begin = [&](const MultipartPart& part) {
    if (part.name != "file") return true;  // other form fields are ignored
    if (by_signature(call) && (query_path.empty() || !state.targets.empty())) {
      state.bad_input = "a signed upload URL writes one file, the path it was signed for";
      return false;
    }
    const std::string wanted = part_destination(state, query_path, part);
    if (wanted.empty()) {
      state.bad_input = "path: required (query parameter or the part's filename)";
      return false;
    }
    if (wanted.find('\0') != std::string::npos) {  // it would cut the path short
      state.bad_input = "path: must not contain a NUL byte";
      return false;
    }
    state.targets.push_back(
        std::make_unique<UploadTarget>(*call.live->sandbox, sfs::absolute_path(wanted, user.home)));
    current = state.targets.back().get();
    return current->open(user.uid, state.metadata);
  };
  handlers.data = [&](std::string_view bytes) { return !current || current->write(bytes); };
  handlers.end = [&] {
    UploadTarget* finished = std::exchange(current, nullptr);
    return !finished || finished->close();
  };
  for (bool more = true; more;) {
    const std::string batch = co_await read_body_batch(exchange, kChunk);
    if (batch.empty()) break;
    count_bytes(call, batch.size(), 0);
    co_await sandbox_ops::file_io(call.service, [&] { more = parser.feed(batch, handlers); });
  }
  const std::string problem = multipart_problem(parser, state);
  const std::optional<Error> error = state.first_error();
  if (error || !problem.empty()) {
    co_await sandbox_ops::file_io(call.service, [&] { state.discard_unfinished(); });
  }
  if (error) co_return co_await respond_upload_error(call, exchange, *error);
  if (!problem.empty()) co_return co_await respond_error(exchange, 400, problem);
  co_await respond_written(call, exchange, state);
}

// No file written through the API can be larger than the sandbox's disk, so
// no gzip body needs to decompress to more (one that would is a bomb).
uint64_t gunzip_bound(const SandboxRow& row) { return uint64_t{row.disk_size_mb} << 20; }

std::string too_large_message(const SandboxRow& row) {
  return "Content-Encoding: gzip: the body decompresses to more than the sandbox's disk (" +
         std::to_string(row.disk_size_mb) + " MiB)";
}

// Feeds an application/octet-stream body (optionally gzip) into `target`;
// false when writing or decompressing failed.
Task<bool> write_raw_body(SandboxCall& call, Exchange& exchange, UploadTarget& target,
                          Gunzip* gunzip) {
  auto sink = [&](std::string_view bytes) { return target.write(bytes); };
  bool ok = true;
  while (ok) {
    const std::string batch = co_await read_body_batch(exchange, kChunk);
    if (batch.empty()) break;
    count_bytes(call, batch.size(), 0);
    co_await sandbox_ops::file_io(call.service,
                                  [&] { ok = gunzip ? gunzip->feed(batch, sink) : sink(batch); });
  }
  co_return ok;
}

// Streams an application/octet-stream body (optionally gzip) into `path`.
Task<void> upload_raw(SandboxCall& call, Exchange& exchange, const std::string& query_path,
                      const envd_auth::SandboxUser& user,
                      std::map<std::string, std::string> metadata) {
  if (query_path.empty()) {
    co_return co_await respond_error(exchange, 400, "path: required");
  }
  const std::string encoding = exchange.request().header("content-encoding");
  const bool gzip = encoding == "gzip";
  if (!gzip && !encoding.empty() && encoding != "identity") {
    co_return co_await respond_error(exchange, 400,
                                     "Content-Encoding: only gzip and identity are supported");
  }
  UploadState state;
  state.metadata = std::move(metadata);
  state.targets.push_back(std::make_unique<UploadTarget>(
      *call.live->sandbox, sfs::absolute_path(query_path, user.home)));
  UploadTarget& target = *state.targets.back();
  bool opened = false;
  co_await sandbox_ops::file_io(call.service,
                                [&] { opened = target.open(user.uid, state.metadata); });
  Gunzip gunzip(gunzip_bound(call.row));
  const bool ok =
      opened && co_await write_raw_body(call, exchange, target, gzip ? &gunzip : nullptr);
  const bool complete = ok && (!gzip || gunzip.finished());
  bool closed = false;
  co_await sandbox_ops::file_io(call.service, [&] {
    closed = complete && target.close();
    if (!closed) state.discard_unfinished();
  });
  if (target.error()) co_return co_await respond_upload_error(call, exchange, *target.error());
  if (gunzip.too_large()) {
    const std::string why = too_large_message(call.row);
    co_return co_await respond_error(exchange, 413, why);
  }
  if (!closed) {
    const std::string why = gunzip.error().empty() ? "gzip: body ended early" : gunzip.error();
    co_return co_await respond_error(exchange, 400, why);
  }
  co_await respond_written(call, exchange, state);
}

// The user a /files request acts as: ?username=, else Authorization's (not
// for a signed URL: the signature does not cover it), else the sandbox's
// default user.
std::optional<envd_auth::SandboxUser> files_user(const SandboxCall& call,
                                                 const http::Request& request,
                                                 std::string user_name) {
  const envd_auth::SandboxUser fallback = default_user_of(call.row);
  if (user_name.empty() && !by_signature(call)) {
    std::string ignored;
    if (auto from_header = envd_auth::user_from_authorization(request.header("authorization"),
                                                              fallback, &ignored)) {
      user_name = from_header->name;
    }
  }
  if (user_name == fallback.name) return fallback;
  return envd_auth::user_by_name(user_name, fallback);
}

Task<void> respond_failure(Exchange& exchange, const Error& error) {
  co_await respond_error(exchange, error_map::http_status(error), error.message());
}

// The query and user of a /files request; on failure the reply has been sent.
struct FilesInput {
  FilesQuery query;
  envd_auth::SandboxUser user;
};
Task<std::optional<FilesInput>> read_files_input(SandboxCall& call, Exchange& exchange,
                                                 bool path_required) {
  const auto& request = exchange.request();
  auto query = parse_files_query(request.query, path_required);
  if (!query) {
    co_await respond_failure(exchange, query.error());
    co_return std::nullopt;
  }
  auto user = files_user(call, request, query->username);
  if (!user) {
    const std::string message = "unknown user '" + query->username + "'";
    co_await respond_failure(exchange, Error::with_message(message, kErrUnauthorized));
    co_return std::nullopt;
  }
  co_return FilesInput{std::move(*query), std::move(*user)};
}

// The next piece of a download from the fd's offset on: a run of zeros
// the file holds as a hole (skipped with SEEK_DATA, never read), or up to
// `max` bytes read. Empty at the end. Blocks: call it on the pool.
struct DownloadPiece {
  uint64_t hole = 0;
  std::string data;
};
Result<DownloadPiece> next_piece(int fd, size_t max) {
  DownloadPiece piece;
  const off_t at = ::lseek(fd, 0, SEEK_CUR);
  // Where holes cannot be asked for (a pipe, a filesystem without them) the
  // file is read as it is.
  off_t data = at < 0 ? -1 : ::lseek(fd, at, SEEK_DATA);
  if (at >= 0 && data < 0 && errno == ENXIO) {  // no data from `at` on: a hole up to the end
    struct stat st {};
    data = ::fstat(fd, &st) == 0 ? std::max(st.st_size, at) : at;
  }
  if (at >= 0 && data > at) {
    piece.hole = std::min(static_cast<uint64_t>(data - at), kMaxHolePiece);
    if (::lseek(fd, at + static_cast<off_t>(piece.hole), SEEK_SET) < 0)
      return Error::from_errno("seek");
    return piece;
  }
  piece.data.resize(max);
  for (;;) {
    const ssize_t n = ::read(fd, piece.data.data(), max);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno("read");
    piece.data.resize(static_cast<size_t>(n));
    return piece;
  }
}

// A hole's zeros on the wire: ready-made deflate blocks when compressing,
// else sent as they are (the client asked for them, at its own pace).
Task<bool> send_hole(SandboxCall& call, Exchange& exchange, uint64_t size, Gzip* gzip) {
  count_bytes(call, 0, size);
  if (gzip) {
    std::string blocks = gzip->zeros(size);
    co_return co_await exchange.write_chunk(std::move(blocks));
  }
  for (uint64_t left = size; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, kChunk));
    std::string zeros(n, '\0');
    if (!co_await exchange.write_chunk(std::move(zeros))) co_return false;
    left -= n;
  }
  co_return true;
}

// What a download sent, for the flight record: the SHA-256 of its bytes
// unless a hole was among them (a sparse file's zeros are not read, and
// hashing them would cost what sending them saves).
struct Sent {
  uint64_t bytes = 0;
  std::optional<Sha256> digest{std::in_place};
  bool complete = false;  // to its end, not cut short by the client or a read error
};

// Sends the file a piece at a time; a read error midway can only be reported
// by cutting the stream short. Hashed on the blocking lane, with the read.
Task<void> stream_file(SandboxCall& call, Exchange& exchange, int fd, std::unique_ptr<Gzip> gzip,
                       Sent& sent) {
  for (;;) {
    std::optional<Result<DownloadPiece>> next;
    co_await sandbox_ops::file_io(call.service, [&] {
      next.emplace(next_piece(fd, kChunk));
      if (*next && sent.digest) sent.digest->update(next->value().data);
    });
    if (!*next) throw std::runtime_error(next->error().message());
    DownloadPiece& piece = next->value();
    if (piece.hole > 0) {
      sent.digest.reset();
      sent.bytes += piece.hole;
      if (!co_await send_hole(call, exchange, piece.hole, gzip.get())) co_return;
      continue;
    }
    if (piece.data.empty()) break;
    count_bytes(call, 0, piece.data.size());
    sent.bytes += piece.data.size();
    std::string out = gzip ? gzip->feed(piece.data) : std::move(piece.data);
    if (!co_await exchange.write_chunk(std::move(out))) co_return;
  }
  if (gzip && !co_await exchange.write_chunk(gzip->finish())) co_return;
  co_await exchange.finish_stream();
  sent.complete = true;
}

void record_download(const SandboxCall& call, const std::string& path, Sent& sent) {
  json fields = {{"path", path}, {"bytes", sent.bytes}, {"complete", sent.complete}};
  if (sent.digest && sent.complete) fields["sha256"] = sent.digest->hex();
  call.live->log->event("files", "downloaded", std::move(fields));
}

// Filesystems whose files' sizes are not their contents' (/proc's are 0,
// /sys's a page).
bool sizes_are_made_up(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return true;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
      return true;
    default:
      return false;
  }
}

// A regular file's size, sent as Content-Length so a client can show its
// progress; none for anything else (a FIFO, a device, /proc: read until it
// ends). A file that changes meanwhile is cut at this size, or ends the
// connection short.
std::optional<uint64_t> plain_length(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return std::nullopt;
  if (sizes_are_made_up(fd)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

Task<void> files_download(SandboxCall& call, Exchange& exchange) {
  auto input = co_await read_files_input(call, exchange, true);
  if (!input) co_return;
  const std::string path = sfs::absolute_path(input->query.path, input->user.home);
  auto fd = co_await sandbox_ops::open_read(call.service, *call.live->sandbox, path,
                                            input->user.uid, input->user.gid);
  if (!fd) co_return co_await respond_failure(exchange, fd.error());
  std::unique_ptr<Gzip> gzip;
  // The sandbox's bytes on the daemon's own origin (a signed URL opened in
  // a browser): never sniffed into a page, never run as one.
  http::Headers headers = {{"X-Content-Type-Options", "nosniff"},
                           {"Content-Security-Policy", "sandbox"}};
  std::optional<uint64_t> length;
  if (wants_gzip(exchange.request().header("accept-encoding"))) {
    gzip = std::make_unique<Gzip>();
    headers.emplace_back("Content-Encoding", "gzip");
  } else {
    length = plain_length(fd->get());
  }
  co_await exchange.start_stream(200, "application/octet-stream", std::move(headers), length);
  Sent sent;
  try {
    co_await stream_file(call, exchange, fd->get(), std::move(gzip), sent);
  } catch (...) {
    record_download(call, path, sent);
    throw;
  }
  record_download(call, path, sent);
}

Task<void> files_upload(SandboxCall& call, Exchange& exchange) {
  auto input = co_await read_files_input(call, exchange, false);
  if (!input) co_return;
  auto metadata = parse_metadata_headers(exchange.request().headers);
  if (!metadata) co_return co_await respond_failure(exchange, metadata.error());
  const auto boundary = MultipartParser::boundary_of(exchange.request().header("content-type"));
  if (boundary) {
    co_return co_await upload_multipart(call, exchange, *boundary, input->query.path, input->user,
                                        std::move(*metadata));
  }
  co_await upload_raw(call, exchange, input->query.path, input->user, std::move(*metadata));
}

}  // namespace abx::daemon::routes
