#include "templates/sandboxfile_build.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <thread>

#include "common/fd_io.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "runtime/sandbox_fs.h"
#include "runtime/sandbox_users.h"
#include "templates/build_context.h"
#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;
using sandboxfile::Kind;
using sandboxfile::Step;

constexpr size_t kTailLines = 15;
constexpr size_t kMaxLayers = 120;  // overlay's mount options must fit in a page
constexpr uint64_t kGiB = 1ull << 30;
constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// What the steps so far have made.
struct BuildState {
  TemplateMeta meta;  // layers (topmost first), env, workdir, user
  std::string key;    // hash of FROM and every step since
  size_t step = 0;    // 1-based number of the step being run
  size_t steps = 0;
};

void chain(BuildState& state, const std::string& text) {
  state.key = sha256_hex(state.key + "\n" + text);
}

std::string layer_id(const BuildState& state) { return "s-" + state.key.substr(0, 40); }

std::string step_title(const BuildState& state, const Step& step) {
  return "step " + std::to_string(state.step) + "/" + std::to_string(state.steps) + ": " +
         step.text;
}

std::string absolute_in(const std::string& dir, const std::string& path) {
  if (path.starts_with('/')) return path;
  return (dir.empty() || dir == "/" ? "/" : dir + "/") + path;
}

// Builds are trusted more than sandboxes (they are the user's own recipe),
// and apt or pip need room: more memory, pids and CPU than the defaults.
runtime::Limits build_limits() {
  runtime::Limits limits;
  limits.memory_bytes = 4 * kGiB;
  limits.pids = 4096;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  limits.cpu_millicores = cpus * 1000;
  return limits;
}

runtime::SandboxSpec build_sandbox_spec(const BuildState& state, const StepDeps& deps,
                                        const fs::path& writable, bool network) {
  runtime::SandboxSpec spec;
  spec.id = "build" + ids::random_hex(8);
  spec.hostname = "build";
  for (const auto& layer : state.meta.layers)
    spec.rootfs.lower_layers.push_back(deps.layers.path(layer));
  spec.rootfs.writable_dir = writable;
  // As in the sandboxes of the template built FROM: `USER user` then `RUN sudo ...` works.
  spec.rootfs.allow_setid = state.meta.allow_setid;
  spec.network = network;
  spec.limits = build_limits();
  return spec;
}

using SandboxWork = std::function<Status(runtime::Sandbox&)>;

// Runs `work` in a build sandbox stacked on the current layers and keeps
// what it changed as layer `id`.
Status in_build_sandbox(const BuildState& state, const StepDeps& deps, const std::string& id,
                        bool network, const SandboxWork& work) {
  if (state.meta.layers.size() >= kMaxLayers)
    return Error{"template build", E2BIG,
                 "more than " + std::to_string(kMaxLayers) + " layers; join RUN steps with &&"};
  auto staging = deps.layers.begin(id);
  if (!staging) return staging.error();
  const fs::path upper = *staging / "upper", work_dir = *staging / "work";
  auto prepared = [&]() -> Status {
    for (const auto& dir : {upper, work_dir}) {
      if (auto st = tree::make_dir(dir, 0755); !st) return st;
      if (auto st = tree::chown_tree(dir, deps.runtime.host_uid(0), deps.runtime.host_gid(0)); !st)
        return st;
    }
    return {};
  }();
  if (!prepared) return prepared;
  auto sandbox = deps.runtime.create(build_sandbox_spec(state, deps, *staging, network));
  if (!sandbox) {
    (void)tree::remove_tree(*staging);
    return sandbox.error();
  }
  // A recipe is the user's own: everything but the always-denied set (the
  // host, sandboxes, private ranges). No sandbox network: loopback only.
  if (network)
    if (Status s = (*sandbox)->set_egress(egress::Policy{}); !s && s.error().errnum != ENOSYS) {
      (void)deps.runtime.destroy((*sandbox)->record());
      (void)tree::remove_tree(*staging);
      return s;
    }
  const Status done = work(**sandbox);
  const Status destroyed = deps.runtime.destroy((*sandbox)->record());
  if (!done || !destroyed) {
    (void)tree::remove_tree(*staging);
    return done ? destroyed : done;
  }
  return deps.layers.commit(id, upper, *staging);
}

