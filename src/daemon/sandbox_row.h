// What the daemon knows about one sandbox beyond the runtime: everything the
// control plane reports and everything needed to adopt it after a restart.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::daemon {

// A volume a sandbox mounts (read-write), by id: a volume of the same name
// made later is another volume.
struct VolumeMountRow {
  std::string id;
  std::string name;
  std::string path;  // inside the sandbox
};

struct SandboxRow {
  std::string id;
  std::string template_id;  // canonical (resolved) template
  std::string alias;        // the template name the client asked for
  std::string owner;        // the team that created it (Caller::team)
  int64_t started_at_ms = 0;
  int64_t end_at_ms = 0;
  std::map<std::string, std::string> metadata;
  std::map<std::string, std::string> env_vars;
  std::string access_token;          // non-empty for secure sandboxes
  std::string traffic_access_token;  // non-empty: proxied ports need it
  bool allow_internet_access = true;
  nlohmann::json network = nlohmann::json::object();  // NetworkSettings::stored
  uint32_t cpu_count = 1;
  uint32_t memory_mb = 512;
  uint32_t disk_size_mb = 1024;
  uint32_t output_buffer_bytes = 0;  // CreateSandboxRequest's; 0: the daemon's --output-buffer
  runtime::SandboxRecord record;
  // From the template (an image's config, a Sandboxfile's USER/WORKDIR): who
  // and where processes run when a request does not say.
  std::string default_user;  // "" = `user`
  uint32_t default_uid = 1000;
  uint32_t default_gid = 1000;
  std::string default_home;
  std::string default_cwd;  // "" = the user's home
  // Pause (E2B's): a paused sandbox is frozen, keeps no deadline and answers
  // nothing until resumed. At its timeout an auto_pause sandbox is paused
  // instead of killed; an auto_resume one wakes on the next request to it.
  bool paused = false;
  int64_t paused_at_ms = 0;
  bool auto_pause = false;
  bool auto_resume = false;
  // autoPauseMemory false (E2B's keep_memory=False): the timeout's pause is
  // filesystem-only.
  bool auto_pause_memory = true;
  // Filesystem-only pause: no processes and no runtime sandbox; its writable
  // layer was saved as the topmost of `snapshot_layers`, and a resume cold
  // boots it on them under the same id (`record` is then a new one).
  bool fs_paused = false;
  // What its root is made of beyond its own writable layer: the template's
  // layers as they were at create (paths, topmost first; a rebuild of the
  // template does not change them), its binds and set-id choice, and the
  // snapshot layers (ids in the snapshot store, topmost first) it was
  // created or resumed on. A snapshot of it records all of them.
  std::vector<std::string> template_layers;
  std::vector<std::pair<std::string, std::string>> template_binds;  // host path, sandbox path
  bool allow_setid = false;
  std::vector<std::string> snapshot_layers;
  std::map<std::string, std::string> template_env;  // the template's ENV, under env_vars
  std::vector<VolumeMountRow> volume_mounts;
};

nlohmann::json row_to_json(const SandboxRow& row);
Result<SandboxRow> row_from_json(const nlohmann::json& json);

}  // namespace abx::daemon
