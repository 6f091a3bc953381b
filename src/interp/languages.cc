#include "interp/languages.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "interp/driver_sources.h"

namespace abx::interp {

namespace {

std::string json_request_line(const ExecuteRequest& request) {
  const nlohmann::json line = {{"code", request.code}, {"env_vars", request.env_vars}};
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// The bash driver evals the line: it sets the code to run and the commands
// that undo this execution's env_vars afterwards.
std::string bash_request_line(const ExecuteRequest& request) {
  std::string before, after;
  int index = 0;
  for (const auto& [name, value] : request.env_vars) {
    const std::string saved = fmt::format("__abx_saved_{}", index++);
    before += fmt::format("{0}=${{{1}+set}}:${{{1}-}}; export {1}={2}\n", saved, name,
                          bash_ansi_c_quote(value));
    after += fmt::format(
        "if [ \"${{{0}%%:*}}\" = set ]; then export {1}=\"${{{0}#*:}}\"; else unset {1}; fi\n",
        saved, name);
  }
  return fmt::format("__abx_code={} __abx_restore={}\n", bash_ansi_c_quote(before + request.code),
                     bash_ansi_c_quote(after));
}

// E2B's SDKs and kernels accept these short names too.
struct Alias {
  std::string_view alias;
  std::string_view language;
};
constexpr std::array<Alias, 2> kAliases = {{{"js", "javascript"}, {"ts", "typescript"}}};

const std::array<Language, 4>& languages() {
  static const std::array<Language, 4> table = {{
      {"python",
       {"/usr/bin/env", "python3", "-u", "-c", std::string(python_driver_source()),
        std::string(python_charts_source())},
       json_request_line,
       "",
       "",
       "print('{}')"},
      {"javascript",
       {"/usr/bin/env", "node", "-e", std::string(javascript_driver_source())},
       json_request_line,
       "command -v node",
       "javascript contexts need `node` in the sandbox; this template has none (use a template "
       "with nodejs installed)",
       "console.log('{}')"},
      // The JavaScript driver, told to strip each cell's types first.
      {"typescript",
       {"/usr/bin/env", "node", "-e", std::string(javascript_driver_source()), "typescript"},
       json_request_line,
       "command -v node && { test -d /usr/share/nodejs/typescript || node -e "
       "\"require.resolve('typescript')\"; }",
       "typescript contexts need `node` and the typescript package in the sandbox; this template "
       "lacks them (use code-interpreter-v1, or a template with Debian's nodejs and "
       "node-typescript installed)",
       "console.log('{}')"},
      {"bash",
       {"/bin/bash", "--noprofile", "--norc", "-c", std::string(bash_driver_source())},
       bash_request_line,
       "",
       "",
       "echo {}"},
  }};
  return table;
}

// As E2B's server normalizes a language: surrounding blanks dropped, lower case.
std::string normalized_language(std::string_view name) {
  const auto first = name.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  name = name.substr(first, name.find_last_not_of(" \t\r\n") - first + 1);
  std::string lower(name);
  std::ranges::transform(lower, lower.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const Alias& alias : kAliases) {
    if (alias.alias == lower) return std::string(alias.language);
  }
  return lower;
}

}  // namespace

Result<const Language*> find_language(std::string_view name) {
  const std::string wanted = normalized_language(name);
  for (const Language& language : languages()) {
    if (language.name == wanted) return &language;
  }
  return Error{"context language", EINVAL,
               fmt::format("unknown language '{}'; known: python, javascript (js), "
                           "typescript (ts), bash",
                           name)};
}

std::string bash_ansi_c_quote(std::string_view text) {
  std::string out = "$'";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace abx::interp