// Output lines of a RUN step, kept whole across reads; the last few are
// kept for the error message of a failing step.
class OutputLines {
 public:
  explicit OutputLines(const StepDeps& deps) : deps_(deps) {}
  void add(const char* data, size_t size) {
    pending_.append(data, size);
    for (size_t end; (end = pending_.find('\n')) != std::string::npos;) {
      emit(pending_.substr(0, end));
      pending_.erase(0, end + 1);
    }
  }
  void finish() {
    if (!pending_.empty()) emit(pending_);
    pending_.clear();
  }
  bool mentions(const std::string& text) const {
    return std::any_of(tail_.begin(), tail_.end(), [&](const std::string& line) {
      return line.find(text) != std::string::npos;
    });
  }
  std::string tail() const {
    std::string text;
    for (const auto& line : tail_) text += "\n  | " + line;
    return text;
  }

 private:
  void emit(const std::string& line) {
    deps_.progress("  | " + line);
    tail_.push_back(line);
    if (tail_.size() > kTailLines) tail_.pop_front();
  }
  const StepDeps& deps_;
  std::string pending_;
  std::deque<std::string> tail_;
};

// Copies the process's stdout and stderr to `lines` until both close, then
// reads its wait status. ETIMEDOUT past `deadline` (the caller's destroy of
// the build sandbox ends the step).
Result<int> collect(runtime::Process& process, OutputLines& lines,
                    std::chrono::steady_clock::time_point deadline) {
  pollfd fds[2] = {{process.stdout_fd.get(), POLLIN, 0}, {process.stderr_fd.get(), POLLIN, 0}};
  int open = 2;
  char buffer[1 << 14];
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Error{"build step", ETIMEDOUT, {}};
    const int wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 60'000));
    if (::poll(fds, 2, wait_ms) < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("poll build output");
    }
    for (auto& p : fds) {
      if (p.fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(p.fd, buffer, sizeof buffer);
      if (n > 0) {
        lines.add(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        p.fd = -1;
        --open;
      }
    }
  }
  lines.finish();
  int32_t status = 0;
  if (::read(process.exit_fd.get(), &status, sizeof status) != sizeof status)
    return Error{"build step", ECHILD, "the build sandbox died"};
  return status;
}

std::map<std::string, std::string> run_env(const BuildState& state, const Step& step,
                                           const runtime::SandboxUserIds& user) {
  std::map<std::string, std::string> env = {
      {"PATH", kDefaultPath}, {"HOME", user.home}, {"LANG", "C.UTF-8"}};
  for (const auto& [key, value] : step.env) env[key] = value;        // build args
  for (const auto& [key, value] : state.meta.env) env[key] = value;  // ENV wins over ARG
  return env;
}

std::string user_or_root(const BuildState& state) {
  return state.meta.user.empty() ? "root" : state.meta.user;
}

Status run_command(runtime::Sandbox& sb, const BuildState& state, const Step& step,
                   const StepDeps& deps) {
  auto user = runtime::lookup_user(sb, user_or_root(state));
  if (!user) return user.error();
  runtime::ProcessSpec spec;
  spec.argv = step.args;
  spec.env = run_env(state, step, *user);
  spec.cwd = state.meta.workdir.empty() ? "/" : state.meta.workdir;
  spec.uid = user->uid;
  spec.gid = user->gid;
  spec.stdin_pipe = false;
  auto process = sb.spawn(spec);
  if (!process) return process.error();
  OutputLines lines(deps);
  auto status = collect(*process, lines, std::chrono::steady_clock::now() + deps.step_timeout);
  if (!status && status.error().errnum == ETIMEDOUT)
    return Error{"Sandboxfile line " + std::to_string(step.line), ETIMEDOUT,
                 step.text + " ran longer than " + std::to_string(deps.step_timeout.count()) +
                     " s and was stopped; raise the limit with --step-timeout SECONDS; last "
                     "lines:" +
                     lines.tail()};
  if (!status) return status.error();
  const runtime::ExitInfo exit = runtime::decode_wait_status(*status);
  if (exit.exit_code == 0) return {};
  // The step's writes land on the templates dir's filesystem: say so plainly.
  const bool full = lines.mentions("No space left on device");
  return Error{"Sandboxfile line " + std::to_string(step.line), full ? ENOSPC : 0,
               step.text + " failed with exit code " + std::to_string(exit.exit_code) + " (" +
                   exit.status + ")" +
                   (full ? "; out of disk space (ENOSPC) where the templates are stored" : "") +
                   "; last lines:" + lines.tail()};
}

Status copy_file(runtime::Sandbox& sb, const fs::path& from, const std::string& to, uint32_t uid) {
  UniqueFd in(::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in.valid()) return Error::from_errno("open", from.string());
  struct stat st {};
  if (::fstat(in.get(), &st) != 0) return Error::from_errno("stat", from.string());
  auto out = runtime::sandbox_fs::start_write(sb, to, uid, st.st_mode & 07777);
  if (!out) return out.error();
  const Status copied = read_to_end(
      in.get(), [&](std::string_view piece) { return out->write(piece); }, from.string());
  if (!copied) return copied;
  return out->finish();
}

Status make_dir_if_missing(runtime::Sandbox& sb, const std::string& path, uint32_t uid) {
  const Status made = runtime::sandbox_fs::make_dir(sb, path, uid);
  return made || made.error().errnum == EEXIST ? Status{} : made;
}

// Copies `from` (a file, symlink or dir of the context) to `to` in the sandbox.
Status copy_entry(runtime::Sandbox& sb, const fs::path& from, const std::string& to, uint32_t uid) {
  std::error_code ec;
  const auto status = fs::symlink_status(from, ec);
  if (fs::is_symlink(status)) {
    (void)runtime::sandbox_fs::remove(sb, to);
    return runtime::sandbox_fs::make_symlink(sb, to, fs::read_symlink(from).string(), uid);
  }
  if (fs::is_regular_file(status)) return copy_file(sb, from, to, uid);
  if (!fs::is_directory(status)) return {};  // fifos, sockets: nothing to copy
  if (auto st = make_dir_if_missing(sb, to, uid); !st) return st;
  for (fs::directory_iterator it(from, ec), end; !ec && it != end; it.increment(ec))
    if (auto st = copy_entry(sb, it->path(), to + "/" + it->path().filename().string(), uid); !st)
      return st;
  if (ec) return Error{"read build context", ec.value(), from.string()};
  return {};
}

// A symlink in the context is copied as a symlink, never unpacked: what it
// names may be a host file.
bool is_tar_archive(const fs::path& path) {
  static constexpr const char* kSuffixes[] = {".tar",    ".tar.gz",  ".tgz",
                                              ".tar.xz", ".tar.bz2", ".tar.zst"};
  const std::string name = path.filename().string();
  std::error_code ec;
  for (const char* suffix : kSuffixes)
    if (name.ends_with(suffix) && fs::is_regular_file(fs::symlink_status(path, ec))) return true;
  return false;
}

// ADD of a local tar archive unpacks it (as Docker does, whiteouts as plain
// files): into a private scratch dir first, then copied in like a directory.
Status add_archive(runtime::Sandbox& sb, const fs::path& archive, const std::string& to,
                   uint32_t uid, const fs::path& scratch) {
  const fs::path dir = scratch / "add";
  if (auto st = tree::remove_tree(dir); !st) return st;
  if (auto st = tree::make_dir(dir, 0755); !st) return st;
  const Status unpacked = build_context::extract(archive, dir, true);
  const Status copied =
      unpacked ? copy_entry(sb, dir, to, uid)
               : Error{"ADD " + archive.filename().string() + ": " + unpacked.error().step,
                       unpacked.error().errnum, unpacked.error().detail};
  (void)tree::remove_tree(dir);
  return copied;
}

struct CopyPlan {
  std::vector<fs::path> sources;
  std::string dest;
  bool into_dir = false;  // dest is a directory the sources go into
};

Result<CopyPlan> plan_copy(const BuildState& state, const Step& step, const StepDeps& deps) {
  CopyPlan plan;
  for (size_t i = 0; i + 1 < step.args.size(); ++i) {
    auto found = build_context::expand(deps.context_dir, step.args[i]);
    if (!found)
      return Error::with_message(
          "Sandboxfile line " + std::to_string(step.line) + ": " + found.error().message(),
          kErrBadInput);
    plan.sources.insert(plan.sources.end(), found->begin(), found->end());
  }
  const std::string& dest = step.args.back();
  plan.dest = absolute_in(state.meta.workdir, dest);
  plan.into_dir = dest.ends_with('/') || plan.sources.size() > 1;
  while (plan.dest.size() > 1 && plan.dest.ends_with('/')) plan.dest.pop_back();
  return plan;
}

bool is_sandbox_dir(runtime::Sandbox& sb, const std::string& path) {
  auto info = runtime::sandbox_fs::stat(sb, path);
  return info && info->type == runtime::sandbox_fs::FileType::kDirectory;
}

Status copy_into(runtime::Sandbox& sb, const CopyPlan& plan, const Step& step, uint32_t uid,
                 const StepDeps& deps) {
  const bool into_dir = plan.into_dir || is_sandbox_dir(sb, plan.dest);
  for (const auto& source : plan.sources) {
    std::error_code ec;
    const bool dir = fs::is_directory(fs::symlink_status(source, ec));
    const bool archive = step.add && is_tar_archive(source);
    std::string to = plan.dest;
    if (into_dir && !dir && !archive) to += "/" + source.filename().string();
    const Status copied = archive ? add_archive(sb, source, to, uid, deps.scratch_dir)
                                  : copy_entry(sb, source, to, uid);
    if (!copied) return copied;
  }
  return {};
}

Status copy_step(runtime::Sandbox& sb, const Step& step, const CopyPlan& plan,
                 const StepDeps& deps) {
  uint32_t uid = 0;
  if (!step.chown.empty()) {
    auto owner = runtime::lookup_user(sb, step.chown);
    if (!owner) return owner.error();
    uid = owner->uid;
  }
  return copy_into(sb, plan, step, uid, deps);
}

// Runs `work` for a step that makes a layer, unless its layer is cached.
Status layer_step(BuildState& state, const Step& step, const StepDeps& deps, bool network,
                  const SandboxWork& work) {
  const std::string id = layer_id(state);
  if (!deps.no_cache && deps.layers.has(id)) {
    deps.progress(step_title(state, step) + " (cached)");
  } else {
    deps.progress(step_title(state, step));
    if (auto st = in_build_sandbox(state, deps, id, network, work); !st) return st;
  }
  state.meta.layers.insert(state.meta.layers.begin(), id);
  return {};
}

Status run_step(BuildState& state, const Step& step, const StepDeps& deps) {
  switch (step.kind) {
    case Kind::kFrom:
      return Error{"Sandboxfile line " + std::to_string(step.line), EINVAL,
                   "a second FROM: multi-stage builds are not supported"};
    case Kind::kEnv:
      for (const auto& [key, value] : step.pairs) state.meta.env[key] = value;
      break;
    case Kind::kUser:
      state.meta.user = step.args.front();
      break;
    case Kind::kArg:
      break;  // its value reaches RUN steps through their env
    case Kind::kWorkdir: {
      state.meta.workdir = step.args.front();
      chain(state, step.text + "\n" + state.meta.workdir);
      return layer_step(state, step, deps, false, [&](runtime::Sandbox& sb) {
        return make_dir_if_missing(sb, state.meta.workdir, 0);
      });
    }
    case Kind::kRun: {
      std::string args_text;
      for (const auto& [key, value] : step.env) args_text += key + "=" + value + "\n";
      chain(state, step.text + "\n" + args_text);
      return layer_step(state, step, deps, deps.network,
                        [&](runtime::Sandbox& sb) { return run_command(sb, state, step, deps); });
    }
    case Kind::kCopy: {
      auto plan = plan_copy(state, step, deps);
      if (!plan) return plan.error();
      auto digest = build_context::digest(deps.context_dir, plan->sources);
      if (!digest) return digest.error();
      chain(state, step.text + "\n" + *digest);
      return layer_step(state, step, deps, false,
                        [&](runtime::Sandbox& sb) { return copy_step(sb, step, *plan, deps); });
    }
  }
  chain(state, step.text);
  deps.progress(step_title(state, step));
  return {};
}

}  // namespace

