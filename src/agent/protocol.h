// The conversation between the runtime (daemon side) and abx-init (PID 1 of a
// sandbox). Compiled into both; nothing here may depend on the daemon.
//
// Transport: a SOCK_SEQPACKET unix socket, so every message keeps its
// boundaries and the fds passed with it (SCM_RIGHTS) belong to it.
//   kSpawn  request: ProcessSpec; fds: exit pipe write end, then unless pty:
//           stdin read end (if stdin_pipe), stdout write end, stderr write end;
//           supervised, then the read ends init keeps (kept_fds), and last
//           the command group's procs (command_group).
//           reply: Reply{pid}; with pty the master is passed back.
//   kAdopt  request: nothing. reply: one Supervised message per process whose
//           daemon went away (the last `done`, pid 0 when there is none),
//           each with its kept fds; the asking connection owns them now.
//   kSignal request: pid, signo.  reply: Reply.
//   kCloseStdin request: pid. reply: Reply; init lets go of the stdin write
//           end it keeps (keep_stdin), so the command reads EOF once the
//           daemon closes its own.
//   kRead   request: pid, offset, max_bytes[, wait_ms]. reply: ReadReply, the
//           output the agent keeps of a supervised command spawned with
//           ring_bytes. With wait_ms (at most kMaxReadWaitMs) and nothing
//           past `offset` yet, the answer waits until output comes, the
//           command ends or wait_ms pass (then an empty slice): a client
//           follows a command without polling. The connection is not read
//           meanwhile (one request at a time on a connection). Offset
//           kFollowOn: from where the last answer to the command's
//           follower ended (a follower's next read, sent ahead).
//   kOpen   request: OpenRequest.  reply: Reply; on success the file, opened
//           O_RDONLY by init as that sandbox user, is passed back.
//   kFile   request: FileRequest, on a connection of its own; kWrite passes
//           the read end of the data pipe. Init hands the connection to a
//           worker it forks (see agent/file_worker.h), which answers with
//           FileReply messages, the last one `done`, and exits. Over TCP the
//           connection goes to the worker as well, and no fd travels: a
//           kWrite's data follows its first (not `done`) answer as frames of
//           raw bytes, an empty frame ends it, then a FileReply frame with
//           the bytes sent commits it; kReadFile answers with the file's
//           bytes in FileReply::data pieces; kOpenDir is not served.
// Over TCP (InitConfig::tcp_port: the transport for a daemon that is not on
// the sandbox's host) no fds travel and every message is a frame (see
// FrameReader). A connection's first frame is a Hello with the protocol's
// version and the sandbox's token; anything else closes it. Served there:
//   kSpawn  the agent makes the pipes: the command is supervised with an
//           output ring (ring_bytes, default kDefaultTcpRingBytes), no stdin,
//           no pty, and its timeout_ms is the agent's to enforce.
//           reply: Reply{pid}.
//           With spec.stdin_pipe the agent keeps the stdin pipe's write end
//           (kInput writes to it); with spec.pty the agent keeps the master,
//           relays what the terminal shows into the ring (as stdout) and
//           kInput types into it.
//   kRead   as above; the slice's `ended` carries the exit status.
//   kSignal, kCloseStdin as above.
//   kInput  request: pid, input (at most kMaxInputBytes). reply: Reply; the
//           bytes are queued (at most kMaxPendingInput per command,
//           kMaxPendingInputTotal over all) and written as the command
//           reads them; EAGAIN when a queue is full.
//   kResize request: pid, cols, rows. reply: Reply; the pty's new size.
//   kList   request: nothing. reply: one Supervised per command the agent
//           supervises (running, or ended and kept for a later client;
//           the last `done`, pid 0 when there is none), no fds: what a
//           daemon that cannot adopt fds rebuilds its view from.
//   kFile   as above (the connection becomes the file worker's).
// kInput (for commands spawned in band only) and kResize (for any command
// whose pty init keeps) are served on the control socket too, and so are
// kList and an in-band kSpawn (Request::in_band): a daemon on the host may
// hold no fd of a command either. Any other
// request over TCP gets a Reply with EPROTONOSUPPORT.
// Start-up: the runtime hands init an InitConfig on an fd, then the O_PATH
// fds of the rootfs sources in one message on the handoff socket, and waits
// for one StatusReport ("ready" or the failing step) on a pipe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/file_request.h"
#include "runtime/runtime.h"

namespace abx::agent {
// The runtime's data types the protocol carries.
using runtime::EntryInfo;
using runtime::FileOp;
using runtime::FileRequest;
using runtime::FileType;
using runtime::kMaxProcessLabel;
using runtime::OutputSlice;
using runtime::OutputStream;
using runtime::ProcessSpec;
}  // namespace abx::agent

