#include "templates/sandboxfile.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>

#include "common/json_text.h"
#include "templates/host_arch.h"
#include "templates/sandboxfile_expander.h"
#include "templates/sandboxfile_text.h"

namespace abx::templates::sandboxfile {
namespace {

using Vars = std::map<std::string, std::string>;
using Pairs = std::vector<std::pair<std::string, std::string>>;

// The exec/JSON form ["a", "b"]. As in Docker, text that starts with '[' but is not JSON is
// shell form (so "RUN [ -f x ] && ..." works): nullopt then.
Result<std::optional<Strings>> json_strings(const Instruction& in, std::string_view rest,
                                            const std::string& example) {
  if (!rest.starts_with('[')) return std::optional<Strings>{};
  if (json_text::nested_deeper_than(rest, json_text::kMaxDepth))
    return error_at(in.line, in.keyword + " [...] must be a JSON array of strings, e.g. " +
                                 in.keyword + " " + example);
  const nlohmann::json json = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_array()) return std::optional<Strings>{};
  Strings out;
  for (const nlohmann::json& item : json) {
    if (!item.is_string()) {
      return error_at(in.line, in.keyword + " [...] must be a JSON array of strings, e.g. " +
                                   in.keyword + " " + example);
    }
    out.push_back(item.get<std::string>());
  }
  return std::optional<Strings>{std::move(out)};
}

// BuildKit reads a word like "<<EOF" as a heredoc whose body follows on the next lines. Those
// lines would parse as instructions here, so name the problem instead.
Status reject_heredoc(const Instruction& in, std::string_view rest) {
  for (const std::string& word : split_words(rest)) {
    std::string_view marker = word;
    while (!marker.empty() && is_digit(marker.front())) marker.remove_prefix(1);  // "2<<EOF"
    if (!marker.starts_with("<<")) continue;
    marker.remove_prefix(marker.starts_with("<<-") ? 3 : 2);
    if (!marker.empty() && marker.find('<') == npos) {
      return error_at(in.line, in.keyword +
                                   " heredocs (<<EOF) are not supported; put the script in a file "
                                   "in the build context, COPY it and RUN it");
    }
  }
  return {};
}

// ---- Paths ----

std::vector<std::string_view> path_parts(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == npos) end = path.size();
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// "/a/./b/../c" → "/a/c", lexically (as Docker resolves WORKDIR); ".." stops at "/".
std::string normalize(std::string_view path) {
  std::vector<std::string_view> kept;
  for (const std::string_view part : path_parts(path)) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!kept.empty()) kept.pop_back();
      continue;
    }
    kept.push_back(part);
  }
  std::string out;
  for (const std::string_view part : kept) (out += '/') += part;
  return out.empty() ? "/" : out;
}

std::string resolve(const std::string& base, std::string_view path) {
  return normalize(path.starts_with('/') ? std::string(path) : base + "/" + std::string(path));
}

// A COPY destination is relative to WORKDIR; a trailing "/" (or a final "." or "..") says it is
// a directory, which changes what COPY does, so it must survive resolution.
std::string resolve_dest(const std::string& workdir, std::string_view dest) {
  std::string out = resolve(workdir, dest);
  const std::string_view last = path_parts(dest).back();
  if ((last.empty() || last == "." || last == "..") && out != "/") out += '/';
  return out;
}

