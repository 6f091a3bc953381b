// The daemon's handle on one running sandbox: a connection to its init's
// control socket (one request at a time; file operations open their own), its init's pidfd, its
// root as the host sees it, its network namespace, and its cgroups. Four fds in all.
#pragma once

#include <sys/un.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <vector>

#include "agent/protocol.h"
#include "runtime/cgroup.h"
#include "runtime/networks.h"
#include "runtime/reaper.h"
#include "runtime/runtime.h"
#include "runtime/user.h"
#include "runtime/user_net.h"

namespace abx::runtime {

class LocalSandbox final : public Sandbox {
 public:
  // What the runtime opened for a sandbox while its init's pid was
  // certainly its own.
  struct Held {
    std::shared_ptr<InitHandle> init;
    UniqueFd root;
    UniqueFd net_ns;
  };
  // `networks` is null, or holds the sandbox's slot (record.net_address).
  // `user_net`: a rootless daemon's sandbox, whose way out is slirp4netns.
  // `ids`: what the sandbox maps to; `stored_ids`: what layers are stored
  // with (the same unless the sandbox has a range of its own, id_ranges.h).
  LocalSandbox(SandboxRecord record, UniqueFd control, Held held, user::IdMap ids,
               user::IdMap stored_ids, cgroup::Layout cgroups, std::shared_ptr<Networks> networks,
               bool user_net);

  const SandboxRecord& record() const override { return record_; }
  Result<Process> spawn(const ProcessSpec& spec) override;
  Status signal(int pid, int signo) override;
  Result<UniqueFd> open_as(const std::string& path, uint32_t uid, uint32_t gid) const override;
  Result<FileResult> file_op(const FileRequest& request) const override;
  int root_fd() const override { return held_.root.get(); }
  std::string stopped_reason() const override { return held_.init->stopped_reason(); }
  int net_ns_fd() const override { return held_.net_ns.get(); }
  uint32_t address() const override { return networks_ ? record_.net_address : 0; }
  Status set_egress(const egress::Policy& policy) override;
  uid_t host_uid(uint32_t sandbox_uid) const override { return ids_.host_uid(sandbox_uid); }
  gid_t host_gid(uint32_t sandbox_gid) const override { return ids_.host_gid(sandbox_gid); }
  Usage usage() const override;
  uint64_t oom_kills() const override { return cgroup::oom_kills(cgroups_, record_.id); }
  Status set_frozen(bool frozen) override;
  Result<layer_diff::Diff> diff_writable_layer(const std::vector<fs::path>& lowers) const override;
  Result<layer_copy::Copied> copy_writable_layer(int into,
                                                 const layer_copy::Limits& limits) const override;
  std::map<int, std::vector<ProcessEntry>> command_processes() const override;
  Result<std::vector<AdoptedProcess>> adopt_processes() override;
  Result<OutputSlice> read_output(int pid, uint64_t offset, size_t max) override;
  Status close_stdin(int pid) override;
  Result<int> spawn_in_band(const ProcessSpec& spec) override;
  Status send_input(int pid, const std::string& bytes) override;
  Status resize_terminal(int pid, uint16_t cols, uint16_t rows) override;
  Result<std::unique_ptr<OutputFollower>> follow_output(int pid) override;
  Result<std::vector<ListedProcess>> list_processes() override;
  Status prepare_checkpoint() override;
  // For Runtime::checkpoint: init's handle (to keep the reaper quiet about
  // its exit) and the writable layer it keeps.
  const std::shared_ptr<InitHandle>& init() const { return held_.init; }

 private:
  static std::optional<AdoptedProcess> adopted_process(const proto::Supervised& message,
                                                       std::vector<UniqueFd> fds);
  Result<proto::Reply> call(const proto::Request& request, const std::vector<int>& fds,
                            std::vector<UniqueFd>* received) const;
  // One request and its answer, undecoded (call() decodes a Reply).
  Result<std::string> exchange(const proto::Request& request, const std::vector<int>& fds,
                               std::vector<UniqueFd>* received) const;
  // A request answered with a plain Reply; an agent too old to decode it
  // gives `older` (kNoInBand).
  Status in_band_call(const proto::Request& request, const char* what) const;
  Status supervised_messages(
      proto::RequestType type,
      const std::function<void(const proto::Supervised&, std::vector<UniqueFd>)>& each);
  Status set_user_net(const egress::Policy& policy);
  Error paused_error() const;
  // The overlay's upper dir init keeps (proto::kWritableLayerFd), reopened;
  // errors say `what` could not be done.
  Result<UniqueFd> writable_layer(const std::string& what) const;

  SandboxRecord record_;
  // One request in flight on the control connection: whoever has the turn
  // (call(), set_frozen) uses it, others wait for it (a condition variable,
  // not a timed mutex: TSan cannot follow pthread_mutex_clocklock).
  class Turn;
  mutable std::mutex turn_mutex_;
  mutable std::condition_variable turn_free_;
  mutable bool turn_taken_ = false;
  // File operations in flight (file_op), and a wait for one to end.
  mutable std::mutex file_ops_mutex_;
  mutable std::condition_variable file_op_ended_;
  mutable int file_ops_ = 0;
  // Paused: init answers nothing, so nothing is asked of it (EBUSY at once)
  // rather than a daemon thread waiting for the resume.
  std::atomic<bool> frozen_{false};
  // Names command groups until their pid is known: random, so a daemon that
  // adopts this sandbox after a crash does not pick its predecessor's names.
  std::atomic<uint64_t> groups_made_{std::random_device{}() * 0x100000000ull};
  UniqueFd control_;
  Held held_;
  user::IdMap ids_;
  user::IdMap stored_ids_;
  cgroup::Layout cgroups_;
  std::shared_ptr<Networks> networks_;
  const bool user_net_;
  std::mutex user_net_mutex_;       // one policy change at a time
  std::unique_ptr<UserNet> slirp_;  // null: no way out (yet, or denied)
};

// The control socket's name in a sandbox's state dir.
inline constexpr const char* kControlSocketName = "ctl.sock";

// Connects to the control socket in a sandbox's state dir. Without `wait`,
// a full backlog (init not accepting) is EAGAIN at once.
Result<UniqueFd> connect_control(const fs::path& socket_path, bool wait = true);
// A SEQPACKET socket and the address of the control socket at `path`; `step`
// names the failure ("bind …", "connect …") when the path is too long.
struct ControlSocket {
  UniqueFd fd;
  sockaddr_un address;
};
Result<ControlSocket> control_socket(const fs::path& path, const std::string& step);

}  // namespace abx::runtime
