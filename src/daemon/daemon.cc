// `abx serve`: wires the runtime, templates, state store and HTTP server
// together and runs until SIGINT/SIGTERM. Sandboxes outlive the daemon; the
// next start adopts them.
#include "daemon/daemon.h"

#include <fcntl.h>
#include <malloc.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "common/daemon_port.h"
#include "common/data_dir_lock.h"
#include "common/file_replacement.h"
#include "common/ids.h"
#include "common/paths.h"
#include "common/unique_fd.h"
#include "daemon/egress_services.h"
#include "daemon/network_config.h"
#include "daemon/router.h"
#include "daemon/sandbox_trust.h"
#include "daemon/service.h"
#include "interp/prestart.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;

constexpr int kIoThreads = 3;
// Short blocking work (create/destroy, file operations, spawns) and long work
// (code executions, template builds) on separate threads: see blocking_pool.h.
constexpr size_t kShortBlockingThreads = 8;
constexpr size_t kLongBlockingThreads = 64;
// How long a stopping daemon waits for long work (run_code, builds) before it
// exits without it: their clients see the connection close, and `abx daemon
// stop` does not wait out a 300 s execution.
constexpr std::chrono::milliseconds kLongWorkGrace{2000};

// Private: it holds the API keys. Sandboxes get their template layers as fds
// from the runtime, so they never need to traverse it.
Status make_data_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"create " + dir.string(), ec.value(), ""};
  if (::chmod(dir.c_str(), 0700) != 0) return Error::from_errno("chmod 0700", dir.string());
  return {};
}

// The first line of a small file, or "" when it is missing or empty.
std::string first_line(const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {};
  char text[256];
  const ssize_t got = ::read(fd.get(), text, sizeof text);
  if (got <= 0) return {};
  const std::string_view view(text, static_cast<size_t>(got));
  return std::string(view.substr(0, view.find('\n')));
}

Result<std::string> load_or_create_api_key(const fs::path& path) {
  std::string key = first_line(path);
  if (!key.empty()) return key;
  key = ids::api_key();
  if (Status s = replace_file(path, key + "\n", 0600, true); !s) return s.error();
  return key;
}

Status write_address_file(const fs::path& path, uint16_t port) {
  if (path.empty()) return {};
  return replace_file(path, "http://127.0.0.1:" + std::to_string(port) + "\n", 0644, true);
}

// Clients keep the URL they were given (an exported E2B_API_URL, a script):
// a daemon that comes back on another port says so loudly, naming both.
void remember_listen_port(const fs::path& data_dir, uint16_t port) {
  const auto before = daemon_port::remembered(data_dir);
  if (before && *before != port) {
    spdlog::warn(
        "abx serve: PORT CHANGED: listening on port {}, not on port {} where clients expect this "
        "data dir's daemon (it is taken, or --listen asked for another): clients that saved "
        "http://127.0.0.1:{} must now use http://127.0.0.1:{}",
        port, *before, *before, port);
  }
  if (Status s = daemon_port::remember(data_dir, port); !s) {
    spdlog::warn("abx serve: cannot remember the port: {}", s.error().message());
  }
}

// Beside abx in a build tree; PREFIX/libexec/abx from PREFIX/bin once installed
// (cmake/install.cmake).
fs::path default_init_binary() {
  std::error_code ec;
  const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  const fs::path beside = dir / "abx-init";
  const fs::path installed = dir.parent_path() / "libexec/abx/abx-init";
  return fs::exists(beside, ec) || !fs::exists(installed, ec) ? beside : installed;
}

int fail(const Error& error) {
  spdlog::error("abx serve: {}", error.message());
  return 1;
}

// The address a local client reaches the server on: a wildcard host
// ("0.0.0.0", "::", "") means loopback.
ListenAddress reachable_address(const std::string& host_port, uint16_t port) {
  std::string host = host_port.substr(0, host_port.rfind(':'));
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  return {host, port};
}

// Every client connection and every sandbox (3 each) holds a descriptor; the
// usual soft limit of 1024 would run out at a few hundred sandboxes. The hard
// limit is what the administrator allows.
void raise_open_files_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t before = limit.rlim_cur;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = before;
  }
  if (limit.rlim_cur == before) {
    spdlog::info("open files limit: {}", before);
  } else {
    spdlog::info("open files limit: {} (raised from {})", limit.rlim_cur, before);
  }
}

// An exception that escapes a handler must not end the daemon (nor one of
// its I/O threads, which would leave it half-served): log it, run on.
void run_io(boost::asio::io_context& ioc) {
  for (;;) {
    try {
      ioc.run();
      return;
    } catch (const std::exception& e) {
      spdlog::error("abx serve: an I/O handler threw: {}", e.what());
    } catch (...) {
      spdlog::error("abx serve: an I/O handler threw an unknown exception");
    }
  }
}

