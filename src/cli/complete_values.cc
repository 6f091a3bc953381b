#include "cli/complete_values.h"

#include <chrono>
#include <iostream>

#include "cli/api.h"

namespace abx::cli {
namespace {

// A completion that waits is worse than none: a daemon that does not answer
// within this gets none.
constexpr auto kPatience = std::chrono::milliseconds(1000);

enum class Kind { kNone, kSandboxIds, kTemplates };

// Which values an option takes, from its help text: every sandbox id
// positional reads "Sandbox id(s)…", every template one "Template name…"
// (their help and completion cannot drift apart).
Kind kind_of(const CLI::Option& option) {
  const std::string& help = option.get_description();
  if (help.starts_with("Sandbox id")) return Kind::kSandboxIds;
  if (help.starts_with("Template name")) return Kind::kTemplates;
  return Kind::kNone;
}

const CLI::App* subcommand(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (sub->check_name(word)) return sub;
  return nullptr;
}

bool takes_value(const CLI::Option* option) { return option && option->get_type_size_max() > 0; }

// The kind of the positional argument at index `index` of `app`.
Kind positional_kind(const CLI::App& app, size_t index) {
  auto positionals =
      app.get_options([](const CLI::Option* option) { return option->get_positional(); });
  for (const CLI::Option* option : positionals) {
    const int takes = option->get_items_expected_max();
    if (takes <= 0) continue;
    if (index < static_cast<size_t>(takes)) return kind_of(*option);
    index -= static_cast<size_t>(takes);
  }
  return Kind::kNone;
}

// What the last word is: found by walking the words before it through the
// parser's tree as CLI11 would read them.
Kind wanted(const CLI::App& root, const std::vector<std::string>& words) {
  const CLI::App* app = &root;
  size_t positionals = 0;
  const CLI::Option* pending = nullptr;  // a flag whose value the next word is
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    if (pending) {
      pending = nullptr;
      continue;
    }
    if (word == "--") return Kind::kNone;  // the command run in the sandbox
    if (word.starts_with("-")) {
      const CLI::Option* option = app->get_option_no_throw(word);
      if (takes_value(option) && word.find('=') == std::string::npos) pending = option;
      continue;
    }
    const CLI::App* sub = positionals == 0 ? subcommand(*app, word) : nullptr;
    if (sub) {
      app = sub;
    } else {
      ++positionals;
    }
  }
  if (pending) return kind_of(*pending);
  if (!words.empty() && words.back().starts_with("-")) return Kind::kNone;
  return positional_kind(*app, positionals);
}

Result<json> get(const Endpoint& endpoint, const std::string& target) {
  auto response = http::Client(endpoint.url).send(api_request(endpoint, "GET", target), kPatience);
  if (!response) return response.error();
  if (response->status != 200) return Error{"status " + std::to_string(response->status)};
  return json::parse(response->body, nullptr, false);
}

std::vector<std::string> values(Kind kind) {
  std::vector<std::string> out;
  auto endpoint = resolve_endpoint(/*start_daemon=*/false);
  if (!endpoint) return out;
  if (kind == Kind::kSandboxIds) {
    auto listed = get(*endpoint, "/v2/sandboxes?limit=100");
    if (listed && listed->is_array())
      for (const auto& sandbox : *listed) out.push_back(sandbox.value("sandboxID", ""));
  } else {
    auto listed = get(*endpoint, "/abx/v1/templates");
    if (listed && listed->is_object())
      for (const auto& entry : listed->value("templates", json::array()))
        out.push_back(entry.value("name", ""));
  }
  return out;
}

}  // namespace

int complete_values(const CLI::App& root, std::vector<std::string> words) {
  if (!words.empty() && words.front() == "sandbox") words.erase(words.begin());  // e2b's shape
  if (words.empty()) return 0;
  const Kind kind = wanted(root, words);
  if (kind == Kind::kNone) return 0;
  const std::string& prefix = words.back();
  for (const std::string& value : values(kind))
    if (!value.empty() && value.starts_with(prefix)) std::cout << value << "\n";
  return 0;
}

}  // namespace abx::cli
