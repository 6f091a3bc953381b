// Control-plane requests parsed and validated into typed values. Errors are
// Error{field, EINVAL, what is wrong}: message() reads "<field>: <what>".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/network_request.h"

namespace abx::daemon {

inline constexpr int kDefaultTimeoutSec = 300;
inline constexpr int kMaxTimeoutSec = 86400;

// E2B's SandboxVolumeMount: the team's volume `name` at `path`.
struct VolumeMountRequest {
  std::string name;
  std::string path;
};

struct CreateSandboxRequest {
  std::string template_name;
  int timeout_sec = kDefaultTimeoutSec;
  std::map<std::string, std::string> metadata;
  std::map<std::string, std::string> env_vars;
  // Secure by default on every API version: the sandbox plane then needs the
  // sandbox's access token (or its team's API key); false: the API key only.
  bool secure = true;
  bool allow_internet_access = true;
  NetworkSettings network;  // E2B's `network` and allow_internet_access, validated
  // E2B's network.allowPublicTraffic: false makes proxied ports require the
  // sandbox's traffic access token (e2b-traffic-access-token header).
  bool allow_public_traffic = true;
  // Our extension: override the runtime's default limits.
  std::optional<uint32_t> cpu_count;
  std::optional<uint32_t> memory_mb;
  std::optional<uint32_t> disk_size_mb;
  // Our extension: bytes of each command's stdout and of its stderr that wait
  // while no daemon reads, and of its newest output the agent keeps
  // (`abx serve --output-buffer`, for this sandbox only).
  std::optional<uint32_t> output_buffer_bytes;
  // Our extension: false answers 409 instead of building an unbuilt template
  // first, so that a client can show the build's progress itself.
  bool wait_for_build = true;
  // E2B's lifecycle: at its timeout the sandbox is paused, not killed; with
  // auto_resume a request to it (envd or a port) resumes it.
  bool auto_pause = false;
  bool auto_pause_memory = true;  // false: that pause is filesystem-only
  bool auto_resume = false;
  std::vector<VolumeMountRequest> volume_mounts;
};

Result<CreateSandboxRequest> parse_create_sandbox(const std::string& body, uint32_t host_cores);

// {"timeout": seconds} for /timeout and /connect. E2B's API takes 0 too: on
// /timeout the sandbox ends now; /connect only ever extends, so 0 keeps it.
Result<int> parse_timeout_body(const std::string& body);

// A pause's {"memory": bool} (E2B's keep_memory; absent or null: true, the
// freezer). False: a filesystem-only pause.
Result<bool> parse_pause_memory(const std::string& body);

// POST /sandboxes/{id}/fork: {"timeout": s (default 300), "count": n (default 1)}.
struct ForkRequest {
  int timeout_sec = kDefaultTimeoutSec;  // as a create's: forks are sandboxes to work in
  int count = 1;
};
Result<ForkRequest> parse_fork(const std::string& body);

struct ListSandboxesQuery {
  std::map<std::string, std::string> metadata;  // every pair must match
  std::vector<std::string> states;              // empty: any
  size_t limit = 100;
  std::string next_token;  // id of the first sandbox of the page
  // E2B's `order`: by start time, newest first unless "asc".
  bool newest_first = true;
  // `startedAfter` / `startedBefore` (RFC 3339), inclusive, in unix ms.
  std::optional<int64_t> started_after_ms;
  std::optional<int64_t> started_before_ms;
  std::string template_name;  // `template`: a template id or alias; empty: any
};

Result<ListSandboxesQuery> parse_list_query(const std::map<std::string, std::string>& query);

// GET /sandboxes/{id}/metrics: E2B's `start` and `end`, unix seconds, both
// inclusive; one left out leaves that side open (the sandbox's whole life).
struct MetricsRange {
  int64_t start_s = INT64_MIN;
  int64_t end_s = INT64_MAX;
};

Result<MetricsRange> parse_metrics_range(const std::map<std::string, std::string>& query);

// GET /sandboxes/{id}/logs?start=&limit=: lines at or after `start` (unix
// ms), at most `limit` (1..1000, E2B's default 1000).
struct LogsQuery {
  int64_t start_ms = 0;
  size_t limit = 1000;
};

Result<LogsQuery> parse_logs_query(const std::map<std::string, std::string>& query);

// GET /abx/v1/sandboxes/{id}/processes/{pid}/output: the command (a pid as
// the sandbox numbers them) and from which byte of its output, how many.
struct OutputQuery {
  int pid = 0;
  uint64_t offset = 0;
  size_t limit = 64 * 1024;
};
inline constexpr size_t kMaxOutputLimit = 128 * 1024;
Result<OutputQuery> parse_output_query(const std::string& pid,
                                       const std::map<std::string, std::string>& query);

}  // namespace abx::daemon
