// TEMPORARY until the envd branch lands: the route table's sandbox-plane
// handlers call the old per-file dispatchers.
#include "daemon/routes.h"

namespace abx::daemon::routes {

#define PROCESS(fn, name) \
  Task<void> fn(SandboxCall& call, Exchange& exchange) { co_await process(call, exchange, name); }
#define FILESYSTEM(fn, name) \
  Task<void> fn(SandboxCall& call, Exchange& exchange) { co_await filesystem(call, exchange, name); }
PROCESS(process_start, "Start")
PROCESS(process_connect, "Connect")
PROCESS(process_list, "List")
PROCESS(process_send_input, "SendInput")
PROCESS(process_update, "Update")
PROCESS(process_send_signal, "SendSignal")
PROCESS(process_close_stdin, "CloseStdin")
FILESYSTEM(fs_stat, "Stat")
FILESYSTEM(fs_make_dir, "MakeDir")
FILESYSTEM(fs_move, "Move")
FILESYSTEM(fs_list_dir, "ListDir")
FILESYSTEM(fs_remove, "Remove")
FILESYSTEM(fs_watch_dir, "WatchDir")
FILESYSTEM(fs_create_watcher, "CreateWatcher")
FILESYSTEM(fs_get_watcher_events, "GetWatcherEvents")
FILESYSTEM(fs_remove_watcher, "RemoveWatcher")
Task<void> files_download(SandboxCall& call, Exchange& exchange) { co_await files(call, exchange); }
Task<void> files_upload(SandboxCall& call, Exchange& exchange) { co_await files(call, exchange); }
#define INTERP(fn) \
  Task<void> fn(SandboxCall& call, Exchange& exchange) { co_await interpreter(call, exchange); }
INTERP(interp_health)
INTERP(interp_execute)
INTERP(interp_list_contexts)
INTERP(interp_create_context)
INTERP(interp_remove_context)
INTERP(interp_restart_context)

}  // namespace abx::daemon::routes
