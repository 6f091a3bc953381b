// The smallest useful custom template: a build context with a commands.py and
// no Sandboxfile is `base`, the in-sandbox server (agent_sandbox.server, from
// the copy abx carries) and those commands, served on port 9000.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/dir_tar.h"

namespace abx::cli {

// The context has a commands.py but neither a Sandboxfile nor a Dockerfile.
bool is_commands_only_context(const std::filesystem::path& context);

// What goes into the context's tar beside commands.py: a Sandboxfile named
// `sandboxfile_name` and the server's files.
std::vector<TarExtra> server_template_extras(const std::string& sandboxfile_name);

}  // namespace abx::cli
