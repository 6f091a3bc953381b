// abx shell ID (alias connect): a login shell in the sandbox, as
// `abx exec -it ID -- bash -l` (sh where the image has no bash).
#include <memory>

#include "cli/commands.h"

namespace abx::cli {

void add_shell(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto user = std::make_shared<std::string>();
  auto* app = root.add_subcommand(
      "shell", "Open an interactive login shell in a sandbox (= abx exec -it ID; alias: connect)");
  app->alias("connect");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_option("--user", *user, "user or root (default: the template's user)")
      ->check(CLI::IsMember({"user", "root"}));
  commands.push_back({app, [id, user] { return run_shell(*id, *user); }});
}

}  // namespace abx::cli
