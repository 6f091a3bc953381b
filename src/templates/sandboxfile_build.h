// Runs a parsed Sandboxfile's steps: RUN in a build sandbox whose writable
// layer lives on the host and becomes the step's layer; COPY/ADD and WORKDIR
// write through a build sandbox's root the same way; ENV, USER and ARG only
// change the template's defaults. Every layer is keyed by the hash of all the
// steps up to it (and of the files a COPY takes), so an unchanged prefix is
// served from the layer store instead of being run again.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "common/error.h"
#include "runtime/runtime.h"
#include "templates/catalog.h"
#include "templates/layer_store.h"
#include "templates/sandboxfile.h"

namespace abx::templates {

using LineFn = std::function<void(const std::string&)>;
// Told the index (in Sandboxfile::steps) of each step as it starts: 0 once
// FROM's base is ready, steps.size() once every step has run (the template
// is being finished). A failure belongs to the last index told.
using StepStartedFn = std::function<void(size_t index)>;

struct StepDeps {
  runtime::Runtime& runtime;
  const LayerStore& layers;
  std::filesystem::path context_dir;
  std::filesystem::path scratch_dir;           // private, for unpacking ADDed archives
  bool network = true;                         // RUN steps get a network (NAT out, no host)
  bool no_cache = false;                       // run every step even if its layer exists
  LineFn log;                                  // every line, step output included (the build log)
  LineFn progress;                             // what the client sees
  std::chrono::seconds step_timeout{30 * 60};  // a RUN running longer fails (and is killed)
  StepStartedFn step_started;                  // may be empty
};

// `from` is what FROM names (its layers and defaults). Returns the template's
// layers (topmost first) and defaults; name, source and size are the caller's.
Result<TemplateMeta> run_steps(const sandboxfile::Sandboxfile& file, const TemplateMeta& from,
                               const StepDeps& deps);

}  // namespace abx::templates