bool climbs_out(std::string_view path) {
  int depth = 0;
  for (const std::string_view part : path_parts(path)) {
    if (part == "..") {
      if (--depth < 0) return true;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
  }
  return false;
}

bool is_url(std::string_view source) {
  if (source.starts_with("git@")) return true;
  const size_t scheme_end = source.find("://");
  if (scheme_end == npos || scheme_end == 0) return false;
  const std::string_view scheme = source.substr(0, scheme_end);
  return std::all_of(scheme.begin(), scheme.end(),
                     [](char c) { return is_name_char(c) || c == '+' || c == '-' || c == '.'; });
}

Status check_source(const Instruction& in, const std::string& source) {
  const std::string& what = in.keyword;
  if (source.empty()) {
    return error_at(in.line, what +
                                 " has an empty source (a variable that expands to \"\"?); "
                                 "name a path in the build context");
  }
  if (is_url(source)) {
    return error_at(in.line,
                    what + " of URLs is not supported (" + source + "); RUN curl -o ... instead");
  }
  if (source.starts_with('/')) {
    return error_at(in.line, what + " source " + source +
                                 " is absolute; name it relative to the build context, e.g. " +
                                 normalize(source).substr(1));
  }
  if (climbs_out(source)) {
    return error_at(in.line, what + " source " + source +
                                 " is outside the build context; move it into the context dir");
  }
  return {};
}

// ---- Build args ----

// Docker's automatic platform ARGs. A sandbox runs the host's architecture, so build and target
// platform are the same.
const Vars& platform_args() {
  static const Vars args = [] {
    const std::string arch = host_goarch();
    Vars vars;
    for (const std::string prefix : {"BUILD", "TARGET"}) {
      vars[prefix + "PLATFORM"] = "linux/" + arch;
      vars[prefix + "OS"] = "linux";
      vars[prefix + "ARCH"] = arch;
      vars[prefix + "VARIANT"] = "";
    }
    return vars;
  }();
  return args;
}

// Docker passes these build args to RUN without an ARG line, and does not warn about them.
bool is_proxy_arg(const std::string& name) {
  static const std::set<std::string> kNames = {
      "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "FTP_PROXY",
      "ftp_proxy",  "NO_PROXY",   "no_proxy",    "ALL_PROXY",   "all_proxy"};
  return kNames.contains(name);
}

// ---- Instructions ----

// Instructions about how a container starts or is described. A template has none of that, so a
// Dockerfile that works elsewhere still builds, and the user hears what was dropped.
const char* skipped_reason(const std::string& keyword) {
  static const std::map<std::string, const char*> kReasons = {
      {"HEALTHCHECK", "write the check as READY <shell command> (it must exit 0 when ready)"},
      {"STOPSIGNAL", "sandboxes have no start command to signal"},
      {"EXPOSE", "every port of a sandbox is reachable through get_host(port)"},
      {"LABEL", "templates carry no labels"},
      {"MAINTAINER", "templates carry no labels"},
      {"VOLUME", "sandboxes have no volumes; files at that path stay part of the template"},
      {"SHELL",
       "RUN always uses /bin/sh -c; for another shell write RUN [\"/bin/bash\", \"-c\", \"...\"]"},
      {"ONBUILD", "templates keep no triggers for later builds"},
  };
  const auto found = kReasons.find(keyword);
  return found == kReasons.end() ? nullptr : found->second;
}

class Parser {
 public:
  Parser(const Vars& build_args, const BaseImage& base)
      : build_args_(build_args), env_(base.env), workdir_(normalize(base.workdir)) {}

  Status add(const Instruction& in) {
    if (const char* reason = skipped_reason(in.keyword)) {
      if (!from_seen_) return before_from(in);
      warnings_.push_back(warning_at(in.line, in.keyword + " is ignored: " + reason));
      return {};
    }
    using Handler = Status (Parser::*)(const Instruction&);
    static const std::map<std::string, Handler> kHandlers = {
        {"FROM", &Parser::from},        {"RUN", &Parser::run},    {"COPY", &Parser::copy},
        {"ADD", &Parser::copy},         {"ENV", &Parser::env},    {"WORKDIR", &Parser::workdir},
        {"USER", &Parser::user},        {"ARG", &Parser::arg},    {"CMD", &Parser::start},
        {"ENTRYPOINT", &Parser::start}, {"READY", &Parser::ready}};
    const auto handler = kHandlers.find(in.keyword);
    if (handler == kHandlers.end()) {
      return error_at(in.line, "unknown instruction " + in.keyword +
                                   "; a Sandboxfile supports FROM, RUN, COPY, ADD, ENV, WORKDIR, "
                                   "USER, ARG, CMD, ENTRYPOINT, READY");
    }
    if (!from_seen_ && in.keyword != "FROM" && in.keyword != "ARG") return before_from(in);
    return (this->*handler->second)(in);
  }

  Result<Sandboxfile> finish() {
    if (!from_seen_) {
      return Error::with_message(
          "Sandboxfile: no FROM instruction; start with FROM <image>, e.g. FROM base",
          kErrBadInput);
    }
    for (const auto& [name, value] : build_args_) {
      if (declared_.contains(name) || is_proxy_arg(name)) continue;
      warnings_.push_back("Sandboxfile: --build-arg " + name + " is unused; no ARG " + name +
                          " declares it");
    }
    Sandboxfile out{std::move(steps_), std::move(warnings_), start_cmd(), ready_cmd_};
    return out;
  }

 private:
  static Status before_from(const Instruction& in) {
    return error_at(in.line, in.keyword +
                                 " comes before FROM; start with FROM <image> (only ARG may "
                                 "come before it)");
  }

  Step& new_step(const Instruction& in, Kind kind) {
    Step& step = steps_.emplace_back();
    step.kind = kind;
    step.line = in.line;
    step.text = in.text;
    return step;
  }

  Status from(const Instruction& in) {
    if (from_seen_) {
      return error_at(in.line,
                      "multi-stage builds are not supported; build the first stage as "
                      "its own template and FROM it");
    }
    std::string_view rest = in.rest;
    for (const Flag& flag : take_flags(rest)) {
      if (Status st = check_platform(in.line, flag); !st) return st;
    }
    const Strings words = split_words(rest);
    if (words.empty()) return error_at(in.line, "FROM needs an image, e.g. FROM base");
    if (words.size() != 1 && !(words.size() == 3 && upper(words[1]) == "AS")) {
      return error_at(in.line,
                      "FROM takes an image and an optional AS name, e.g. FROM "
                      "debian:bookworm AS build");
    }
    Result<std::string> image = expand(in.line, words[0]);
    if (!image) return image.error();
    if (image->empty()) {
      return error_at(in.line, "FROM " + words[0] +
                                   " names no image after substitution; give the ARG a default "
                                   "or pass --build-arg");
    }
    from_seen_ = true;
    new_step(in, Kind::kFrom).args = {*image};
    return {};
  }

  // Single-stage builds gain nothing from --platform but a mismatch, which is worth stopping.
  Status check_platform(int line, const Flag& flag) {
    if (flag.name != "platform") {
      return error_at(line, "FROM --" + flag.name + " is not supported; remove the option");
    }
    Result<std::string> platform = expand(line, flag.value.value_or(""));
    if (!platform) return platform.error();
    const std::string& host = platform_args().at("TARGETPLATFORM");
    if (*platform == host || platform->starts_with(host + "/")) return {};
    return error_at(line, "FROM --platform=" + *platform +
                              " does not match this host; sandboxes "
                              "run " +
                              host + " images, so drop the option");
  }

  Status run(const Instruction& in) {
    std::string_view rest = in.rest;
    const std::vector<Flag> flags = take_flags(rest);
    if (!flags.empty()) {
      return error_at(in.line, "RUN --" + flags[0].name + " is not supported; remove the option");
    }
    if (rest.empty())
      return error_at(in.line, "RUN needs a command, e.g. RUN apt-get install -y jq");
    Result<std::optional<Strings>> exec = json_strings(in, rest, R"(["/bin/echo", "hi"])");
    if (!exec) return exec.error();
    Strings argv;
    if (*exec) {
      if ((*exec)->empty())
        return error_at(in.line, R"(RUN [] needs a command, e.g. RUN ["/bin/echo", "hi"])");
      argv = std::move(**exec);
    } else {
      if (Status st = reject_heredoc(in, rest); !st) return st;
      argv = {"/bin/sh", "-c", std::string(rest)};
    }
    Step& step = new_step(in, Kind::kRun);
    step.args = std::move(argv);
    step.env = run_env();
    return {};
  }

  Status copy(const Instruction& in) {
    std::string_view rest = in.rest;
    std::string chown;
    for (const Flag& flag : take_flags(rest)) {
      if (Status st = copy_flag(in, flag, chown); !st) return st;
    }
    Result<Strings> words = copy_words(in, rest);
    if (!words) return words.error();
    if (words->size() < 2) {
      return error_at(in.line, in.keyword + " needs a source and a destination, e.g. " +
                                   in.keyword + " app.py /app/");
    }
    const std::string dest_word = words->back();
    words->pop_back();
    for (const std::string& source : *words) {
      if (Status st = check_source(in, source); !st) return st;
    }
    if (dest_word.empty()) {
      return error_at(in.line, in.keyword + " has an empty destination; name a path, e.g. /app/");
    }
    const std::string dest = resolve_dest(workdir_, dest_word);
    if (words->size() > 1 && !dest.ends_with('/')) {
      return error_at(in.line, in.keyword +
                                   " of several sources needs a directory destination "
                                   "ending in /, e.g. " +
                                   dest + "/");
    }
    Step& step = new_step(in, Kind::kCopy);
    step.args = std::move(*words);
    step.args.push_back(dest);
    step.chown = chown;
    step.add = in.keyword == "ADD";
    return {};
  }

  Status copy_flag(const Instruction& in, const Flag& flag, std::string& chown) {
    if (flag.name == "chown") {
      Result<std::string> value = expand(in.line, flag.value.value_or(""));
      if (!value) return value.error();
      if (value->empty()) {
        return error_at(in.line,
                        in.keyword + " --chown needs user[:group], e.g. --chown=1000:1000");
      }
      chown = *value;
      return {};
    }
    if (flag.name == "link") return {};  // only changes how Docker stores the layer
    if (flag.name == "from") {
      return error_at(in.line, in.keyword +
                                   " --from is not supported (multi-stage builds are not "
                                   "supported); copy from the build context instead");
    }
    if (flag.name == "chmod") {
      return error_at(in.line,
                      in.keyword + " --chmod is not supported; RUN chmod after the " + in.keyword);
    }
    return error_at(in.line, in.keyword + " --" + flag.name +
                                 " is not supported; the only option is --chown=user[:group]");
  }

  // Sources and destination, expanded: from a JSON array (for names with spaces) or words.
  Result<Strings> copy_words(const Instruction& in, std::string_view rest) {
    Result<std::optional<Strings>> json = json_strings(in, rest, R"(["my file", "/app/"])");
    if (!json) return json.error();
    if (!*json) {
      if (Status st = reject_heredoc(in, rest); !st) return st.error();
    }
    const bool quotes = !*json;
    const Strings raw = *json ? **json : split_words(rest);
    Strings out;
    for (const std::string& word : raw) {
      Result<std::string> expanded = expand(in.line, word, quotes);
      if (!expanded) return expanded.error();
      out.push_back(std::move(*expanded));
    }
    return out;
  }

  Status env(const Instruction& in) {
    Result<Pairs> pairs = env_pairs(in);
    if (!pairs) return pairs.error();
    for (const auto& [key, value] : *pairs) env_[key] = value;
    new_step(in, Kind::kEnv).pairs = std::move(*pairs);
    return {};
  }

  // All values expand with the variables from before this line, as in Docker: in
  // "ENV A=2 B=$A", B gets the earlier A.
  Result<Pairs> env_pairs(const Instruction& in) {
    std::string_view after_first = in.rest;
    const std::string first = next_word(after_first);
    if (first.empty()) return error_at(in.line, "ENV needs NAME=value, e.g. ENV LANG=C.UTF-8");
    if (first.find('=') == npos) return legacy_env(in, first, after_first);
    Pairs pairs;
    for (const std::string& word : split_words(in.rest)) {
      const size_t eq = word.find('=');
      if (eq == npos || eq == 0) {
        return error_at(in.line, "ENV " + word +
                                     " is not NAME=value; quote values with spaces, as in ENV "
                                     "NAME=\"a b\"");
      }
      Result<std::string> value = expand(in.line, std::string_view(word).substr(eq + 1));
      if (!value) return value.error();
      pairs.emplace_back(word.substr(0, eq), std::move(*value));
    }
    return pairs;
  }

  // "ENV NAME the rest of the line": the older form, one variable.
  Result<Pairs> legacy_env(const Instruction& in, const std::string& name, std::string_view value) {
    if (value.empty()) {
      return error_at(in.line, "ENV " + name + " needs a value; write ENV " + name + "=value");
    }
    Result<std::string> expanded = expand(in.line, value);
    if (!expanded) return expanded.error();
    return Pairs{{name, std::move(*expanded)}};
  }

  Status workdir(const Instruction& in) {
    if (in.rest.empty()) return error_at(in.line, "WORKDIR needs a path, e.g. WORKDIR /app");
    Result<std::string> path = expand(in.line, in.rest);  // the whole rest: spaces are allowed
    if (!path) return path.error();
    if (path->empty()) {
      return error_at(in.line, "WORKDIR " + in.rest +
                                   " is empty after substitution; give the variable a value");
    }
    workdir_ = resolve(workdir_, *path);
    new_step(in, Kind::kWorkdir).args = {workdir_};
    return {};
  }

  Status user(const Instruction& in) {
    const Strings words = split_words(in.rest);
    if (words.size() != 1) {
      return error_at(in.line, "USER takes one user[:group], e.g. USER user or USER 1000:1000");
    }
    Result<std::string> user = expand(in.line, words[0]);
    if (!user) return user.error();
    if (user->empty()) {
      return error_at(
          in.line, "USER " + words[0] + " is empty after substitution; give the variable a value");
    }
    new_step(in, Kind::kUser).args = {*user};
    return {};
  }

  // CMD and ENTRYPOINT: the last of each counts. Docker substitutes no variables in them (the
  // shell does, at start).
  Status start(const Instruction& in) {
    const std::string_view rest = in.rest;
    if (rest.empty()) {
      return error_at(in.line, in.keyword + " needs a command, e.g. " + in.keyword +
                                   " python3 -m http.server 9000");
    }
    Result<std::optional<Strings>> exec = json_strings(in, rest, R"(["python3", "app.py"])");
    if (!exec) return exec.error();
    if (!*exec) {
      if (Status st = reject_heredoc(in, rest); !st) return st;
    }
    StartForm form{*exec ? std::move(**exec) : Strings{std::string(rest)}, !*exec};
    (in.keyword == "CMD" ? cmd_ : entrypoint_) = std::move(form);
    return {};
  }

  Status ready(const Instruction& in) {
    if (in.rest.empty() || in.rest.starts_with('[')) {
      return error_at(in.line,
                      "READY takes a shell command that exits 0 once the start command is "
                      "ready, e.g. READY curl -sf http://localhost:9000/");
    }
    if (Status st = reject_heredoc(in, in.rest); !st) return st;
    ready_cmd_ = in.rest;
    return {};
  }

  // As Docker: a shell-form ENTRYPOINT ignores CMD; an exec-form one takes CMD as arguments (a
  // shell-form CMD as /bin/sh -c "<cmd>").
  std::optional<std::string> start_cmd() const {
    if (!cmd_ && !entrypoint_) return std::nullopt;
    if (!entrypoint_) return cmd_->shell ? cmd_->words.front() : exec_line(cmd_->words);
    if (entrypoint_->shell) return entrypoint_->words.front();
    Strings argv = entrypoint_->words;
    if (cmd_ && cmd_->shell) {
      argv.insert(argv.end(), {"/bin/sh", "-c", cmd_->words.front()});
    } else if (cmd_) {
      argv.insert(argv.end(), cmd_->words.begin(), cmd_->words.end());
    }
    return exec_line(argv);
  }

  // Before FROM, ARGs only serve FROM, so they make no step.
  Status arg(const Instruction& in) {
    const Strings words = split_words(in.rest);
    if (words.empty()) return error_at(in.line, "ARG needs a name, e.g. ARG VERSION=1.0");
    Pairs pairs;
    for (const std::string& word : words) {
      Result<std::pair<std::string, std::string>> declared = declare_arg(in.line, word);
      if (!declared) return declared.error();
      pairs.push_back(std::move(*declared));
    }
    if (from_seen_) new_step(in, Kind::kArg).pairs = std::move(pairs);
    return {};
  }

  // "NAME[=default]" → {name, value}; --build-arg wins over the default.
  Result<std::pair<std::string, std::string>> declare_arg(int line, const std::string& word) {
    const size_t eq = word.find('=');
    const std::string name = word.substr(0, eq);
    if (!is_name(name)) {
      return error_at(
          line, "ARG name " + name + " must be letters, digits and _, not starting with a digit");
    }
    std::optional<std::string> value = inherited(name);
    if (eq != npos) {
      Result<std::string> fallback = expand(line, std::string_view(word).substr(eq + 1));
      if (!fallback) return fallback.error();
      value = std::move(*fallback);
    }
    if (const auto given = build_args_.find(name); given != build_args_.end())
      value = given->second;
    declared_.insert(name);
    (from_seen_ ? stage_args_ : meta_args_)[name] = value;
    return std::pair{name, value.value_or("")};
  }

  // An ARG without a default after FROM takes the value of the same ARG declared before FROM;
  // Docker's automatic platform ARGs count as declared there.
  std::optional<std::string> inherited(const std::string& name) const {
    if (const auto meta = meta_args_.find(name); meta != meta_args_.end()) return meta->second;
    if (const auto auto_arg = platform_args().find(name); auto_arg != platform_args().end()) {
      return auto_arg->second;
    }
    return std::nullopt;
  }

  // Before FROM only ARGs exist; after it ENV (the image's included) wins over ARG.
  Variable lookup(const std::string& name) const {
    if (!from_seen_) {
      if (const auto meta = meta_args_.find(name); meta != meta_args_.end()) {
        return {true, meta->second};
      }
      const auto auto_arg = platform_args().find(name);
      if (auto_arg != platform_args().end()) return {true, auto_arg->second};
      return {};
    }
    if (const auto env = env_.find(name); env != env_.end()) return {true, env->second};
    if (const auto arg = stage_args_.find(name); arg != stage_args_.end()) {
      return {true, arg->second};
    }
    return {};
  }

  Result<std::string> expand(int line, std::string_view word, bool quotes = true) {
    Expander expander([this](const std::string& name) { return lookup(name); }, line);
    Result<std::string> out = expander.expand(word, quotes);
    // A NUL in a path or name cuts it short at every syscall: "..\0/x" passes the build
    // context check and then reads "..". The text has none (see parse), so it came from a
    // JSON "\u0000", a --build-arg or the image's ENV.
    if (out && out->find('\0') != npos) {
      return error_at(line,
                      "a value here contains a NUL byte (from \\u0000, a --build-arg or "
                      "the image's ENV); remove it");
    }
    for (const std::string& name : expander.undefined()) {
      if (!warned_.insert({line, name}).second) continue;
      warnings_.push_back(warning_at(line, "$" + name +
                                               " is not defined and expands to \"\"; declare it "
                                               "with ARG or ENV before this line"));
    }
    return out;
  }

  // Build args reach RUN as environment variables, except where an ENV of that name wins.
  Vars run_env() const {
    Vars env;
    for (const auto& [name, value] : stage_args_) {
      if (value && !env_.contains(name)) env[name] = *value;
    }
    for (const auto& [name, value] : build_args_) {
      if (is_proxy_arg(name) && !env_.contains(name)) env.emplace(name, value);
    }
    return env;
  }

  struct StartForm {
    Strings words;  // shell form: the one command line
    bool shell = false;
  };

  const Vars& build_args_;
  std::optional<StartForm> cmd_;
  std::optional<StartForm> entrypoint_;
  std::optional<std::string> ready_cmd_;
  Vars env_;  // the image's ENV, then the Sandboxfile's
  std::string workdir_;
  bool from_seen_ = false;
  std::map<std::string, std::optional<std::string>> meta_args_;   // ARGs before FROM
  std::map<std::string, std::optional<std::string>> stage_args_;  // ARGs after FROM
  std::set<std::string> declared_;                                // every ARG name
  std::set<std::pair<int, std::string>> warned_;                  // undefined variables
  std::vector<Step> steps_;
  std::vector<std::string> warnings_;
};

}  // namespace