// Bounded: the log rotates at `max_bytes` and keeps `files` old ones.
Status log_to_file(const ServeOptions& options) {
  if (options.log_file.empty()) return {};
  try {
    auto logger = spdlog::rotating_logger_mt("abx", options.log_file.string(),
                                             std::max<size_t>(options.log_max_bytes, 1024),
                                             std::max<size_t>(options.log_files, 1));
    logger->flush_on(spdlog::level::trace);  // as unbuffered stderr was
    spdlog::set_default_logger(std::move(logger));
  } catch (const spdlog::spdlog_ex& e) {
    return Error{"open the log", EIO, options.log_file.string() + ": " + e.what()};
  }
  return {};
}

// RuntimeConfig::warm_up, a plain function: a prestarted Python context,
// in band as the daemon's contexts start.
template <bool kInBand>
std::shared_ptr<void> warm_up(runtime::Sandbox& sandbox, const std::string& what) {
  if (what != interp::kWarmUpPython) return nullptr;
  return interp::prestart(sandbox, kInBand);
}

}  // namespace

int serve(const ServeOptions& options) {
  if (Status s = log_to_file(options); !s) return fail(s.error());
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  std::signal(SIGPIPE, SIG_IGN);  // a process that exits closes its stdin pipe under us
  raise_open_files_limit();
  // glibc gives each of the daemon's ~80 threads an arena of its own as they first
  // allocate (up to 8 per core), and each keeps what it grew to: RSS rose by ~37 MiB
  // over the first few hundred creates. A few shared arenas serve its load as well.
  ::mallopt(M_ARENA_MAX, 4);
  if (options.data_dir.empty()) return fail(Error{"serve", EINVAL, "--data-dir is required"});
  if (Status s = make_data_dir(options.data_dir); !s) return fail(s.error());
  // Held until we exit: closing the fd releases it.
  auto data_dir_lock = lock_data_dir(options.data_dir);
  if (!data_dir_lock) return fail(data_dir_lock.error());
  const fs::path key_path = paths::api_key_file(options.data_dir);
  auto api_key = load_or_create_api_key(key_path);
  if (!api_key) return fail(api_key.error());

  const fs::path config_file =
      options.config_file.empty() ? options.data_dir / "config.json" : options.config_file;
  auto network = load_network_config(config_file);
  if (!network) return fail(network.error());
  // Read before anything starts, so that a bad file stops the daemon with nothing to undo.
  std::string extra_ca;
  if (const char* file = std::getenv("ABX_SANDBOX_EXTRA_CA_FILE"); file && *file) {
    auto loaded = load_extra_ca(file);
    if (!loaded) return fail(loaded.error());
    extra_ca = std::move(*loaded);
  }
  std::vector<std::string> egress_warnings;
  std::unique_ptr<EgressServices> egress =
      network->enabled ? EgressServices::start(options.data_dir, *network, &egress_warnings)
                       : nullptr;
  for (const std::string& warning : egress_warnings) spdlog::warn("network: {}", warning);
  runtime::RuntimeConfig config;
  config.network = *network;
  if (egress) {
    config.network.dns_port = egress->dns_port();
    config.network.proxy_port = egress->proxy_port();
  }
  config.state_dir = options.data_dir / "sandboxes";
  config.init_binary = options.init_binary.empty() ? default_init_binary() : options.init_binary;
  config.warm_pool_size = options.warm_pool;
  config.warm_up = options.in_band_commands ? warm_up<true> : warm_up<false>;
  config.lxcfs_dir = options.data_dir / "lxcfs";
  auto runtime = runtime::open_runtime(config);
  if (!runtime) return fail(runtime.error());
  for (const std::string& warning : (*runtime)->warnings()) spdlog::warn("runtime: {}", warning);
  if (const auto checkpoints = (*runtime)->checkpoint_support(); checkpoints.available)
    spdlog::info("checkpoints: available ({})", checkpoints.criu.string());
  else
    spdlog::info("checkpoints: unavailable ({}): pause keeps memory", checkpoints.reason);
  // Stops the lookups before the runtime goes, on every way out of here.
  struct Unplug {
    EgressServices* services;
    ~Unplug() {
      if (services) services->use(nullptr);
    }
  } unplug{egress.get()};
  if (egress) egress->use(runtime->get());
  const fs::path templates_dir =
      options.templates_dir.empty() ? options.data_dir / "templates" : options.templates_dir;
  auto registry_open = load_registry_open_private(config_file);
  if (!registry_open) return fail(registry_open.error());
  templates::TemplateStore templates(
      templates_dir, **runtime,
      egress::never_dialed(std::move(*registry_open), egress::HostAddresses::unless_opened));
  auto store = Store::open(options.data_dir / "abx.db");
  if (!store) return fail(store.error());

  auto keys = ApiKeys::open(**store, *api_key, options.data_dir / "api_keys");
  if (!keys) return fail(keys.error());
  auto quota_config = load_quota_config(config_file);
  if (!quota_config) return fail(quota_config.error());
  const HostSize host = measure_host(options.data_dir);
  const auto& caps = *quota_config;
  spdlog::info("host caps: {} MB memory ({}), {} MB disk ({}% committable)", host.memory_mb,
               caps.memory_percent
                   ? fmt::format("{}% committable", *caps.memory_percent)
                   : fmt::format("overcommitted, {}% kept available", caps.memory_reserve_percent),
               host.disk_mb, caps.disk_percent);
  auto secrets = SecretStore::open(**store);
  if (!secrets) return fail(secrets.error());
  auto event_limits = load_event_limits(config_file);
  if (!event_limits) return fail(event_limits.error());
  runtime::Runtime& rt = **runtime;
  auto volumes = Volumes::open(options.data_dir / "volumes",
                               VolumeOwners{[&rt](uint32_t id) { return rt.host_uid(id); },
                                            [&rt](uint32_t id) { return rt.host_gid(id); }});
  if (!volumes) return fail(volumes.error());
  auto volume_mounts = load_volume_mounts(config_file);
  if (!volume_mounts) return fail(volume_mounts.error());
  (*volumes)->allow_mounts(*volume_mounts);
  if ((*volumes)->storage() == "image")
    spdlog::info("volumes: ext4 images, loop-mounted (a hard size quota); mounts {}",
                 volume_mounts->value_or(true) ? "on" : "off (config.json)");
  else
    spdlog::info("volumes: plain directories, as {} (a soft size quota); mounts {}",
                 (*volumes)->no_images_reason(),
                 volume_mounts->value_or(false) ? "on (config.json)" : "off");
  Tenancy tenancy{*keys,
                  std::make_shared<Quotas>(*quota_config, host, **store),
                  std::make_shared<Usage>(**store),
                  std::move(*secrets),
                  std::make_shared<SnapshotStore>(options.data_dir / "snapshots", **store),
                  std::make_shared<EventJournals>(options.data_dir / "events", *event_limits),
                  std::shared_ptr<Volumes>(std::move(*volumes)),
                  std::make_shared<E2bBuilds>(options.data_dir / "e2b-uploads")};
  boost::asio::io_context ioc(kIoThreads);
  BlockingPool pool(kShortBlockingThreads, kLongBlockingThreads);
  Service service(ioc, pool, **runtime, templates, **store, tenancy);
  service.set_output_buffer(options.output_buffer);
  service.set_in_band_commands(options.in_band_commands);
  if (egress) {
    service.on_egress_change([&egress](uint32_t address) { egress->policy_changed(address); });
    service.set_egress_ca(egress->ca_pem());
    service.set_extra_ca(extra_ca);
    egress->find_secrets([&service](uint32_t address, const std::string& name,
                                    const std::string& to, const std::string& header) {
      const std::string team = service.owner_at(address);
      return team.empty() ? std::nullopt : service.secrets().get(team, name, to, header);
    });
    egress->find_teams([&service, quotas = tenancy.quotas](uint32_t address) {
      const std::string team = service.owner_at(address);
      if (team.empty()) return egress::ProxyConfig::Team{};
      return egress::ProxyConfig::Team{team, quotas->quota_for(team).max_proxy_connections};
    });
    egress->find_logs([&service](uint32_t address) { return service.log_at(address); });
  }
  // The proxy asks the service for secrets: it stops asking before the service goes.
  struct ForgetSecrets {
    EgressServices* services;
    ~ForgetSecrets() {
      if (services)
        services->find_secrets(nullptr), services->find_teams(nullptr),
            services->find_logs(nullptr);
    }
  } forget_secrets{egress.get()};
  service.restore();
  const http::ServerLimits limits{options.max_connections, options.max_connections_per_address,
                                  std::chrono::seconds(options.header_timeout_s)};
  auto port =
      http::listen(ioc, options.listen, make_router(service, *keys, key_path.string()), limits);
  if (!port) return fail(port.error());
  service.set_listen_address(reachable_address(options.listen, *port));
  remember_listen_port(options.data_dir, *port);
  if (Status s = write_address_file(options.address_file, *port); !s) return fail(s.error());
  service.start_ttl();
  spdlog::info("abx serve: listening on http://127.0.0.1:{} (data dir {})", *port,
               options.data_dir.string());

  boost::asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](auto, int signo) {
    spdlog::info("abx serve: signal {}: stopping (sandboxes keep running)", signo);
    ioc.stop();
  });
  std::vector<std::thread> threads;
  for (int i = 1; i < kIoThreads; ++i) threads.emplace_back([&] { run_io(ioc); });
  run_io(ioc);
  for (auto& thread : threads) thread.join();
  const bool long_work_done = pool.join_within(kLongWorkGrace);
  if (Status s = tenancy.usage->flush(); !s) spdlog::warn("usage: {}", s.error().message());
  // No mount or loop device outlives the daemon but what its sandboxes bind
  // (their volumes' loop devices go with them); a start mounts them again.
  tenancy.volumes->unmount_all();
  if (!long_work_done) {
    // Its threads still use the service and the store: no destructor may run
    // under them. What they leave is what a SIGKILL leaves, which a start copes with.
    spdlog::info("abx serve: stopped, leaving long requests (run_code, builds) unfinished");
    spdlog::default_logger()->flush();  // not shutdown: those threads may still log
    std::_Exit(0);
  }
  spdlog::info("abx serve: stopped");
  return 0;
}

}  // namespace abx::daemon
