// What is recorded beside each stored template (meta.json) and how a stored
// template dir is laid out: <templates>/<name>/meta.json naming its layers,
// which live in <templates>/.layers/<id>/ and may be shared between templates.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::templates {

namespace fs = std::filesystem;

struct TemplateMeta {
  std::string name;
  std::string source;       // "mmdebstrap bookworm (templates/base)", "oci /path", ...
  int64_t created_ms = 0;   // unix ms
  uint64_t size_bytes = 0;  // disk used by the rootfs
  std::string spec_hash;
  std::vector<std::string> layers;         // layer ids, topmost first
  std::map<std::string, std::string> env;  // defaults for the template's processes
  std::string workdir;
  std::string user;
  std::string owner;  // the team that built or imported it ("" when built on first use)
  // Set-id programs work in its sandboxes (RootfsSpec::allow_setid): set only
  // from a checked-in spec.toml, and inherited by a Sandboxfile's FROM.
  bool allow_setid = false;
  // Run by /bin/sh -c when a sandbox is created (E2B's startCmd), and the check that it is
  // ready (readyCmd: run until it exits 0). Inherited by a Sandboxfile's FROM unless it sets
  // its own (CMD/ENTRYPOINT, READY).
  std::string start_cmd;
  std::string ready_cmd;
};

Status write_meta(const fs::path& template_dir, const TemplateMeta& meta);
Result<TemplateMeta> read_meta(const fs::path& template_dir);

// Disk blocks used below `dir` (hard links counted once).
uint64_t disk_usage(const fs::path& dir);

}  // namespace abx::templates
