// The sandbox's mount namespace: overlay root over the template's layers, its
// read-only binds, fresh /proc and a minimal /dev, entered with pivot_root.
// Until enter_root() the host's root is reachable at /oldroot and the new
// root is assembled at /newroot, both on a staging tmpfs.
#pragma once

#include "agent/protocol.h"
#include "common/error.h"

namespace abx::agent::mnt {

using proto::InitConfig;

Status make_private(const InitConfig& config);
Status stage(const InitConfig& config);  // tmpfs of disk_bytes; pivot into it
Status mount_overlay(const InitConfig& config);
Status bind_read_only(const InitConfig& config);
Status mount_volumes(const InitConfig& config);  // read-write, after the read-only binds
Status mount_proc(const InitConfig& config);
Status bind_proc_views(const InitConfig& config);  // lxcfs's meminfo, uptime, ... over /proc
Status make_dev(const InitConfig& config);
Status make_standard_dirs(const InitConfig& config);  // /tmp, /home/user
Status mask_proc(const InitConfig& config);
Status close_sources(const InitConfig& config);  // the runtime's fds of layers and binds
Status enter_root(const InitConfig& config);     // pivot_root into /newroot, drop the rest

}  // namespace abx::agent::mnt
