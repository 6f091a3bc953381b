// E2B's template build request (TemplateBuildStartV2: a base, steps, start
// and ready commands, as the unmodified SDKs' Template().from_image(...)
// .run_cmd(...) send it) turned into a Sandboxfile, so that an SDK build runs
// through the same builder, isolation and limits as `abx template build`.
// Pure: no I/O, every field of the request is checked here.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::daemon::e2b_steps {

struct Translated {
  std::string sandboxfile;          // the text to build
  std::vector<std::string> hashes;  // the uploads (files hashes) COPY steps take, each once
  std::string from;                 // what FROM names
  bool no_cache = false;            // the SDK's skip_cache / force
  std::vector<std::string> notes;   // what was accepted but not applied (shown in the log)
  // Per instruction of `sandboxfile` (FROM first; CMD and READY are not
  // steps), the E2B step it came from: "base", then "1" for steps[0], ...
  std::vector<std::string> step_names;
  // The steps that run a command as a user of their own: step name -> {command, user}.
  std::map<std::string, std::pair<std::string, std::string>> runs_as;
};

// The user the base runs as (a template's USER, "" when unknown): RUN steps
// that name their own user switch back to the current one afterwards.
using BaseUserFn = std::function<std::string(const std::string& from)>;

// A files hash as the SDKs compute it (sha256, 64 lower-case hex digits).
bool valid_hash(const std::string& hash);

// E2B's image names for what a local daemon builds from: e2bdev/base is our
// `base`; a Docker Hub short name ("ubuntu:22.04") is docker.io/library/...
std::string from_of_image(const std::string& image);

// The COPY step of upload `hash` reads from this dir of the build context.
std::string upload_dir_of(const std::string& hash);

// E2B's name of the step a failure of the Sandboxfile's instruction `index`
// belongs to (an index past the last instruction: "finalize").
std::string step_name(const Translated& steps, size_t index);

// kErrBadInput errors name the step ("steps[2] (RUN): ...").
Result<Translated> translate(const nlohmann::json& request, const BaseUserFn& base_user);

}  // namespace abx::daemon::e2b_steps
