#include "cli/server_template.h"

#include "cli/server_sdk.h"

namespace abx::cli {
namespace {

constexpr const char* kServerDir = ".abx-server";  // in the context; /opt/abx-server in the image

// The template's start command (python3 -m agent_sandbox.server --commands
// /app/commands.py, ready once port 9000 answers) follows from copying
// commands.py with no CMD: see the Sandboxfile reference in the README. The
// .pth puts /opt/abx-server on every python3's path without touching
// PYTHONPATH; python3-websockets (the terminal's) is in base.
constexpr const char* kSandboxfile =
    R"(# Made by `abx template build` for a dir that holds only a commands.py.
FROM base
COPY .abx-server/ /opt/abx-server/
COPY .abx-server.pth /usr/lib/python3/dist-packages/abx-server.pth
COPY commands.py /app/commands.py
)";

}  // namespace

bool is_commands_only_context(const std::filesystem::path& context) {
  std::error_code ec;
  return std::filesystem::is_regular_file(context / "commands.py", ec) &&
         !std::filesystem::exists(context / "Sandboxfile", ec) &&
         !std::filesystem::exists(context / "Dockerfile", ec);
}

std::vector<TarExtra> server_template_extras(const std::string& sandboxfile_name) {
  std::vector<TarExtra> extras = {{sandboxfile_name, kSandboxfile},
                                  {".abx-server.pth", "/opt/abx-server\n"}};
  for (const EmbeddedFile& file : server_sdk_files())
    extras.push_back(
        {std::string(kServerDir) + "/" + std::string(file.path), std::string(file.text)});
  return extras;
}

}  // namespace abx::cli
