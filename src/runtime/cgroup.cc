#include "runtime/cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/fd_io.h"

namespace abx::runtime::cgroup {
namespace {

constexpr const char* kRoot = "/sys/fs/cgroup";
constexpr uint64_t kCpuPeriodUs = 100000;

// One limit file: which version and controller own it, and its value.
struct LimitFile {
  Version version;
  const char* controller;
  const char* file;
  std::string (*value)(const Limits&);
  bool optional;  // absent without swap accounting, for example
  bool workload;  // on the workload group (see workload_procs), not the sandbox's
};

std::string memory(const Limits& l) { return std::to_string(l.memory_bytes); }
// Init's share of the sandbox's limit on v1: the sandbox as a whole (which is
// what lxcfs shows as MemTotal, read from init's group) stays within the
// limit, and the workload group fills first, so an OOM never reaches init.
std::string workload_memory(const Limits& l) {
  const uint64_t reserve = std::min<uint64_t>(16ull << 20, l.memory_bytes / 8);
  return std::to_string(l.memory_bytes - reserve);
}
std::string pids(const Limits& l) { return std::to_string(l.pids); }
std::string cpu_period(const Limits&) { return std::to_string(kCpuPeriodUs); }
std::string cpu_quota(const Limits& l) {
  return std::to_string(uint64_t{l.cpu_millicores} * kCpuPeriodUs / 1000);
}
std::string cpu_max(const Limits& l) { return cpu_quota(l) + " " + cpu_period(l); }
std::string zero(const Limits&) { return "0"; }

// Order matters on v1: memsw may not go below memory.limit_in_bytes.
constexpr LimitFile kLimitFiles[] = {
    {Version::kV1, "memory", "memory.limit_in_bytes", memory, false, false},
    {Version::kV1, "memory", "memory.memsw.limit_in_bytes", memory, true, false},
    {Version::kV1, "memory", "memory.limit_in_bytes", workload_memory, false, true},
    {Version::kV1, "memory", "memory.memsw.limit_in_bytes", workload_memory, true, true},
    {Version::kV1, "pids", "pids.max", pids, false, false},
    {Version::kV1, "cpu", "cpu.cfs_period_us", cpu_period, false, false},
    {Version::kV1, "cpu", "cpu.cfs_quota_us", cpu_quota, false, false},
    {Version::kV2, "memory", "memory.max", memory, false, false},
    {Version::kV2, "memory", "memory.swap.max", zero, true, false},
    {Version::kV2, "pids", "pids.max", pids, false, false},
    {Version::kV2, "cpu", "cpu.max", cpu_max, false, false},
};

constexpr const char* kWorkload = "work";

constexpr const char* kV1Controllers[] = {"memory", "pids", "cpu", "cpuacct", "cpuset", "freezer"};
constexpr const char* kV2Controllers[] = {"memory", "pids", "cpu", "cpuset"};

Status write_file(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Error::from_errno("cgroup open " + path.filename().string(), path.string());
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return Error{"cgroup write " + path.filename().string(), saved, path.string() + "=" + text};
  return {};
}

// The file's text, or "" when it cannot be read (close-on-exec, unlike an ifstream).
std::string read_text(const fs::path& path) {
  auto text = read_file(path);
  return text ? std::move(*text) : std::string();
}

bool owns(const Hierarchy& h, const std::string& controller) {
  return std::find(h.controllers.begin(), h.controllers.end(), controller) != h.controllers.end();
}

const Hierarchy* owning(const Layout& layout, const std::string& controller) {
  for (const auto& h : layout.hierarchies)
    if (owns(h, controller)) return &h;
  return nullptr;
}

std::vector<Hierarchy> v1_hierarchies() {
  std::vector<Hierarchy> out;
  std::vector<fs::path> mounts;
  for (const char* controller : kV1Controllers) {
    std::error_code ec;
    const fs::path mount = fs::canonical(fs::path(kRoot) / controller, ec);
    if (ec) continue;
    auto it = std::find(mounts.begin(), mounts.end(), mount);
    if (it == mounts.end()) {
      mounts.push_back(mount);
      out.push_back({mount, {controller}});
    } else {
      out[static_cast<size_t>(it - mounts.begin())].controllers.push_back(controller);
    }
  }
  return out;
}

// v2 needs the controllers enabled in every ancestor's subtree_control.
Status enable_v2_controllers(const std::string& available, const std::vector<fs::path>& ancestors) {
  std::string request;
  for (const char* c : kV2Controllers)
    if (available.find(c) != std::string::npos)
      request += std::string(request.empty() ? "+" : " +") + c;
  for (const auto& dir : ancestors)
    if (auto s = write_file(dir / "cgroup.subtree_control", request); !s) return s;
  return {};
}

std::set<pid_t> members(const fs::path& dir) {
  std::istringstream procs(read_text(dir / "cgroup.procs"));
  std::set<pid_t> out;
  pid_t pid;
  while (procs >> pid) out.insert(pid);
  return out;
}

// SIGKILLs the group's processes through pidfds opened before the group is
// read again: a pid that left it in between (exited, and was reused by a
// host process) is never signalled. A batch at a time, so that a group of
// thousands does not take as many of the daemon's descriptors at once.
void kill_members(const fs::path& dir) {
  constexpr size_t kBatch = 256;
  const std::set<pid_t> listed = members(dir);
  std::vector<std::pair<pid_t, UniqueFd>> opened;
  for (auto next = listed.begin(); next != listed.end();) {
    opened.clear();
    for (; next != listed.end() && opened.size() < kBatch; ++next)
      if (UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, *next, 0))); fd.valid())
        opened.emplace_back(*next, std::move(fd));
    const std::set<pid_t> still = members(dir);
    for (const auto& [pid, fd] : opened)
      if (still.contains(pid))
        (void)::syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
  }
}