namespace abx::agent::proto {

// What init needs to build the sandbox.
struct InitConfig {
  std::string hostname;
  uint64_t disk_bytes = 0;
  std::vector<std::string> lower_layers;                   // host paths, topmost first
  std::vector<std::pair<std::string, std::string>> binds;  // host path → sandbox path
  bool full_id_map = true;  // false: only uid/gid 0 exists inside (rootless without subuids)
  std::string seccomp_bpf;  // compiled once by the runtime (runtime::seccomp_policy::compile)
  bool host_writable_dir = false;  // the writable layer is a host dir (RootfsSpec::writable_dir)
  std::vector<std::string> proc_views;  // lxcfs files to bind over /proc/<name>
  // The handoff ends with the cgroup.procs of the workload memory cgroup,
  // which every process init starts joins (see cgroup::workload_procs).
  bool workload_cgroup = false;
  std::string nameserver;  // for /etc/resolv.conf (the sandbox's gateway); empty: keep
  // false: no process gets CAP_NET_RAW. slirp4netns forwards whatever packet
  // reaches it, 127.0.0.1 too, so hand-made frames must be impossible there.
  bool raw_sockets = true;
  // true: no no_new_privs, so set-id programs work (sudo in `base`); only for
  // a template whose spec asks for it (RootfsSpec::allow_setid).
  bool allow_setid = false;
  // Non-zero: init also listens on this TCP port (all addresses of the
  // sandbox's network) for clients that show `tcp_token` in their Hello.
  uint16_t tcp_port = 0;
  std::string tcp_token;
  // true: the fds of the lower layers and of the writable dir are detached
  // idmapped mounts (runtime/id_ranges.h), attached on the staging tmpfs.
  bool idmapped_layers = false;
  // Where each volume is mounted (read-write), in the order of their fds.
  std::vector<std::string> volumes;
  // Not encoded: O_PATH fds of each lower layer, then of each bind source,
  // then of the writable dir if any, then of lxcfs's proc dir if there are
  // proc_views, then of each volume (detached idmapped mounts when
  // idmapped_layers), received by init in the handoff message (see spawner.h).
  std::vector<int> source_fds;

