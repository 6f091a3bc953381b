// Sandbox-plane requests (envd's Connect RPCs, /files, the code interpreter)
// parsed and validated into typed values. Parsing never throws: a bad field is
// an Error with kErrBadInput whose message names the field, e.g.
// "process.pid: must be an integer from 0 to 2147483647".
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "daemon/process_table.h"
#include "interp/interp.h"

namespace abx::daemon {

// process.Process/Start. The route adds the user, the sandbox's defaults and
// the deadline to make a StartProcess (see start_process_of in routes_process.cc).
struct StartRequest {
  ProcessConfig config;
  std::string tag;
  bool pty = false;
  uint16_t pty_cols = 0;  // 0: the runtime's default
  uint16_t pty_rows = 0;
  bool stdin_pipe = true;
};

// process.Process/Connect and CloseStdin: only a process selector.
struct ConnectRequest {
  ProcessSelector process;
};

struct SendInputRequest {
  ProcessSelector process;
  std::string bytes;  // decoded from base64
  bool to_pty = false;
};

struct SignalRequest {
  ProcessSelector process;
  int signal = 0;  // SIGKILL or SIGTERM, the two envd accepts
};

// process.Process/Update: a pty resize.
struct UpdateRequest {
  ProcessSelector process;
  uint16_t cols = 0;
  uint16_t rows = 0;
};

// filesystem.Filesystem/Stat, MakeDir and Remove: only a path.
struct PathRequest {
  std::string path;
};

inline constexpr int kMaxListDepth = 4096;  // deeper than PATH_MAX allows anyway

struct ListDirRequest {
  std::string path;
  int depth = 1;  // >= 1
};

struct MoveRequest {
  std::string source;
  std::string destination;
};

// WatchDir and CreateWatcher. allowNetworkMounts (envd 0.6.4) is accepted and
// changes nothing: a sandbox has no network filesystems to refuse.
struct WatchDirRequest {
  std::string path;
  bool recursive = false;
  bool include_entry = false;  // each event carries the entry's EntryInfo (envd 0.6.3)
};

// GetWatcherEvents and RemoveWatcher.
struct WatcherRequest {
  std::string watcher_id;
};

// GET/POST /files query parameters. `path` may be empty only for a
// multipart upload, whose parts name their own destinations.
struct FilesQuery {
  std::string path;
  std::string username;  // empty: from Authorization, else the sandbox's default user
};

inline constexpr auto kDefaultRunTimeout = std::chrono::seconds(300);  // Python SDK's default
inline constexpr int64_t kMaxRunTimeoutSec = 7 * 24 * 3600;

// POST /execute.
struct ExecuteRequest {
  interp::ExecuteRequest run;
  std::chrono::milliseconds timeout{kDefaultRunTimeout};
};

// POST /contexts. `cwd` is absolute when given; whether it exists is the
// route's check (it needs the sandbox).
struct CreateContextRequest {
  std::string language;
  std::string cwd;
};

Result<StartRequest> parse_start(const nlohmann::json& message);
Result<ConnectRequest> parse_connect(const nlohmann::json& message);
Result<SendInputRequest> parse_send_input(const nlohmann::json& message);
Result<SignalRequest> parse_signal(const nlohmann::json& message);
Result<UpdateRequest> parse_update(const nlohmann::json& message);

Result<PathRequest> parse_path_request(const nlohmann::json& message);
Result<ListDirRequest> parse_list_dir(const nlohmann::json& message);
Result<MoveRequest> parse_move(const nlohmann::json& message);
Result<WatchDirRequest> parse_watch_dir(const nlohmann::json& message);
Result<WatcherRequest> parse_watcher(const nlohmann::json& message);

// `path_required`: downloads and raw uploads need ?path=.
Result<FilesQuery> parse_files_query(const std::map<std::string, std::string>& query,
                                     bool path_required);

// The X-Metadata-<key> headers of an upload (`headers` lower-cased): envd's
// file metadata, keys lower-cased. Refused as envd refuses them: an empty
// key, a key over 246 bytes, a byte outside printable ASCII, over 4 KiB in all.
Result<std::map<std::string, std::string>> parse_metadata_headers(
    const std::map<std::string, std::string>& headers);

// The interpreter's bodies: `body` is the raw request text ("" reads as {}).
Result<nlohmann::json> parse_interpreter_body(const std::string& body);
Result<ExecuteRequest> parse_execute(const nlohmann::json& body);
Result<CreateContextRequest> parse_create_context(const nlohmann::json& body);
// The {context} of /contexts/{context}[/restart].
Result<std::string> parse_context_id(const std::map<std::string, std::string>& params);

}  // namespace abx::daemon
