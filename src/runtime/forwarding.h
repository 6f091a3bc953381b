// IPv4 forwarding (net.ipv4.ip_forward, one per network namespace) for the
// sandboxes' NAT: on while any abx daemon of the namespace holds it, and
// back off when the last one lets go with no sandbox network left, if it
// was abx that turned it on. The daemons of a namespace find each other by
// a shared lock under the network lock dir; a marker file says abx turned
// forwarding on, so a killed daemon's successor can still turn it off.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"

namespace abx::runtime {

class ForwardingHold {
 public:
  // Joins the namespace's daemons and turns forwarding on if it is off
  // (saying so in `warnings`).
  static Result<ForwardingHold> acquire(const std::filesystem::path& lock_dir,
                                        std::vector<std::string>* warnings);

  ForwardingHold() = default;
  ForwardingHold(ForwardingHold&&) = default;
  ForwardingHold& operator=(ForwardingHold&&) = default;

  // Lets go: the last daemon of the namespace, with no abx sandbox link left
  // in it (a killed daemon's sandboxes still route through it), turns
  // forwarding off again if abx turned it on. Without release (sandboxes
  // that outlive the daemon), forwarding stays as it is.
  void release();

 private:
  std::filesystem::path users_;   // every daemon of the namespace holds it shared
  std::filesystem::path marker_;  // exists while forwarding is on because abx turned it on
  UniqueFd held_;
};

}  // namespace abx::runtime