std::optional<std::string> copied_to(const Sandboxfile& file, const std::string& name) {
  std::optional<std::string> out;
  for (const Step& step : file.steps) {
    if (step.kind != Kind::kCopy || step.add) continue;
    const std::string& dest = step.args.back();
    const size_t sources = step.args.size() - 1;
    for (size_t i = 0; i < sources; ++i) {
      const std::string source = normalize("/" + step.args[i]);
      if (source == "/" + name) {
        out = dest.ends_with('/') ? dest + name : dest;
      } else if (source == "/") {
        // The whole context's contents go into dest; the caller checks the file is there.
        out = (dest.ends_with('/') ? dest : dest + "/") + name;
      }
    }
  }
  return out;
}

std::string exec_line(const std::vector<std::string>& argv) {
  if (argv.empty()) return "";
  std::string out = "exec";
  for (const std::string& arg : argv) {
    out += " '";
    for (const char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += "'";
  }
  return out;
}

Result<Sandboxfile> parse(const std::string& text,
                          const std::map<std::string, std::string>& build_args,
                          const BaseImage& base) {
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const auto line =
        std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    return error_at(static_cast<int>(line) + 1,
                    "contains a NUL byte; a Sandboxfile is text (saved as UTF-16?)");
  }
  if (base.workdir.find('\0') != std::string::npos) {
    return Error::with_message("Sandboxfile: the FROM image's WorkingDir contains a NUL byte",
                               kErrBadInput);
  }
  const std::vector<std::string_view> lines = split_lines(text);
  if (Status st = check_directives(lines); !st) return st.error();
  Parser parser(build_args, base);
  for (const Instruction& instruction : split_instructions(lines)) {
    if (Status st = parser.add(instruction); !st) return st.error();
  }
  return parser.finish();
}

}  // namespace abx::templates::sandboxfile