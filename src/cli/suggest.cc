#include "cli/suggest.h"

#include <algorithm>
#include <vector>

namespace abx::cli {
namespace {

constexpr size_t kMaxEdits = 2;

std::vector<const CLI::App*> visible_commands(const CLI::App& parent) {
  return parent.get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });
}

}  // namespace

std::optional<std::string> nearest_command(const CLI::App& parent, const std::string& word) {
  std::optional<std::string> best;
  size_t best_edits = kMaxEdits + 1;
  std::vector<std::string> begun;
  for (const CLI::App* sub : visible_commands(parent)) {
    std::vector<std::string> names = sub->get_aliases();
    names.insert(names.begin(), sub->get_name());
    for (const auto& name : names) {
      const size_t edits = edit_distance(word, name);
      // A short word is far from everything: "x" is not "ls" mistyped.
      if (edits < best_edits && edits < std::max<size_t>(name.size(), word.size()) / 2 + 1) {
        best = sub->get_name();
        best_edits = edits;
      }
    }
    if (word.size() >= 2 && sub->get_name().rfind(word, 0) == 0) begun.push_back(sub->get_name());
  }
  if (!best && begun.size() == 1) return begun.front();
  return best;
}

std::optional<std::string> nearest_flag(const CLI::App& command, const std::string& word) {
  std::optional<std::string> best;
  size_t best_edits = kMaxEdits + 1;
  for (const CLI::Option* option : command.get_options()) {
    for (const auto& name : option->get_lnames()) {
      const std::string flag = "--" + name;
      const size_t edits = edit_distance(word.substr(0, word.find('=')), flag);
      if (edits < best_edits && edits < flag.size() / 2) {
        best = flag;
        best_edits = edits;
      }
    }
  }
  return best;
}

bool has_command(const CLI::App& parent, const std::string& name) {
  const auto subs = parent.get_subcommands([](const CLI::App*) { return true; });
  return std::any_of(subs.begin(), subs.end(),
                     [&](const CLI::App* sub) { return sub->check_name(name); });
}

std::string unknown_command_message(const CLI::App& parent, const std::string& path,
                                    const std::string& word) {
  std::string out = "unknown command '" + word + "'";
  if (auto guess = nearest_command(parent, word))
    out += "; did you mean `" + path + " " + *guess + "`?";
  return out + " (`" + (path == "abx" ? std::string("abx help") : path + " --help") +
         "` lists them all)";
}

}  // namespace abx::cli