bool has_members(const fs::path& dir) { return !read_text(dir / "cgroup.procs").empty(); }

// rmdir fails with EBUSY until the kernel has finished tearing the tasks down.
Status remove_dir(const fs::path& dir) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return {};
    if (errno != EBUSY) return Error::from_errno("cgroup rmdir", dir.string());
    kill_members(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Error{"cgroup rmdir", EBUSY, dir.string()};
}

// A v1 cpuset group starts with no CPUs and no memory nodes, and takes no
// process until it has both: give it its parent's.
Status inherit_cpuset(const fs::path& dir) {
  for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
    if (read_text(dir / file).find_first_not_of(" \n") != std::string::npos) continue;
    if (auto s = write_file(dir / file, read_text(dir.parent_path() / file)); !s) return s;
  }
  return {};
}

// "0-3,8,10-11" → {0, 1, 2, 3, 8, 10, 11}.
std::vector<unsigned> cpu_list(const std::string& text) {
  std::vector<unsigned> cpus;
  std::istringstream ranges(text);
  for (std::string range; std::getline(ranges, range, ',');) {
    unsigned first = 0, last = 0;
    const int n = std::sscanf(range.c_str(), "%u-%u", &first, &last);
    if (n < 1) continue;
    if (n == 1) last = first;
    for (unsigned cpu = first; cpu <= last && cpus.size() < 4096; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

// The CPUs a sandbox runs on: as many as its CPU limit rounds up to, so
// `nproc`, os.cpu_count() and /proc/cpuinfo (through lxcfs) tell a program
// what it may use. Sandboxes are spread by a hash of their id.
std::string sandbox_cpus(const std::string& available, const std::string& id, uint32_t millicores) {
  const std::vector<unsigned> cpus = cpu_list(available);
  if (cpus.empty()) return {};
  const size_t want = std::clamp<size_t>((millicores + 999) / 1000, 1, cpus.size());
  size_t start = 0;
  for (const char c : id) start = start * 31 + static_cast<unsigned char>(c);
  std::string out;
  for (size_t i = 0; i < want; ++i)
    out += (out.empty() ? "" : ",") + std::to_string(cpus[(start + i) % cpus.size()]);
  return out;
}

}  // namespace

std::string instance_name(const fs::path& state_dir) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a: stable across builds, unlike std::hash
  for (const char c : state_dir.lexically_normal().string()) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return std::string(hex, 12);
}

// As root the tree's root; rootless, the parent of our own cgroup, which is
// what systemd delegates to a user's service.
fs::path v2_parent() {
  if (::geteuid() == 0) return kRoot;
  std::istringstream lines(read_text("/proc/self/cgroup"));
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("0::", 0) == 0)
      return fs::path(kRoot) / fs::path(line.substr(3)).relative_path().parent_path();
  return kRoot;
}