Result<TemplateMeta> run_steps(const sandboxfile::Sandboxfile& file, const TemplateMeta& from,
                               const StepDeps& deps) {
  BuildState state;
  state.meta.layers = from.layers;
  state.meta.env = from.env;
  state.meta.workdir = from.workdir;
  state.meta.user = from.user;
  state.meta.allow_setid = from.allow_setid;  // a template FROM base keeps base's sudo
  state.meta.start_cmd = from.start_cmd;
  state.meta.ready_cmd = from.ready_cmd;
  state.steps = file.steps.size();
  state.key = "FROM";
  for (const auto& layer : from.layers) chain(state, layer);
  const auto started = [&](size_t index) {
    if (deps.step_started) deps.step_started(index);
  };
  started(0);
  deps.progress("step 1/" + std::to_string(state.steps) + ": " + file.steps.front().text);
  for (size_t i = 1; i < file.steps.size(); ++i) {
    state.step = i + 1;
    started(i);
    if (auto st = run_step(state, file.steps[i], deps); !st) return st.error();
  }
  started(file.steps.size());
  // A new start command comes with its own check (or none): the old one may test another
  // service.
  if (file.start_cmd) {
    state.meta.start_cmd = *file.start_cmd;
    state.meta.ready_cmd.clear();
  }
  if (file.ready_cmd) state.meta.ready_cmd = *file.ready_cmd;
  return state.meta;
}

}  // namespace abx::templates
