// abx completion bash|zsh|fish: a completion script made from the parser's own
// command tree, so it lists every command and flag without a hand-kept copy.
// The scripts complete command names and flags themselves; where a command
// takes a sandbox id or a template they ask `abx __complete` (the live ids and
// names, or nothing when no daemon answers within a second: it never starts
// one); anything else (paths) is left to the shell's file completion, and
// nothing after `--` (a command that runs in the sandbox).
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace abx::cli {
namespace {

struct Node {
  std::string path;                                           // "abx", "abx daemon", …
  std::vector<std::pair<std::string, std::string>> commands;  // name, description
  std::vector<std::string> flags;                             // "--help", "-h", …
  std::vector<std::string> long_flags, short_flags;           // without dashes
};

bool visible(const CLI::App* app) { return !app->get_group().empty(); }

void collect(const CLI::App& app, const std::string& path, std::vector<Node>& out) {
  Node node{path, {}, {}, {}, {}};
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_group().empty()) continue;  // hidden
    for (const auto& name : option->get_lnames()) {
      node.flags.push_back("--" + name);
      node.long_flags.push_back(name);
    }
    for (const auto& name : option->get_snames()) {
      node.flags.push_back("-" + name);
      node.short_flags.push_back(name);
    }
  }
  std::vector<const CLI::App*> subs = app.get_subcommands(visible);
  for (const CLI::App* sub : subs) {
    node.commands.emplace_back(sub->get_name(), sub->get_description());
    for (const auto& alias : sub->get_aliases()) {
      node.commands.emplace_back(alias, sub->get_description());
    }
  }
  out.push_back(node);
  for (const CLI::App* sub : subs) collect(*sub, path + " " + sub->get_name(), out);
}

// 'text' for a shell, a ' inside it closed, escaped and reopened.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += (out.empty() ? "" : " ") + word;
  return out;
}

std::vector<std::string> names(const Node& node) {
  std::vector<std::string> out;
  for (const auto& [name, description] : node.commands) out.push_back(name);
  return out;
}

// The case patterns of every command path below the root, for descending.
std::string path_patterns(const std::vector<Node>& nodes, const char* separator) {
  std::string out;
  for (size_t i = 1; i < nodes.size(); ++i) out += (i > 1 ? separator : "") + quoted(nodes[i].path);
  return out;
}

void bash(const std::vector<Node>& nodes, std::ostream& out) {
  out << "# bash completion for abx (made by `abx completion bash`)\n"
      << "_abx() {\n"
      << "  local cur=${COMP_WORDS[COMP_CWORD]} cmdpath=abx w i commands= flags=\n"
      << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      << "    w=${COMP_WORDS[i]}\n"
      << "    [[ $w == -- ]] && return 0\n"
      << "    [[ $w == -* ]] && continue\n"
      << "    case \"$cmdpath $w\" in\n"
      << "      " << path_patterns(nodes, "|") << ") cmdpath=\"$cmdpath $w\" ;;\n"
      << "    esac\n"
      << "  done\n"
      << "  case $cmdpath in\n";
  for (const Node& node : nodes) {
    out << "    " << quoted(node.path) << ") commands=" << quoted(joined(names(node)))
        << "; flags=" << quoted(joined(node.flags)) << " ;;\n";
  }
  out << "  esac\n"
      << "  if [[ $cur == -* ]]; then\n"
      << "    mapfile -t COMPREPLY < <(compgen -W \"$flags\" -- \"$cur\")\n"
      << "  elif [[ -n $commands ]]; then\n"
      << "    mapfile -t COMPREPLY < <(compgen -W \"$commands\" -- \"$cur\")\n"
      << "  else\n"
      << "    mapfile -t COMPREPLY < <(\"${COMP_WORDS[0]}\" __complete "
         "\"${COMP_WORDS[@]:1:COMP_CWORD}\" 2>/dev/null)\n"
      << "  fi\n"
      << "}\n"
      << "complete -o default -F _abx abx\n";
}

// _describe's "name:description", the name's colons escaped.
std::string described(const std::string& name, const std::string& description) {
  std::string escaped;
  for (const char c : name) escaped += c == ':' ? std::string("\\:") : std::string(1, c);
  return quoted(escaped + ":" + description);
}