Layout detect(const std::string& instance, std::vector<std::string>* warnings) {
  Layout layout;
  const std::string controllers = read_text(fs::path(kRoot) / "cgroup.controllers");
  const fs::path parent = v2_parent();
  if (!controllers.empty()) {
    layout.version = Version::kV2;
    layout.hierarchies.push_back({parent / "abx" / instance, {"memory", "pids", "cpu", "cpuset"}});
    for (const char* c : kV2Controllers)
      if (controllers.find(c) == std::string::npos)
        warnings->push_back(std::string("cgroup v2 controller missing: ") + c +
                            (c == std::string("cpuset") ? " (sandboxes see every host CPU)" : ""));
  } else {
    layout.version = Version::kV1;
    for (auto& h : v1_hierarchies()) {
      h.base = h.base / "abx" / instance;
      layout.hierarchies.push_back(h);
    }
    if (owning(layout, "cpuset") == nullptr)
      warnings->push_back("cgroup v1 cpuset controller not mounted: sandboxes see every host CPU");
  }
  Status made;
  for (const auto& h : layout.hierarchies) {
    std::error_code ec;
    fs::create_directories(h.base, ec);
    if (ec && made) made = Error{"cgroup mkdir", ec.value(), h.base.string()};
    if (made && layout.version == Version::kV1 && owns(h, "cpuset")) {
      made = inherit_cpuset(h.base.parent_path());
      if (made) made = inherit_cpuset(h.base);
    }
  }
  if (made && layout.version == Version::kV2)
    made = enable_v2_controllers(controllers, {parent, parent / "abx", parent / "abx" / instance});
  if (!made || layout.hierarchies.empty()) {
    warnings->push_back("cgroup limits unavailable (memory, pids, cpu are not enforced): " +
                        (made ? std::string("no cgroup hierarchy found") : made.error().message()));
    return Layout{};
  }
  return layout;
}

std::vector<fs::path> dirs(const Layout& layout, const std::string& id) {
  std::vector<fs::path> out;
  for (const auto& h : layout.hierarchies) out.push_back(h.base / id);
  return out;
}

namespace {

// The workload group's dir, or "" (see workload_procs).
fs::path workload_dir(const Layout& layout, const std::string& id) {
  const Hierarchy* h = layout.version == Version::kV1 ? owning(layout, "memory") : nullptr;
  return h ? h->base / id / kWorkload : fs::path();
}

}  // namespace

fs::path workload_procs(const Layout& layout, const std::string& id) {
  const fs::path dir = workload_dir(layout, id);
  return dir.empty() ? dir : dir / "cgroup.procs";
}

namespace {

constexpr std::string_view kCommandPrefix = "cmd-";

// Where command groups go: the sandbox's pids group on v1. On v2 a group
// with a process (init) cannot have children with controllers.
fs::path commands_dir(const Layout& layout, const std::string& id) {
  const Hierarchy* h = layout.version == Version::kV1 ? owning(layout, "pids") : nullptr;
  return h ? h->base / id : fs::path();
}

std::vector<fs::path> command_groups(const Layout& layout, const std::string& id) {
  std::vector<fs::path> out;
  const fs::path dir = commands_dir(layout, id);
  if (dir.empty()) return out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().starts_with(kCommandPrefix) && entry.is_directory(ec))
      out.push_back(entry.path());
  return out;
}

// The command's share of the sandbox's pids: all but the headroom, or half
// of a limit too small for it.
uint64_t command_pids(uint64_t sandbox_pids) {
  return sandbox_pids - std::min(kCommandHeadroom, sandbox_pids / 2);
}

fs::path command_group_path(const fs::path& parent, int pid) {
  return parent / (std::string(kCommandPrefix) + std::to_string(pid));
}

