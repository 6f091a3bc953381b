// A rootless daemon's way out for its sandboxes: slirp4netns, a user-mode
// TCP/IP stack that runs as the daemon's user, joins the sandbox's user and
// network namespaces to make a tap device there, and turns the sandbox's
// packets into connections of its own from the daemon's network namespace.
// It cannot judge addresses the way the root daemon's nftables table does,
// so a sandbox here either reaches what the daemon's user reaches (but for
// the host's loopback, closed) or nothing at all.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>

#include "common/error.h"
#include "common/unique_fd.h"
#include "egress/policy.h"

namespace abx::runtime {

class UserNet {
 public:
  // The slirp4netns binary, or null when it is not installed.
  static const char* binary();
  // The sandbox's resolver: the host's first one that is not on loopback
  // (slirp4netns's own DNS address is off: it leads to the host's resolver
  // on any port, 127.0.0.53 included); empty: none.
  static std::string host_nameserver();

  // Whether `policy` asks for the network at all (false: deny-all, nothing
  // allowed), or an error naming what user-mode networking cannot enforce.
  static Result<bool> wants_network(const egress::Policy& policy);

  // Starts slirp4netns on the namespaces of process `init` (joining the
  // user namespace that owns the network one is what lets it make the tap);
  // returns once eth0 inside is up. The caller makes sure `init` lived
  // from before the call until after it, so the number was init's all along.
  // Its output goes to `log`.
  static Result<std::unique_ptr<UserNet>> attach(pid_t init, const std::filesystem::path& log);
  // False once slirp4netns has exited (and is reaped): the sandbox has no way out.
  bool running();
  // Ends slirp4netns (the sandbox loses its way out) and reaps it.
  ~UserNet();

  UserNet(const UserNet&) = delete;
  UserNet& operator=(const UserNet&) = delete;

 private:
  UserNet(pid_t pid, UniqueFd exit_write) : pid_(pid), exit_write_(std::move(exit_write)) {}

  pid_t pid_;
  // slirp4netns exits when this closes: with us, or when the daemon dies,
  // so it never outlives the daemon that can reap it.
  UniqueFd exit_write_;
};

}  // namespace abx::runtime