void zsh(const std::vector<Node>& nodes, std::ostream& out) {
  out << "#compdef abx\n"
      << "# zsh completion for abx (made by `abx completion zsh`)\n"
      << "_abx() {\n"
      << "  local cmdpath=abx w i\n"
      << "  local -a abx_commands abx_flags\n"
      << "  for ((i = 2; i < CURRENT; i++)); do\n"
      << "    w=${words[i]}\n"
      << "    [[ $w == -- ]] && return 1\n"
      << "    [[ $w == -* ]] && continue\n"
      << "    case \"$cmdpath $w\" in\n"
      << "      (" << path_patterns(nodes, "|") << ") cmdpath=\"$cmdpath $w\" ;;\n"
      << "    esac\n"
      << "  done\n"
      << "  case $cmdpath in\n";
  for (const Node& node : nodes) {
    out << "    (" << quoted(node.path) << ") abx_commands=(";
    for (const auto& [name, description] : node.commands)
      out << " " << described(name, description);
    out << " ); abx_flags=(" << joined(node.flags) << ") ;;\n";
  }
  out << "  esac\n"
      << "  if [[ ${words[CURRENT]} == -* ]]; then\n"
      << "    compadd -- $abx_flags\n"
      << "  elif (( ${#abx_commands} )); then\n"
      << "    _describe -t commands 'abx command' abx_commands\n"
      << "  else\n"
      << "    local -a abx_values\n"
      << "    abx_values=(${(f)\"$(${words[1]} __complete \"${(@)words[2,CURRENT]}\" "
         "2>/dev/null)\"})\n"
      << "    if (( ${#abx_values} )); then compadd -- $abx_values; else _files; fi\n"
      << "  fi\n"
      << "}\n"
      << "if [[ $funcstack[1] == _abx ]]; then _abx \"$@\"; else compdef _abx abx; fi\n";
}

void fish(const std::vector<Node>& nodes, std::ostream& out) {
  out << "# fish completion for abx (made by `abx completion fish`)\n"
      << "function __abx_path\n"
      << "    set -l cmdpath abx\n"
      << "    for w in (commandline -opc)[2..-1]\n"
      << "        if test \"$w\" = --\n"
      << "            echo --\n"
      << "            return\n"
      << "        end\n"
      << "        string match -q -- '-*' $w; and continue\n"
      << "        switch \"$cmdpath $w\"\n"
      << "            case " << path_patterns(nodes, " ") << "\n"
      << "                set cmdpath \"$cmdpath $w\"\n"
      << "        end\n"
      << "    end\n"
      << "    echo $cmdpath\n"
      << "end\n"
      << "function __abx_values\n"
      << "    set -l words (commandline -opc)\n"
      << "    set -l cur (commandline -ct)\n"
      << "    $words[1] __complete $words[2..-1] \"$cur\" 2>/dev/null\n"
      << "end\n"
      << "function __abx_has_values\n"
      << "    test (__abx_path) != --; or return 1\n"
      << "    set -l values (__abx_values)\n"
      << "    test (count $values) -gt 0\n"
      << "end\n"
      << "complete -c abx -f -n __abx_has_values -a '(__abx_values)'\n";
  for (const Node& node : nodes) {
    const std::string when = " -n " + quoted("test (__abx_path) = \"" + node.path + "\"");
    for (const auto& [name, description] : node.commands) {
      out << "complete -c abx -f" << when << " -a " << quoted(name) << " -d " << quoted(description)
          << "\n";
    }
    for (const auto& name : node.long_flags)
      out << "complete -c abx" << when << " -l " << name << "\n";
    for (const auto& name : node.short_flags)
      out << "complete -c abx" << when << " -s " << name << "\n";
  }
}

}  // namespace

void add_completion(CLI::App& root, Commands& commands) {
  auto shell = std::make_shared<std::string>();
  auto* app = root.add_subcommand("completion", "Print a shell completion script");
  app->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  app->footer(
      "Installed by `make install`; to try one now: source <(abx completion bash), "
      "source <(abx completion zsh), abx completion fish | source");
  commands.push_back({app, [shell, &root]() -> Result<int> {
                        std::vector<Node> nodes;
                        collect(root, "abx", nodes);
                        std::ostringstream script;
                        if (*shell == "bash") bash(nodes, script);
                        if (*shell == "zsh") zsh(nodes, script);
                        if (*shell == "fish") fish(nodes, script);
                        std::cout << script.str();
                        return 0;
                      }});
}

}  // namespace abx::cli
