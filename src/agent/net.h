// The sandbox's network and UTS namespaces: hostname and loopback, by
// syscalls and ioctls (an `ip` exec costs milliseconds).
#pragma once

#include "agent/protocol.h"
#include "common/error.h"

namespace abx::agent::net {

Status set_hostname(const proto::InitConfig& config);
Status write_host_files(const proto::InitConfig& config);  // /etc/hosts, /etc/hostname
Status loopback_up(const proto::InitConfig& config);

}  // namespace abx::agent::net
