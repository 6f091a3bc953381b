// Sandboxfile: the single-stage subset of Dockerfile syntax that builds a
// template. Parsing resolves everything that does not need the image
// (substitution, WORKDIR, build args), so the builder only executes steps.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace abx::templates::sandboxfile {

enum class Kind { kFrom, kRun, kCopy, kEnv, kWorkdir, kUser, kArg };

struct Step {
  Kind kind = Kind::kRun;
  int line = 0;      // 1-based line where the instruction starts
  std::string text;  // the instruction as written, continuations joined into one line
                     // (for progress output; e.g. "RUN apt-get update && apt-get install -y jq")
  // kFrom:    args = {image}            ("base", "debian:bookworm", "./image.tar", after ARG
  //           substitution)
  // kRun:     args = argv: shell form → {"/bin/sh", "-c", "<command>"}; exec form ["a","b"] → as
  //           given. The command text is NOT variable-substituted (the shell does it); build
  //           args in effect at this step are in `env` instead.
  // kCopy:    args = {src..., dest} after substitution; `add` true for ADD; `chown` from
  //           --chown=. Sources are context-relative paths that stay inside the context; dest is
  //           absolute (a relative dest is resolved against the WORKDIR in effect) and keeps a
  //           trailing "/" when it names a directory.
  // kEnv:     pairs = {{key, value}, ...}  (both "ENV K=V K2=\"v 2\"" and legacy "ENV K V w")
  // kWorkdir: args = {path} (absolute: relative paths resolve against the previous WORKDIR)
  // kUser:    args = {"user[:group]"}
  // kArg:     pairs = {{name, value}} (value: --build-arg if given, else the default, else "")
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> pairs;
  // kRun only: the ARG values in effect, which Docker passes to RUN as environment variables,
  // plus the proxy build args (http_proxy, ...) that Docker passes without an ARG. An ARG
  // declared without any value is left out (unset, as in Docker), and so is one that an ENV of
  // the same name shadows (ENV wins), so apply this beneath the image's environment.
  std::map<std::string, std::string> env;
  std::string chown;
  bool add = false;
};

struct Sandboxfile {
  std::vector<Step> steps;            // FROM is always steps[0]
  std::vector<std::string> warnings;  // "Sandboxfile line 9: LABEL is ignored: ..." for skipped
                                      // instructions, undefined variables, unused build args
  // The template's start command (run by /bin/sh -c when a sandbox is created), from CMD and
  // ENTRYPOINT combined as Docker does; the exec form becomes "exec 'a' 'b'". Nothing: neither
  // was given (the FROM template's start command stays); "": cleared (CMD [] alone).
  std::optional<std::string> start_cmd;
  // READY <shell command>: run until it exits 0 before a create returns. Nothing: not given.
  std::optional<std::string> ready_cmd;
};

// Where in the template the last COPY that took the build context's top-level file `name`
// ("commands.py", copied by name or with its whole dir, "COPY . /app/") put it; nothing when no
// COPY did.
std::optional<std::string> copied_to(const Sandboxfile& file, const std::string& name);

// "exec 'a' 'b c'": an argv as one /bin/sh command line that runs it as given.
std::string exec_line(const std::vector<std::string>& argv);

// What the FROM image brings, when the caller knows it. Without it, "ENV PATH=/x:$PATH" expands
// $PATH to "" and relative paths start from "/". To use it, parse once to learn steps[0] (the
// image), then parse again with that image's config.
struct BaseImage {
  std::map<std::string, std::string> env;
  std::string workdir = "/";
};

// `build_args` are the --build-arg NAME=VALUE given to the build. Errors and warnings are one
// line each, "Sandboxfile line 7: <what is wrong>; <what to do>"; those about the whole file (no
// FROM, an unused --build-arg) start "Sandboxfile: ".
Result<Sandboxfile> parse(const std::string& text,
                          const std::map<std::string, std::string>& build_args,
                          const BaseImage& base = {});

}  // namespace abx::templates::sandboxfile
