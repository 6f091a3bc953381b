#include "daemon/e2b_template_steps.h"

#include <algorithm>

#include "common/json_text.h"

namespace abx::daemon::e2b_steps {
namespace {

using nlohmann::json;

constexpr size_t kMaxSteps = 100;  // the builder's own layer limit is a little higher
constexpr size_t kMaxArgBytes = 64 * 1024;
constexpr const char* kE2bBaseImage = "e2bdev/base";

Error bad(const std::string& where, const std::string& what) {
  return Error::with_message(where + ": " + what, kErrBadInput);
}

bool has_line_break(const std::string& text) {
  return text.find_first_of("\r\n") != std::string::npos || text.find('\0') != std::string::npos;
}

// A word inside "..." in the Sandboxfile: only \, " and $ are special there.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '\\' || c == '"' || c == '$') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A string of a JSON-form COPY: the builder expands $ and \ in it (no quotes there).
std::string copy_word(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '\\' || c == '$') escaped += '\\';
    escaped += c;
  }
  return json_text::dump(json(escaped));
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || name.size() > 256 || (name[0] >= '0' && name[0] <= '9')) return false;
  for (const char c : name)
    if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

// A user[:group] name: no blanks, quotes or line breaks.
bool valid_user(const std::string& user) {
  if (user.empty() || user.size() > 256) return false;
  for (const char c : user)
    if (c <= ' ' || c == '"' || c == '\'' || c == '\\' || c == '$' || c == 0x7f) return false;
  return true;
}

Result<std::vector<std::string>> args_of(const json& step, const std::string& where) {
  std::vector<std::string> args;
  const auto it = step.find("args");
  if (it == step.end() || it->is_null()) return args;
  if (!it->is_array()) return bad(where, "args must be an array of strings");
  for (const auto& arg : *it) {
    if (!arg.is_string()) return bad(where, "args must be an array of strings");
    if (arg.get_ref<const std::string&>().size() > kMaxArgBytes)
      return bad(where, "an argument is longer than 64 KiB");
    args.push_back(arg.get<std::string>());
  }
  return args;
}

bool has_glob(const std::string& path) { return path.find_first_of("*?[") != std::string::npos; }

// Writes the steps; tracks the user so that a RUN with its own user switches back.
class Writer {
 public:
  Writer(Translated& out, std::string user) : out_(out), user_(std::move(user)) {}

  Status step(const json& step, size_t index) {
    const std::string where = "steps[" + std::to_string(index) + "]";
    if (!step.is_object()) return bad(where, "must be an object");
    const auto type_it = step.find("type");
    if (type_it == step.end() || !type_it->is_string()) return bad(where, "type is missing");
    const std::string type = type_it->get<std::string>();
    const auto force = step.find("force");
    if (force != step.end() && force->is_boolean() && force->get<bool>()) out_.no_cache = true;
    auto args = args_of(step, where + " (" + type + ")");
    if (!args) return args.error();
    const std::string at = where + " (" + type + ")";
    current_ = std::to_string(index + 1);  // E2B counts the base as step 0
    if (type == "RUN") return run(*args, at);
    if (type == "ENV") return env(*args, at);
    if (type == "WORKDIR") return workdir(*args, at);
    if (type == "USER") return user(*args, at);
    if (type == "COPY") return copy(step, *args, at);
    return bad(where,
               "unknown step type '" + type + "'; RUN, COPY, ENV, WORKDIR and USER are known");
  }

 private:
  void line(const std::string& text) {
    out_.sandboxfile += text + "\n";
    out_.step_names.push_back(current_);
  }

  Status run(const std::vector<std::string>& args, const std::string& at) {
    if (args.empty() || args.size() > 2) return bad(at, "args are [command] or [command, user]");
    const std::string exec = json_text::dump(json::array({"/bin/sh", "-c", args[0]}));
    if (args.size() == 1 || args[1].empty() || args[1] == user_) {
      line("RUN " + exec);
      return {};
    }
    if (!valid_user(args[1])) return bad(at, "user '" + args[1] + "' is not a user name");
    out_.runs_as[current_] = {args[0], args[1]};
    line("USER " + args[1]);
    line("RUN " + exec);
    line("USER " + (user_.empty() ? std::string("root") : user_));
    return {};
  }

  Status env(const std::vector<std::string>& args, const std::string& at) {
    if (args.empty() || args.size() % 2 != 0) return bad(at, "args are [name, value, ...]");
    std::string text = "ENV";
    for (size_t i = 0; i < args.size(); i += 2) {
      if (!valid_env_name(args[i])) return bad(at, "'" + args[i] + "' is not a variable name");
      if (has_line_break(args[i + 1])) return bad(at, "a value may not hold a line break");
      text += " " + args[i] + "=" + quoted(args[i + 1]);
    }
    line(text);
    return {};
  }

  Status workdir(const std::vector<std::string>& args, const std::string& at) {
    if (args.size() != 1 || args[0].empty()) return bad(at, "args are [path]");
    if (has_line_break(args[0])) return bad(at, "a path may not hold a line break");
    line("WORKDIR " + quoted(args[0]));
    return {};
  }

  Status user(const std::vector<std::string>& args, const std::string& at) {
    if (args.size() != 1 || !valid_user(args[0])) return bad(at, "args are [user]");
    user_ = args[0];
    line("USER " + args[0]);
    return {};
  }

