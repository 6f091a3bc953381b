// Per-sandbox cgroups (v1 hierarchies or the v2 unified tree): memory, pids
// and cpu limits, attach, usage, kill and removal. Every sandbox's cgroup is
// <hierarchy>/abx/<instance>/<id>, where <instance> names this runtime, so
// several daemons on one host never touch each other's groups.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "runtime/runtime.h"

namespace abx::runtime::cgroup {

enum class Version { kNone, kV1, kV2 };

struct Hierarchy {
  fs::path base;                         // <mount>/abx/<instance>
  std::vector<std::string> controllers;  // e.g. {"cpu", "cpuacct"} when co-mounted
};

struct Layout {
  Version version = Version::kNone;
  std::vector<Hierarchy> hierarchies;
};

// First 12 hex digits of a stable hash of the runtime's state dir.
std::string instance_name(const fs::path& state_dir);

// Finds the hierarchies and creates this instance's base dirs; where that is
// impossible returns kNone and says why in `warnings`.
Layout detect(const std::string& instance, std::vector<std::string>* warnings);

// The sandbox's dir in every hierarchy.
std::vector<fs::path> dirs(const Layout& layout, const std::string& id);

// On v1 the memory limit sits on a child group, <memory>/<id>/work, that
// holds every process of the sandbox but its init: the OOM killer looks only
// inside the group whose limit was hit, so it never picks init, however high
// sandbox root sets init's oom_score_adj (which it may: it owns init). This
// is that group's cgroup.procs, or "" where there is none (v2, where a group
// with a process cannot have children with controllers; no cgroups).
fs::path workload_procs(const Layout& layout, const std::string& id);

// A group of its own for each command the API starts (v1: under the
// sandbox's pids group), which the command and everything it spawns join
// before exec. Its pids limit leaves kCommandHeadroom of the sandbox's, so
// however many processes one command makes, a new command can still start;
// and a kill reaches what it spawned, escaped, daemonized or not.
inline constexpr uint64_t kCommandHeadroom = 16;
struct CommandGroup {
  fs::path dir;    // empty: no command groups here (v2, no pids controller)
  UniqueFd procs;  // its cgroup.procs, for the child to write itself into
};
// Made under a name of its own (`unique`) until the command's pid is known.
Result<CommandGroup> open_command_group(const Layout& layout, const std::string& id,
                                        const Limits& limits, uint64_t unique);
// Renames the group to the one name kill_command_group finds: cmd-<pid>.
Status name_command_group(const CommandGroup& group, int pid, uint64_t unique);
// Removes a group no process joined (the spawn failed).
void discard_command_group(const CommandGroup& group);
// SIGKILLs every process in the group of the command whose pid (in the
// sandbox) is `pid`, until none is left, and removes the group. Nothing
// to do when there is none.
Status kill_command_group(const Layout& layout, const std::string& id, int pid);
// The host pids in each named command group, by the command's pid.
std::map<int, std::vector<pid_t>> command_members(const Layout& layout, const std::string& id);
// Removes the groups of commands whose processes have all ended.
void remove_ended_command_groups(const Layout& layout, const std::string& id);

Status create(const Layout& layout, const std::string& id, const Limits& limits);
Status attach(const Layout& layout, const std::string& id, pid_t pid);
Sandbox::Usage usage(const Layout& layout, const std::string& id);
// How many processes the kernel's OOM killer has killed in the sandbox's
// memory cgroup (0 without one).
uint64_t oom_kills(const Layout& layout, const std::string& id);
// Freezes every process of the sandbox where it stands (the cgroup freezer:
// nothing inside can notice or undo it) or thaws them, and waits until the
// kernel says it is done. ENOTSUP where there is no freezer (v1 without its
// hierarchy, or a sandbox made before the daemon used it).
Status set_frozen(const Layout& layout, const std::string& id, bool frozen);
// A sandbox waiting in the warm pool (warming up an interpreter, say) gets a
// tenth of the default CPU weight; taken, it gets the default again.
// Nothing to do without a cpu controller.
Status set_background(const Layout& layout, const std::string& id, bool background);
// SIGKILLs every process left in the sandbox's groups (thawed first), then removes them.
Status remove(const Layout& layout, const std::string& id);
// Removes this instance's base dirs if no sandbox group is left in them.
void release(const Layout& layout);

// Removes the base dirs other instances left behind (a daemon that was
// killed never released its own) when they hold no sandbox group and no
// process; returns the dirs removed. A base with a sandbox group is left
// alone: its sandbox may be live and adopted by that instance's next
// daemon. An empty base may belong to a daemon running now: removing it is
// harmless, as create() makes it again.
std::vector<fs::path> remove_other_empty_instances(const Layout& layout);

// Ids of every sandbox group of this instance.
std::vector<std::string> list(const Layout& layout);

}  // namespace abx::runtime::cgroup
