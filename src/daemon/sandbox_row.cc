#include "daemon/sandbox_row.h"

#include "daemon/caller.h"

namespace abx::daemon {
namespace {

nlohmann::json volumes_json(const std::vector<VolumeMountRow>& mounts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : mounts) out.push_back({{"id", m.id}, {"name", m.name}, {"path", m.path}});
  return out;
}

}  // namespace

nlohmann::json row_to_json(const SandboxRow& row) {
  const auto& rec = row.record;
  return {
      {"id", row.id},
      {"template_id", row.template_id},
      {"alias", row.alias},
      {"owner", row.owner},
      {"started_at_ms", row.started_at_ms},
      {"end_at_ms", row.end_at_ms},
      {"metadata", row.metadata},
      {"env_vars", row.env_vars},
      {"access_token", row.access_token},
      {"traffic_access_token", row.traffic_access_token},
      {"allow_internet_access", row.allow_internet_access},
      {"network", row.network},
      {"cpu_count", row.cpu_count},
      {"memory_mb", row.memory_mb},
      {"disk_size_mb", row.disk_size_mb},
      {"output_buffer_bytes", row.output_buffer_bytes},
      {"default_user",
       {{"name", row.default_user},
        {"uid", row.default_uid},
        {"gid", row.default_gid},
        {"home", row.default_home},
        {"cwd", row.default_cwd}}},
      {"lifecycle",
       {{"paused", row.paused},
        {"paused_at_ms", row.paused_at_ms},
        {"auto_pause", row.auto_pause},
        {"auto_resume", row.auto_resume},
        {"auto_pause_memory", row.auto_pause_memory},
        {"fs_paused", row.fs_paused}}},
      {"rootfs",
       {{"template_layers", row.template_layers},
        {"template_binds", row.template_binds},
        {"allow_setid", row.allow_setid},
        {"snapshot_layers", row.snapshot_layers},
        {"template_env", row.template_env}}},
      {"volumes", volumes_json(row.volume_mounts)},
      {"record",
       {{"init_pid", rec.init_pid},
        {"init_start_time", rec.init_start_time},
        {"state_dir", rec.state_dir.string()},
        {"host_uid_base", rec.host_uid_base},
        {"memory_bytes", rec.limits.memory_bytes},
        {"pids", rec.limits.pids},
        {"cpu_millicores", rec.limits.cpu_millicores},
        {"disk_bytes", rec.limits.disk_bytes},
        {"net_address", rec.net_address}}},
  };
}

Result<SandboxRow> row_from_json(const nlohmann::json& json) {
  try {
    SandboxRow row;
    row.id = json.at("id").get<std::string>();
    row.template_id = json.at("template_id").get<std::string>();
    row.alias = json.at("alias").get<std::string>();
    row.owner = json.value("owner", std::string(kDefaultTeam));  // rows from before teams
    row.started_at_ms = json.at("started_at_ms").get<int64_t>();
    row.end_at_ms = json.at("end_at_ms").get<int64_t>();
    row.metadata = json.at("metadata").get<std::map<std::string, std::string>>();
    row.env_vars = json.at("env_vars").get<std::map<std::string, std::string>>();
    row.access_token = json.at("access_token").get<std::string>();
    row.traffic_access_token = json.value("traffic_access_token", "");
    row.allow_internet_access = json.at("allow_internet_access").get<bool>();
    row.network = json.value("network", nlohmann::json::object());
    row.cpu_count = json.at("cpu_count").get<uint32_t>();
    row.memory_mb = json.at("memory_mb").get<uint32_t>();
    row.disk_size_mb = json.at("disk_size_mb").get<uint32_t>();
    row.output_buffer_bytes = json.value("output_buffer_bytes", 0u);
    if (const auto it = json.find("default_user"); it != json.end()) {
      row.default_user = it->value("name", "");
      row.default_uid = it->value("uid", 1000u);
      row.default_gid = it->value("gid", 1000u);
      row.default_home = it->value("home", "");
      row.default_cwd = it->value("cwd", "");
    }
    if (const auto it = json.find("lifecycle"); it != json.end()) {
      row.paused = it->value("paused", false);
      row.paused_at_ms = it->value("paused_at_ms", int64_t{0});
      row.auto_pause = it->value("auto_pause", false);
      row.auto_resume = it->value("auto_resume", false);
      row.auto_pause_memory = it->value("auto_pause_memory", true);
      row.fs_paused = it->value("fs_paused", false);
    }
    if (const auto it = json.find("rootfs"); it != json.end()) {
      row.template_layers = it->at("template_layers").get<std::vector<std::string>>();
      row.template_binds =
          it->at("template_binds").get<std::vector<std::pair<std::string, std::string>>>();
      row.allow_setid = it->value("allow_setid", false);
      row.snapshot_layers = it->at("snapshot_layers").get<std::vector<std::string>>();
      row.template_env = it->value("template_env", std::map<std::string, std::string>{});
    }
    if (const auto it = json.find("volumes"); it != json.end() && it->is_array())
      for (const auto& v : *it)
        row.volume_mounts.push_back({v.at("id").get<std::string>(), v.at("name").get<std::string>(),
                                     v.at("path").get<std::string>()});
    const auto& rec = json.at("record");
    row.record.id = row.id;
    row.record.init_pid = rec.at("init_pid").get<pid_t>();
    row.record.init_start_time = rec.at("init_start_time").get<uint64_t>();
    row.record.state_dir = rec.at("state_dir").get<std::string>();
    row.record.host_uid_base = rec.at("host_uid_base").get<uid_t>();
    row.record.limits.memory_bytes = rec.at("memory_bytes").get<uint64_t>();
    row.record.limits.pids = rec.at("pids").get<uint64_t>();
    row.record.limits.cpu_millicores = rec.at("cpu_millicores").get<uint32_t>();
    row.record.limits.disk_bytes = rec.at("disk_bytes").get<uint64_t>();
    row.record.net_address = rec.value("net_address", 0u);
    return row;
  } catch (const nlohmann::json::exception& e) {
    return Error{"decode stored sandbox", EINVAL, e.what()};
  }
}

}  // namespace abx::daemon