  // [src, dest, user, mode]; src is relative to the upload `filesHash` names
  // (the SDK's tar holds the matched files by their path in its context).
  Status copy(const json& step, const std::vector<std::string>& args, const std::string& at) {
    if (args.size() < 2 || args[0].empty() || args[1].empty())
      return bad(at, "args are [src, dest, user, mode]");
    const auto hash_it = step.find("filesHash");
    if (hash_it == step.end() || !hash_it->is_string() || !valid_hash(hash_it->get<std::string>()))
      return bad(at, "filesHash must be the sha256 (hex) of the uploaded files");
    const std::string hash = hash_it->get<std::string>();
    const std::string& src = args[0];
    if (src.starts_with('/') || has_line_break(src) || has_line_break(args[1]))
      return bad(at, "src must be a path relative to the context");
    std::string dest = args[1];
    // E2B copies what a pattern matches into dest as a directory.
    if (has_glob(src) && !dest.ends_with('/')) dest += '/';
    std::string text = "COPY ";
    if (args.size() > 2 && !args[2].empty()) {
      if (!valid_user(args[2])) return bad(at, "user '" + args[2] + "' is not a user[:group]");
      text += "--chown=" + args[2] + " ";
    }
    if (args.size() > 3 && !args[3].empty())
      out_.notes.push_back(at + ": mode " + args[3] + " is not applied (the files keep theirs)");
    line(text + "[" + copy_word(upload_dir_of(hash) + "/" + src) + ", " + copy_word(dest) + "]");
    if (std::find(out_.hashes.begin(), out_.hashes.end(), hash) == out_.hashes.end())
      out_.hashes.push_back(hash);
    return {};
  }

  Translated& out_;
  std::string user_;
  std::string current_;  // E2B's name of the step being written
};

Result<std::string> optional_string(const json& request, const char* key) {
  const auto it = request.find(key);
  if (it == request.end() || it->is_null()) return std::string();
  if (!it->is_string()) return bad(key, "must be a string");
  if (it->get_ref<const std::string&>().size() > kMaxArgBytes) return bad(key, "is over 64 KiB");
  return it->get<std::string>();
}

// What FROM names: fromTemplate, else fromImage (the SDK's default is e2bdev/base).
Result<std::string> from_of(const json& request) {
  auto from_template = optional_string(request, "fromTemplate");
  if (!from_template) return from_template.error();
  auto from_image = optional_string(request, "fromImage");
  if (!from_image) return from_image.error();
  const auto registry = request.find("fromImageRegistry");
  if (registry != request.end() && !registry->is_null())
    return bad("fromImageRegistry",
               "registry credentials are not supported here; pull the image with `abx template "
               "pull` and build FROM that template");
  std::string from = !from_template->empty() ? *from_template
                     : !from_image->empty()  ? from_of_image(*from_image)
                                             : std::string("base");
  if (has_line_break(from) || from.find_first_of(" \t\"'$\\") != std::string::npos)
    return bad("fromImage", "'" + from + "' is not an image or template name");
  return from;
}

}  // namespace

bool valid_hash(const std::string& hash) {
  if (hash.size() != 64) return false;
  for (const char c : hash)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string from_of_image(const std::string& image) {
  if (image == kE2bBaseImage || image == std::string(kE2bBaseImage) + ":latest") return "base";
  const size_t slash = image.find('/');
  const std::string head = slash == std::string::npos ? "" : image.substr(0, slash);
  const bool has_host = head == "localhost" || head.find_first_of(".:") != std::string::npos;
  if (has_host || image.starts_with("debian:")) return image;
  // A Docker Hub name: "ubuntu:22.04" is docker.io/library/ubuntu:22.04.
  if (slash == std::string::npos && image.find(':') != std::string::npos)
    return "docker.io/library/" + image;
  if (slash != std::string::npos) return "docker.io/" + image;
  return image;  // a bare name: a template
}

std::string upload_dir_of(const std::string& hash) { return "e2b-files-" + hash; }

std::string step_name(const Translated& steps, size_t index) {
  return index < steps.step_names.size() ? steps.step_names[index] : "finalize";
}

Result<Translated> translate(const nlohmann::json& request, const BaseUserFn& base_user) {
  if (!request.is_object()) return bad("body", "must be a JSON object");
  Translated out;
  auto from = from_of(request);
  if (!from) return from.error();
  out.from = *from;
  const auto force = request.find("force");
  if (force != request.end() && !force->is_null() && !force->is_boolean())
    return bad("force", "must be true or false");
  out.no_cache = force != request.end() && force->is_boolean() && force->get<bool>();
  out.sandboxfile = "FROM " + out.from + "\n";
  out.step_names.push_back("base");
  Writer writer(out, base_user ? base_user(out.from) : std::string());
  const auto steps = request.find("steps");
  if (steps != request.end() && !steps->is_null()) {
    if (!steps->is_array()) return bad("steps", "must be an array");
    if (steps->size() > kMaxSteps)
      return bad("steps", "more than " + std::to_string(kMaxSteps) + " steps; join RUN commands");
    for (size_t i = 0; i < steps->size(); ++i)
      if (Status st = writer.step((*steps)[i], i); !st) return st.error();
  }
  auto start_cmd = optional_string(request, "startCmd");
  if (!start_cmd) return start_cmd.error();
  auto ready_cmd = optional_string(request, "readyCmd");
  if (!ready_cmd) return ready_cmd.error();
  if (!start_cmd->empty())
    out.sandboxfile += "CMD " + json_text::dump(json::array({"/bin/sh", "-c", *start_cmd})) + "\n";
  if (!ready_cmd->empty()) {
    if (has_line_break(*ready_cmd)) return bad("readyCmd", "may not hold a line break");
    out.sandboxfile += "READY " + *ready_cmd + "\n";
  }
  return out;
}

}  // namespace abx::daemon::e2b_steps