// Kills what is in `dir` until it is empty (a process may be forking while
// its group is read), then removes it.
Status empty_and_remove(const fs::path& dir) {
  for (int round = 0; round < 100 && has_members(dir); ++round) {
    kill_members(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return remove_dir(dir);
}

}  // namespace

Result<CommandGroup> open_command_group(const Layout& layout, const std::string& id,
                                        const Limits& limits, uint64_t unique) {
  const fs::path parent = commands_dir(layout, id);
  if (parent.empty()) return CommandGroup{};
  CommandGroup group;
  group.dir = parent / (std::string(kCommandPrefix) + "new-" + std::to_string(unique));
  // EEXIST: a daemon killed mid-spawn left this name (a new one has it by chance).
  if (::mkdir(group.dir.c_str(), 0755) != 0 && (errno != EEXIST || has_members(group.dir)))
    return Error::from_errno("cgroup mkdir", group.dir.string());
  Status made;
  if (limits.pids > 0)
    made = write_file(group.dir / "pids.max", std::to_string(command_pids(limits.pids)));
  if (made) {
    group.procs = UniqueFd(::open((group.dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!group.procs.valid()) made = Error::from_errno("cgroup open", group.dir.string());
  }
  if (!made) {
    ::rmdir(group.dir.c_str());
    return made.error();
  }
  return group;
}

Status name_command_group(const CommandGroup& group, int pid, uint64_t unique) {
  if (group.dir.empty()) return {};
  const fs::path named = command_group_path(group.dir.parent_path(), pid);
  // The pid may be reused: an earlier command's group under that name holds
  // what it left running (or nothing). It keeps living under another name.
  if (::rmdir(named.c_str()) != 0 && errno == EBUSY)
    (void)::rename(named.c_str(), (named.string() + "-" + std::to_string(unique)).c_str());
  if (::rename(group.dir.c_str(), named.c_str()) != 0)
    return Error::from_errno("cgroup rename", named.string());
  return {};
}

void discard_command_group(const CommandGroup& group) {
  if (!group.dir.empty()) (void)empty_and_remove(group.dir);
}

Status kill_command_group(const Layout& layout, const std::string& id, int pid) {
  const fs::path parent = commands_dir(layout, id);
  if (parent.empty()) return {};
  const fs::path dir = command_group_path(parent, pid);
  if (::access(dir.c_str(), F_OK) != 0) return {};
  // No fork in the group succeeds from now on: a fork bomb stops growing
  // while it is killed.
  (void)write_file(dir / "pids.max", "0");
  return empty_and_remove(dir);
}

std::map<int, std::vector<pid_t>> command_members(const Layout& layout, const std::string& id) {
  std::map<int, std::vector<pid_t>> out;
  for (const auto& dir : command_groups(layout, id)) {
    const std::string suffix = dir.filename().string().substr(kCommandPrefix.size());
    // cmd-<pid> only: not a spawn's group under way, nor one moved aside.
    if (suffix.empty() || suffix.find_first_not_of("0123456789") != std::string::npos ||
        suffix.size() > 9)
      continue;
    const std::set<pid_t> pids = members(dir);
    if (!pids.empty()) out[std::stoi(suffix)] = {pids.begin(), pids.end()};
  }
  return out;
}

void remove_ended_command_groups(const Layout& layout, const std::string& id) {
  // Not the groups of spawns under way: no process has joined them yet.
  const std::string unnamed = std::string(kCommandPrefix) + "new-";
  for (const auto& dir : command_groups(layout, id))
    if (!dir.filename().string().starts_with(unnamed)) ::rmdir(dir.c_str());  // EBUSY: running
}

namespace {

// Makes this instance's base dir again when it is gone (released by
// another runtime object, or removed as empty by another daemon's
// remove_other_empty_instances); on v2 a new base needs its controllers.
Status ensure_base(const Layout& layout, const Hierarchy& hierarchy) {
  if (::mkdir(hierarchy.base.c_str(), 0755) != 0) {
    if (errno == EEXIST) return {};
    return Error::from_errno("cgroup mkdir", hierarchy.base.string());
  }
  if (layout.version == Version::kV1 && owns(hierarchy, "cpuset"))
    return inherit_cpuset(hierarchy.base);
  if (layout.version != Version::kV2) return {};
  return enable_v2_controllers(read_text(fs::path(kRoot) / "cgroup.controllers"), {hierarchy.base});
}

Status make_dirs(const Layout& layout, const std::vector<fs::path>& all) {
  for (const auto& h : layout.hierarchies)
    if (auto s = ensure_base(layout, h); !s) return s;
  for (const auto& dir : all) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Error{"cgroup mkdir", ec.value(), dir.string()};
  }
  return {};
}

// Pins the sandbox to the CPUs its limit allows (sandbox_cpus); where there
// is no cpuset controller it runs on every CPU, as before.
Status pin_cpus(const Layout& layout, const std::string& id, const Limits& limits) {
  const Hierarchy* h = owning(layout, "cpuset");
  if (h == nullptr) return {};
  const fs::path dir = h->base / id;
  if (layout.version == Version::kV1) {
    if (auto s = inherit_cpuset(dir); !s) return s;
  } else if (::access((dir / "cpuset.cpus").c_str(), F_OK) != 0) {
    return {};  // not delegated to us
  }
  const char* effective =
      layout.version == Version::kV1 ? "cpuset.effective_cpus" : "cpuset.cpus.effective";
  const std::string cpus = sandbox_cpus(read_text(h->base / effective), id, limits.cpu_millicores);
  if (cpus.empty()) return {};
  return write_file(dir / "cpuset.cpus", cpus);
}

}  // namespace

Status create(const Layout& layout, const std::string& id, const Limits& limits) {
  std::vector<fs::path> all = dirs(layout, id);
  if (const fs::path workload = workload_dir(layout, id); !workload.empty())
    all.push_back(workload);
  // Another daemon may remove the base as empty between ensure_base and
  // the sandbox's mkdir (ENOENT); once the sandbox's dir is in it, it stays.
  Status made = make_dirs(layout, all);
  for (int attempt = 0; attempt < 3 && !made && made.error().errnum == ENOENT; ++attempt)
    made = make_dirs(layout, all);
  if (!made) return made;
  for (const auto& limit : kLimitFiles) {
    const Hierarchy* h = owning(layout, limit.controller);
    if (limit.version != layout.version || h == nullptr) continue;
    const fs::path file = (limit.workload ? workload_dir(layout, id) : h->base / id) / limit.file;
    if (limit.optional && ::access(file.c_str(), F_OK) != 0) continue;
    if (auto s = write_file(file, limit.value(limits)); !s) return s;
  }
  return pin_cpus(layout, id, limits);
}

Status attach(const Layout& layout, const std::string& id, pid_t pid) {
  for (const auto& dir : dirs(layout, id))
    if (auto s = write_file(dir / "cgroup.procs", std::to_string(pid)); !s) return s;
  return {};
}

Sandbox::Usage usage(const Layout& layout, const std::string& id) {
  Sandbox::Usage u;
  auto number = [](const std::string& text) { return std::strtoull(text.c_str(), nullptr, 10); };
  if (layout.version == Version::kV1) {
    if (const Hierarchy* h = owning(layout, "memory"))
      u.memory_bytes = number(read_text(h->base / id / "memory.usage_in_bytes"));
    if (const Hierarchy* h = owning(layout, "cpuacct"))
      u.cpu_usage_ns = number(read_text(h->base / id / "cpuacct.usage"));
  } else if (layout.version == Version::kV2) {
    const fs::path dir = layout.hierarchies.front().base / id;
    u.memory_bytes = number(read_text(dir / "memory.current"));
    const std::string stat = read_text(dir / "cpu.stat");
    const auto at = stat.find("usage_usec ");
    if (at != std::string::npos) u.cpu_usage_ns = number(stat.substr(at + 11)) * 1000;
  }
  return u;
}

uint64_t oom_kills(const Layout& layout, const std::string& id) {
  // v1 memory.oom_control and v2 memory.events both carry an "oom_kill N" line.
  fs::path file;
  if (layout.version == Version::kV1) {
    if (const fs::path dir = workload_dir(layout, id); !dir.empty())
      file = dir / "memory.oom_control";
  } else if (layout.version == Version::kV2) {
    file = layout.hierarchies.front().base / id / "memory.events";
  }
  if (file.empty()) return 0;
  std::istringstream lines(read_text(file));
  std::string key;
  uint64_t value = 0;
  while (lines >> key >> value)
    if (key == "oom_kill") return value;
  return 0;
}

namespace {

// The freezer's control file and what it holds when frozen or thawed.
struct FreezerFile {
  fs::path path;  // empty: no freezer
  const char* frozen = nullptr;
  const char* thawed = nullptr;
};

FreezerFile freezer_file(const Layout& layout, const std::string& id) {
  if (layout.version == Version::kV2)
    return {layout.hierarchies.front().base / id / "cgroup.freeze", "1", "0"};
  if (const Hierarchy* h = owning(layout, "freezer"); h && layout.version == Version::kV1)
    return {h->base / id / "freezer.state", "FROZEN", "THAWED"};
  return {};
}

// Whether the kernel has finished freezing (v1 says FREEZING until then).
bool is_frozen(const Layout& layout, const std::string& id, const FreezerFile& file) {
  if (layout.version == Version::kV1) return read_text(file.path).rfind("FROZEN", 0) == 0;
  const std::string events = read_text(layout.hierarchies.front().base / id / "cgroup.events");
  return events.find("frozen 1") != std::string::npos;
}

constexpr int kFreezeChecks = 1000;  // 2 ms apart: a tree that will not freeze in 2 s fails

}  // namespace

Status set_frozen(const Layout& layout, const std::string& id, bool frozen) {
  const FreezerFile file = freezer_file(layout, id);
  if (file.path.empty() || ::access(file.path.c_str(), F_OK) != 0)
    return Error{"freeze", ENOTSUP, "sandbox " + id + " has no cgroup freezer"};
  if (auto s = write_file(file.path, frozen ? file.frozen : file.thawed); !s) return s;
  for (int check = 0; check < kFreezeChecks; ++check) {
    if (is_frozen(layout, id, file) == frozen) return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (frozen) (void)write_file(file.path, file.thawed);  // half-frozen helps no one
  return Error{frozen ? "freeze" : "thaw", ETIMEDOUT, "sandbox " + id};
}

Status set_background(const Layout& layout, const std::string& id, bool background) {
  const Hierarchy* cpu = owning(layout, "cpu");
  if (cpu == nullptr) return {};
  // A tenth of the default, in each version's units: not the kernel's lowest,
  // which busy sandboxes of any team could starve the pool's warm-ups with.
  if (layout.version == Version::kV1)
    return write_file(cpu->base / id / "cpu.shares", background ? "102" : "1024");
  return write_file(cpu->base / id / "cpu.weight", background ? "10" : "100");
}

Status remove(const Layout& layout, const std::string& id) {
  // A frozen process takes a SIGKILL only once thawed (v1).
  if (const FreezerFile file = freezer_file(layout, id);
      !file.path.empty() && read_text(file.path).rfind(file.thawed, 0) != 0)
    (void)write_file(file.path, file.thawed);
  std::vector<fs::path> all = dirs(layout, id);
  // Children first: a group with a child cannot be removed.
  if (const fs::path workload = workload_dir(layout, id); !workload.empty())
    all.insert(all.begin(), workload);
  for (const auto& command : command_groups(layout, id)) all.insert(all.begin(), command);
  for (const auto& dir : all) {
    if (layout.version == Version::kV2 && ::access((dir / "cgroup.kill").c_str(), F_OK) == 0)
      (void)write_file(dir / "cgroup.kill", "1");
    for (int round = 0; round < 50 && has_members(dir); ++round) {
      kill_members(dir);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  Status result;
  for (const auto& dir : all)
    if (auto s = remove_dir(dir); !s && result) result = s;
  return result;
}

void release(const Layout& layout) {
  for (const auto& h : layout.hierarchies) ::rmdir(h.base.c_str());  // EBUSY while groups live
}

namespace {

// What instance_name makes: 12 lower-case hex digits.
bool is_instance_name(const std::string& name) {
  return name.size() == 12 && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool has_subgroups(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory(ec)) return true;
  return ec.value() != 0;  // unreadable: keep it
}

}  // namespace

std::vector<fs::path> remove_other_empty_instances(const Layout& layout) {
  std::vector<fs::path> removed;
  for (const auto& h : layout.hierarchies) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(h.base.parent_path(), ec)) {
      const fs::path dir = entry.path();
      if (dir == h.base || !is_instance_name(dir.filename().string())) continue;
      if (!entry.is_directory(ec) || has_subgroups(dir) || has_members(dir)) continue;
      // Fails (EBUSY) if a sandbox group or a process came meanwhile.
      if (::rmdir(dir.c_str()) == 0) removed.push_back(dir);
    }
  }
  return removed;
}

std::vector<std::string> list(const Layout& layout) {
  std::set<std::string> ids;
  for (const auto& h : layout.hierarchies) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(h.base, ec))
      if (entry.is_directory()) ids.insert(entry.path().filename().string());
  }
  return {ids.begin(), ids.end()};
}

}  // namespace abx::runtime::cgroup