  // Where lxcfs's proc dir sits among the handed-over fds, and how many
  // there are (the workload cgroup's procs fd is last, not a source).
  size_t proc_views_source() const {
    return lower_layers.size() + binds.size() + (host_writable_dir ? 1 : 0);
  }
  size_t volumes_source() const { return proc_views_source() + (proc_views.empty() ? 0 : 1); }
  size_t handoff_count() const {
    return volumes_source() + volumes.size() + (workload_cgroup ? 1 : 0);
  }
  int workload_procs_fd = -1;  // not a source: taken off the handoff's end
};

enum class RequestType : uint8_t {
  kSpawn = 1,
  kSignal = 2,
  kOpen = 3,
  kFile = 4,
  kAdopt = 5,
  kRead = 6,
  kCloseStdin = 7,
  kInput = 8,
  kResize = 9,
  kList = 10,
  // Before CRIU dumps the sandbox (runtime/checkpoint.h): init answers, then
  // closes its control listener and every daemon connection (sockets of the
  // host's network namespace, which CRIU cannot dump) and stops serving, and
  // becomes dumpable (CRIU opens its /proc files from inside the sandbox's
  // user namespace). EBUSY while a file operation or a start is in flight.
  kPrepareCheckpoint = 11,
};

// A regular file to open for reading inside the sandbox, with the permissions
// of sandbox uid/gid: path resolution and the permission checks are the
// kernel's, in the sandbox's own namespaces.
struct OpenRequest {
  std::string path;  // absolute, resolved as if the sandbox root were "/"
  uint32_t uid = 0;
  uint32_t gid = 0;
};
// The Reply steps of a kOpen refused because the file lives on /proc or /sys
// (EPERM: those are the kernel's files, not the sandbox's) or is a device,
// FIFO or socket (EINVAL).
inline constexpr const char* kPseudoFileStep = "open a /proc or /sys file";
inline constexpr const char* kNotRegularStep = "open a device, FIFO or socket";

struct Request {
  RequestType type = RequestType::kSpawn;
  ProcessSpec spec;  // kSpawn
  int32_t pid = 0;   // kSignal
  int32_t signo = 0;
  OpenRequest open;  // kOpen
  FileRequest file;  // kFile
  // kSpawn: the last fd is the cgroup.procs of the command's own group
  // (cgroup::open_command_group), which the process joins before exec.
  bool command_group = false;
  // kSpawn: init keeps read ends of the process's pipes (or its pty master),
  // so the process outlives the daemon and a later one adopts it; `label` is
  // the daemon's description of it, handed back with it (kAdopt).
  bool supervised = false;
  std::string label;
  uint32_t timeout_ms = 0;  // supervised: killed then while no daemon holds it (0: never)
  bool keep_stdin = false;  // supervised, with a stdin pipe: init keeps its write end too
  // supervised, with pipes: the agent relays the output and keeps this many
  // of its newest bytes (ProcessSpec::output_ring_bytes); 0: none.
  uint32_t ring_bytes = 0;
  // kSpawn on the control socket: the agent makes the pipes (or the pty)
  // and keeps the output, as over TCP; only the command group's procs fd
  // travels (command_group). Over TCP every spawn is in band.
  bool in_band = false;
  // kRead: a supervised command's kept output from `offset`, at most
  // `max_bytes` (kMaxReadBytes), answered with an OutputSlice message.
  uint64_t offset = 0;
  uint32_t max_bytes = 0;
  uint32_t wait_ms = 0;  // kRead: how long to wait for output past `offset`
  std::string input;     // kInput: bytes for the command's stdin or terminal
  uint16_t cols = 0;     // kResize: the terminal's new size, both non-zero
  uint16_t rows = 0;
};
inline constexpr uint32_t kMaxReadBytes = 128 * 1024;
// A kRead's offset meaning "where this command's follower was last answered
// up to" (OutputRelay::delivered), resolved when the agent reads the request:
// a follower sends its next read before the answer to the last has come.
inline constexpr uint64_t kFollowOn = UINT64_MAX;
inline constexpr uint32_t kMaxReadWaitMs = 60 * 1000;
inline constexpr size_t kMaxInputBytes = 64 * 1024;
// What waits for a command to read its input, per command: the agent (PID 1,
// outside the sandbox's memory limit) holds no more for it than this.
inline constexpr size_t kMaxPendingInput = 1024 * 1024;
// ... and over all its commands together: however many commands an API
// caller starts and never lets read, the agent holds no more than this.
inline constexpr size_t kMaxPendingInputTotal = 8 * 1024 * 1024;
inline constexpr uint32_t kDefaultTcpRingBytes = 1024 * 1024;
inline constexpr uint32_t kMaxRingBytes = 64 * 1024 * 1024;

// Ends a supervised spawn hands init after its stdio: the exit pipe's read
// end, then stdout's and stderr's (none with a pty: init keeps its master),
// then stdin's write end (keep_stdin).
inline size_t kept_fds(const Request& request) {
  return request.spec.pty ? 1 : 3 + (request.keep_stdin ? 1 : 0);
}

// A supervised process handed to an adopting daemon (kAdopt), with the fds
// init kept: the exit pipe's read end, then stdout's and stderr's or the pty
// master, then stdin's write end (`stdin`). `ended`: the exit status is
// waiting in the exit pipe.
struct Supervised {
  int32_t pid = 0;
  bool ended = false;
  bool pty = false;
  std::string label;
  bool done = true;
  bool has_stdin = false;
  bool in_band = false;  // spawned in band (Request::in_band, or over TCP)
  // The end of the output the last waiting kRead was answered with: where
  // its follower (a daemon gone since) had got to.
  uint64_t delivered = 0;
};

// errnum == 0 and an empty step mean success.
struct Reply {
  int32_t pid = 0;
  int32_t errnum = 0;
  std::string step;
  bool ok() const { return errnum == 0 && step.empty(); }
};

// A file worker's answer. kList's entries may come in several messages
// (`done` false on all but the last). kWrite answers once the file is open
// (`done` false) and again after the data pipe's EOF, with the bytes written.
struct FileReply {
  int32_t errnum = 0;  // 0 and an empty step: success
  std::string step;
  std::string detail;
  bool done = true;
  uint64_t written = 0;
  std::vector<EntryInfo> entries;
  std::string data;  // kReadFile: the next piece of the file (at most kFilePieceBytes)
  bool ok() const { return errnum == 0 && step.empty(); }
};
inline constexpr size_t kFilePieceBytes = 128 * 1024;

// Fixed-size, so the pre-exec clone child (which may not allocate) can write
// it too. step "ready" with errnum 0 means init is serving.
struct StatusReport {
  int32_t errnum = 0;
  char step[124] = {};
};
inline constexpr const char* kReady = "ready";
// Init keeps its staging tmpfs's writable layer (the overlay's upper dir)
// open at this fd, so the runtime can copy it for a snapshot through
// /proc/<init>/fd/N: the dir is reachable nowhere else once init has left
// the staging root. O_PATH and close-on-exec: no command inherits it.
inline constexpr int kWritableLayerFd = 250;
// After kPrepareCheckpoint init has no control listener; it holds the two
// ends of a stream socketpair of its own instead (reachable by nobody, dumped
// and restored by CRIU as any pair) and polls the first. After a restore the
// daemon takes the second from init (pidfd_getfd) and sends its new listener
// through it (one message, the listener as its only fd): init serves it.
inline constexpr int kCheckpointListenFd = 249;
inline constexpr int kCheckpointHandFd = 248;

std::string encode(const InitConfig& config);
bool decode(const std::string& bytes, InitConfig* config);
std::string encode(const Request& request);
bool decode(const std::string& bytes, Request* request);
std::string encode(const Reply& reply);
bool decode(const std::string& bytes, Reply* reply);
std::string encode(const FileReply& reply);
bool decode(const std::string& bytes, FileReply* reply);
std::string encode(const Supervised& process);
bool decode(const std::string& bytes, Supervised* process);
// kRead's answer: the slice, or (errnum != 0) why there is none.
struct ReadReply {
  int32_t errnum = 0;
  std::string step;
  OutputSlice slice;
};
std::string encode(const ReadReply& reply);
// A ReadReply whose chunks are views of where the agent keeps the output:
// encoded straight into the message, with no copy of the bytes on the way
// (kRead's answers carry most of a command's output). The same bytes on
// the wire as encode(ReadReply).
struct ChunkView {
  OutputStream stream = OutputStream::kStdout;
  uint64_t offset = 0;
  std::string_view bytes;
};
struct ReadReplyView {
  int32_t errnum = 0;
  std::string step;
  uint64_t start = 0;
  uint64_t end = 0;
  bool ended = false;
  int32_t wait_status = 0;
  std::vector<ChunkView> chunks;
};
std::string encode(const ReadReplyView& reply);
bool decode(const std::string& bytes, ReadReply* reply);

// The first frame on a TCP connection. The version lets a later agent
// refuse (or adapt to) an older daemon; this one serves only its own.
inline constexpr uint32_t kProtocolVersion = 1;
struct Hello {
  uint32_t version = kProtocolVersion;
  std::string token;
};
std::string encode(const Hello& hello);
bool decode(const std::string& bytes, Hello* hello);
// Compares in time independent of where they differ: the token is a secret.
bool same_token(const std::string& a, const std::string& b);

// Frames on a byte stream: a 4-byte little-endian length, then that many
// bytes (at most kMaxMessage). Fed what arrives, in pieces of any size.
class FrameReader {
 public:
  enum class Next { kFrame, kMore, kTooBig };
  void feed(const char* data, size_t size) { buffer_.append(data, size); }
  // kFrame: the oldest whole frame is in *frame; kMore: none yet; kTooBig:
  // the stream claims a frame over the bound (the connection must go).
  Next next(std::string* frame);

