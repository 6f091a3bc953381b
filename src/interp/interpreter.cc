// The Interpreter of one sandbox: its contexts by id, the default context of
// each language, and the checks that a language can run in this sandbox.
#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <set>

#include "common/ids.h"
#include "interp/context.h"
#include "interp/interp.h"
#include "interp/languages.h"
#include "interp/prestart.h"

namespace abx::interp {

namespace {

constexpr int kAvailabilityTimeoutMs = 5000;

bool is_variable_name(const std::string& name) {
  const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  return !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), word);
}

// The bash driver splices names into its script, so only plain names pass.
Status check_env_var_names(const std::map<std::string, std::string>& env_vars) {
  for (const auto& [name, value] : env_vars) {
    if (!is_variable_name(name)) {
      return Error{"execute env_vars", EINVAL,
                   fmt::format("'{}' is not a valid variable name (letters, digits, _)", name)};
    }
  }
  return {};
}

}  // namespace

// Runs `check` with /bin/sh in the sandbox; true if it exits 0.
bool sandbox_check_passes(runtime::Sandbox& sandbox, const std::string& check,
                          const std::map<std::string, std::string>& env) {
  runtime::ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", check};
  spec.env = env;
  spec.stdin_pipe = false;
  auto process = sandbox.spawn(spec);
  if (!process) return false;
  pollfd exited{process->exit_fd.get(), POLLIN, 0};
  int32_t status = -1;
  if (::poll(&exited, 1, kAvailabilityTimeoutMs) != 1 ||
      ::read(process->exit_fd.get(), &status, sizeof status) != sizeof status) {
    (void)sandbox.signal(process->pid, SIGKILL);
    return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

namespace {

class SandboxInterpreter final : public Interpreter {
 public:
  SandboxInterpreter(runtime::Sandbox& sandbox, std::map<std::string, std::string> sandbox_env,
                     std::shared_ptr<Prestarted> prestarted,
                     std::shared_ptr<runtime::Sandbox> owner, bool in_band)
      : owner_(std::move(owner)),
        sandbox_(sandbox),
        env_(context_env(std::move(sandbox_env))),
        in_band_(in_band) {
    if (!prestarted) return;
    // Only the very process a first execution would have started: a sandbox
    // created with env vars (or template env) gets its context started on use.
    if (prestarted->env == env_ && still_running(sandbox_, *prestarted)) {
      available_ = prestarted->available;
      prestarted_ = std::move(prestarted);
    } else {
      (void)sandbox_.signal(prestarted->pid, SIGKILL);
    }
  }

  ~SandboxInterpreter() override {
    if (leave_running_) return;
    for (auto& [id, context] : contexts_) context->kill();
  }

  size_t adopt(std::vector<runtime::AdoptedProcess> drivers) override {
    std::lock_guard lock(mutex_);
    size_t taken = 0;
    for (auto& driver : drivers) {
      auto label = parse_context_label(driver.label);
      if (driver.ended || !label || contexts_.contains(label->info.id) ||
          !driver.process.stdin_fd.valid())
        continue;  // its pipes close here
      auto channel = pipe_channel(std::move(driver.process));
      if (channel) taken += adopt_locked(*label, std::move(channel.value()));
    }
    return taken;
  }

  size_t adopt_in_band(const std::vector<runtime::ListedProcess>& listed) override {
    std::lock_guard lock(mutex_);
    size_t taken = 0;
    for (const auto& driver : listed) {
      auto label = parse_context_label(driver.label);
      if (!driver.in_band || driver.ended || !label || contexts_.contains(label->info.id)) continue;
      taken += adopt_locked(*label, in_band_channel(sandbox_, driver.pid, driver.delivered));
    }
    return taken;
  }

  void leave_running() override {
    std::lock_guard lock(mutex_);
    leave_running_ = true;
    for (auto& [id, context] : contexts_) context->leave_running();
  }

  Result<ContextInfo> create_context(const std::string& language, const std::string& cwd) override {
    std::lock_guard lock(mutex_);
    add_defaults_locked();
    auto context = create_locked(language.empty() ? "python" : language, cwd);
    if (!context) return context.error();
    return context.value()->info();
  }

  // In creation order, the default contexts first, as E2B lists them.
  std::vector<ContextInfo> list_contexts() override {
    std::lock_guard lock(mutex_);
    add_defaults_locked();
    std::vector<ContextInfo> infos;
    for (const std::string& id : order_) infos.push_back(contexts_.at(id)->info());
    return infos;
  }

  Status restart_context(const std::string& id) override {
    auto context = find(id);
    if (!context) return context.error();
    return context.value()->restart();
  }

  Status remove_context(const std::string& id) override {
    std::shared_ptr<Context> removed;
    {
      std::lock_guard lock(mutex_);
      auto it = contexts_.find(id);
      if (it == contexts_.end()) return not_found(id);
      removed = std::move(it->second);
      contexts_.erase(it);
      std::erase(order_, id);
      std::erase_if(default_ids_, [&](const auto& entry) { return entry.second == id; });
    }
    removed->kill();  // a running execution ends now; the process object goes with the last user
    return {};
  }

  Status execute(const ExecuteRequest& request, const LineSink& emit,
                 const std::atomic<bool>& cancelled, std::chrono::milliseconds timeout) override {
    if (!request.context_id.empty() && !request.language.empty()) {
      return Error{"execute", EINVAL, "give either context_id or language, not both"};
    }
    if (auto s = check_env_var_names(request.env_vars); !s) return s;
    auto context = request.context_id.empty()
                       ? default_context(request.language.empty() ? "python" : request.language)
                       : find(request.context_id);
    if (!context) return context.error();
    return context.value()->execute(request, emit, cancelled, timeout);
  }

 private:
  static Error not_found(const std::string& id) {
    return Error{"find context", ENOENT, fmt::format("no context with id '{}'", id)};
  }

  Result<std::shared_ptr<Context>> find(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto it = contexts_.find(id);
    if (it == contexts_.end()) return not_found(id);
    return it->second;
  }

  Result<std::shared_ptr<Context>> default_context(const std::string& language_name) {
    auto language = find_language(language_name);
    if (!language) return language.error();
    const std::string& name = language.value()->name;  // "js" shares javascript's context
    std::lock_guard lock(mutex_);
    add_defaults_locked();
    if (auto it = default_ids_.find(name); it != default_ids_.end()) {
      return contexts_.at(it->second);
    }
    auto context = create_locked(name, kDefaultCwd, true, true);
    if (context) default_ids_[name] = context.value()->info().id;
    return context;
  }

  // A default context's process starts on its first execution (the listing
  // must not cost a process per language); a created one starts at once, so
  // that a bad cwd fails the create.
  Result<std::shared_ptr<Context>> create_locked(const std::string& language_name,
                                                 const std::string& cwd, bool start = true,
                                                 bool is_default = false) {
    auto language = find_language(language_name);
    if (!language) return language.error();
    if (auto s = check_available(*language.value()); !s) return s.error();
    ContextInfo info{new_context_id(), language.value()->name, cwd.empty() ? kDefaultCwd : cwd};
    auto context =
        std::make_shared<Context>(info, *language.value(), sandbox_, env_, is_default, in_band_);
    if (start) {
      if (auto s = context->start(); !s) return s.error();
    }
    contexts_[info.id] = context;
    order_.push_back(info.id);
    return context;
  }

  // Once per interpreter: the default contexts E2B's server makes at start-up
  // (a language this sandbox cannot run is left out).
  void add_defaults_locked() {
    if (defaults_added_) return;
    defaults_added_ = true;
    for (const char* language : kDefaultLanguages) {
      if (default_ids_.contains(language)) continue;
      auto context = std::string_view(language) == "python" && prestarted_
                         ? adopt_prestarted_locked()
                         : create_locked(language, kDefaultCwd, false, true);
      if (context) default_ids_[language] = context.value()->info().id;
    }
  }

  size_t adopt_locked(const ContextLabel& label, std::unique_ptr<DriverChannel> channel) {
    const Language& language = *find_language(label.info.language).value();
    available_.insert(language.name);  // it ran here already
    const std::string id = label.info.id;
    if (label.is_default && !default_ids_.contains(language.name)) default_ids_[language.name] = id;
    contexts_[id] =
        std::make_shared<Context>(label, language, sandbox_, env_, std::move(channel), in_band_);
    order_.push_back(id);
    return 1;
  }

  // The default Python context, with the driver the warm pool started.
  Result<std::shared_ptr<Context>> adopt_prestarted_locked() {
    auto language = find_language("python");
    if (!language) return language.error();
    ContextInfo info{prestarted_->context_id, language.value()->name, kDefaultCwd};
    auto context = std::make_shared<Context>(info, *language.value(), sandbox_,
                                             std::move(*prestarted_), in_band_);
    prestarted_.reset();
    contexts_[info.id] = context;
    order_.push_back(info.id);
    return context;
  }

  // Only success is remembered: the user may install the language later.
  Status check_available(const Language& language) {
    if (language.availability_check.empty() || available_.contains(language.name)) return {};
    if (!sandbox_check_passes(sandbox_, language.availability_check, env_)) {
      return Error{"context language", EINVAL, language.missing_hint};
    }
    available_.insert(language.name);
    return {};
  }

  // First, so it goes last: the contexts' destructors still signal through sandbox_.
  const std::shared_ptr<runtime::Sandbox> owner_;
  runtime::Sandbox& sandbox_;
  const std::map<std::string, std::string> env_;
  const bool in_band_;  // contexts start their drivers in band
  std::mutex mutex_;    // guards the maps below, never held during an execution
  std::map<std::string, std::shared_ptr<Context>> contexts_;
  std::vector<std::string> order_;  // context ids in creation order
  bool defaults_added_ = false;
  std::map<std::string, std::string> default_ids_;  // language → context id
  std::set<std::string> available_;                 // languages whose check passed
  std::shared_ptr<Prestarted> prestarted_;          // until the default Python context takes it
  bool leave_running_ = false;                      // the daemon is stopping
};

}  // namespace

std::unique_ptr<Interpreter> Interpreter::create(runtime::Sandbox& sandbox,
                                                 std::map<std::string, std::string> sandbox_env,
                                                 std::shared_ptr<Prestarted> prestarted,
                                                 std::shared_ptr<runtime::Sandbox> owner,
                                                 bool in_band) {
  return std::make_unique<SandboxInterpreter>(sandbox, std::move(sandbox_env),
                                              std::move(prestarted), std::move(owner), in_band);
}

}  // namespace abx::interp
