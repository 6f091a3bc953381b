#include "daemon/error_map.h"

#include <array>
#include <cerrno>
#include <utility>

namespace abx::daemon::error_map {
namespace {

struct Row {
  int errnum;
  int status;
  const char* code;
};

// One row per kind of failure. ENOSPC/EDQUOT are 507 as envd answers an
// upload that fills the disk; quota refusals are 429 so SDKs raise their
// rate-limit error; timeouts are 504 (deadline_exceeded → TimeoutException).
constexpr std::array kRows = {
    Row{ENOENT, 404, "not_found"},
    Row{ESRCH, 404, "not_found"},  // a process gone between lookup and signal
    Row{EEXIST, 409, "already_exists"},
    Row{ENOTEMPTY, 409, "already_exists"},
    Row{EBUSY, 409, "aborted"},
    Row{EACCES, 403, "permission_denied"},
    Row{EPERM, 403, "permission_denied"},
    Row{kErrUnauthorized, 401, "unauthenticated"},
    Row{EINVAL, 400, "invalid_argument"},
    Row{ENOTDIR, 400, "invalid_argument"},
    Row{EISDIR, 400, "invalid_argument"},
    Row{ELOOP, 400, "invalid_argument"},
    Row{ENAMETOOLONG, 400, "invalid_argument"},
    Row{EXDEV, 400, "invalid_argument"},
    Row{E2BIG, 400, "invalid_argument"},
    Row{kErrTooLarge, 413, "resource_exhausted"},
    Row{ENOSPC, 507, "resource_exhausted"},
    Row{EDQUOT, 507, "resource_exhausted"},
    Row{kErrQuota, 429, "resource_exhausted"},
    Row{ETIMEDOUT, 504, "deadline_exceeded"},
    Row{ENOSYS, 501, "unimplemented"},
    // What this daemon cannot do where it runs (a policy a rootless daemon cannot enforce).
    Row{EOPNOTSUPP, 400, "failed_precondition"},
};

const Row* find(int errnum) {
  for (const Row& row : kRows)
    if (row.errnum == errnum) return &row;
  return nullptr;
}

// Connect's code → HTTP status table (connectrpc.com/docs/protocol).
constexpr std::array<std::pair<const char*, int>, 16> kConnectStatus = {{
    {"canceled", 499},
    {"unknown", 500},
    {"invalid_argument", 400},
    {"deadline_exceeded", 504},
    {"not_found", 404},
    {"already_exists", 409},
    {"permission_denied", 403},
    {"resource_exhausted", 429},
    {"failed_precondition", 400},
    {"aborted", 409},
    {"out_of_range", 400},
    {"unimplemented", 501},
    {"internal", 500},
    {"unavailable", 503},
    {"data_loss", 500},
    {"unauthenticated", 401},
}};

}  // namespace

int http_status(int errnum) {
  const Row* row = find(errnum);
  return row ? row->status : 500;
}

std::string connect_code(int errnum) {
  const Row* row = find(errnum);
  return row ? row->code : "internal";
}

int http_status_for_connect_code(const std::string& code) {
  for (const auto& [name, status] : kConnectStatus)
    if (code == name) return status;
  return 500;
}

}  // namespace abx::daemon::error_map