 private:
  std::string buffer_;
};
std::string frame(const std::string& message);
// Blocking: the whole frame, or an error (EOF counts: false, no error).
Status send_frame(int sock, const std::string& message);
Result<bool> recv_frame(int sock, std::string* message);

// What a kOpen may hand out, checked by init before it replies and again by
// the daemon on the fd it receives: a regular file (EISDIR for a directory,
// EINVAL, step kNotRegularStep, for a device, FIFO or socket) that is not on
// procfs or sysfs (EPERM, step kPseudoFileStep).
Status check_readable_file(int fd, const std::string& path);

Reply reply_from(const Error& error);
Error error_from(const Reply& reply);

// One message with its fds over a SOCK_SEQPACKET socket.
inline constexpr size_t kMaxMessage = 192 * 1024;

// How long init lets a spawned child take from fork to exec. What it does
// meanwhile is a few system calls (cgroup joins, setsid, dup2, setuid, chdir,
// execve), milliseconds even under load; a child near this bound is held by
// sandbox root (ptrace, or a stop init cannot see), so the spawn fails rather
// than keeping the daemon's caller waiting. Init serves its other clients
// meanwhile; a child stopped before its exec fails its spawn at once.
inline constexpr int kStartBoundMs = 5'000;
// A template's layers travel in one message: up to the 127 layers validate()
// allows, plus the binds and the writable dir (the kernel's limit is 253).
inline constexpr size_t kMaxFds = 160;
// Init moves what it keeps (status, listen, the handoff's fds) down to 3 and
// up, so its own fd above stays free whatever numbers the daemon used.
static_assert(3 + 2 + kMaxFds < static_cast<size_t>(kCheckpointHandFd));
Status send_message(int sock, const std::string& bytes, const std::vector<int>& fds);
// false on an orderly EOF.
Result<bool> recv_message(int sock, std::string* bytes, std::vector<UniqueFd>* fds);

}  // namespace abx::agent::proto

// The runtime is the protocol's client and names it as its own.
namespace abx::runtime {
namespace proto = agent::proto;
}  // namespace abx::runtime
