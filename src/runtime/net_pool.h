// The addresses of sandbox networks: one /16 per daemon, cut into /30s, one
// per sandbox (slot): .1 is the host's end (the sandbox's gateway, where its
// DNS goes), .2 the sandbox's eth0. Several daemons on one host each hold a
// different /16 by an exclusive lock, so their sandboxes never share an
// address, a route or an interface name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "egress/policy.h"

namespace abx::runtime {

class NetPool {
 public:
  // `wanted` empty: the first /16 of 10.200.0.0-10.254.0.0 that no host
  // route or address overlaps and no other daemon holds; `previous` (the
  // pool this state dir used before, so sandboxes left running are
  // adopted) is tried first. Locks live in `lock_dir`.
  static Result<NetPool> claim(const std::string& wanted, const std::string& previous,
                               const std::filesystem::path& lock_dir);

  // Locks exactly `cidr`; EBUSY while a daemon holds it.
  static Result<NetPool> claim_exact(const egress::Cidr& cidr,
                                     const std::filesystem::path& lock_dir);

  const egress::Cidr& cidr() const { return cidr_; }
  // Interface names of this pool's host ends start with this ("ab0ac8-").
  const std::string& link_prefix() const { return prefix_; }

  static constexpr uint32_t kSlots = 16384;  // /30s in a /16, slot 0 unused
  uint32_t gateway(uint32_t slot) const { return cidr_.network + slot * 4 + 1; }
  uint32_t address(uint32_t slot) const { return cidr_.network + slot * 4 + 2; }
  std::string link_name(uint32_t slot) const { return prefix_ + std::to_string(slot); }
  // The slot whose sandbox address is `ip`, or 0.
  uint32_t slot_of_address(uint32_t ip) const;
  // The slot named by one of this pool's link names, or 0.
  uint32_t slot_of_link(const std::string& name) const;

  // A free slot, marked used; 0 when all are taken.
  uint32_t take();
  // Marks an adopted sandbox's slot used; false if it was not free.
  bool hold(uint32_t slot);
  void give_back(uint32_t slot);

  NetPool(NetPool&& other) noexcept;

 private:
  NetPool(egress::Cidr cidr, UniqueFd lock);

  egress::Cidr cidr_;
  std::string prefix_;
  UniqueFd lock_;
  std::mutex mutex_;
  std::vector<bool> used_;
  uint32_t next_ = 1;
};

std::string ipv4_text(uint32_t ip);  // host byte order → "10.200.0.1"

}  // namespace abx::runtime
