// The Sandboxfile parser (sandboxfile.cc, sandboxfile_text.cc,
// sandboxfile_expander.cc): lines, continuations, directives, instructions,
// flags, JSON exec forms and shell-style variable expansion. Besides not
// crashing, what it accepts must keep the promises sandboxfile.h makes: FROM
// first, COPY/ADD sources inside the build context, absolute destinations
// and WORKDIRs, and no NUL in a path (every syscall would cut it there).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "templates/sandboxfile.h"

namespace {

namespace sf = abx::templates::sandboxfile;

[[noreturn]] void broken(const sf::Step& step, const char* promise) {
  std::fprintf(stderr, "Sandboxfile line %d (%s): %s\n", step.line, step.text.c_str(), promise);
  std::abort();
}

// Whether `path`, relative, leads out of the dir it is relative to (an
// independent reading of sandboxfile.cc's climbs_out).
bool leads_out(std::string_view path) {
  int depth = 0;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
    if (part == "..") {
      if (--depth < 0) return true;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
  }
  return false;
}

bool has_nul(std::string_view text) { return text.find('\0') != std::string_view::npos; }

void check(const sf::Sandboxfile& file) {
  if (file.steps.empty() || file.steps[0].kind != sf::Kind::kFrom) std::abort();
  for (const sf::Step& step : file.steps) {
    if (step.kind == sf::Kind::kCopy) {
      if (step.args.size() < 2) broken(step, "COPY without a source and a destination");
      const std::string& dest = step.args.back();
      if (!dest.starts_with('/') || has_nul(dest)) broken(step, "destination not absolute");
      for (size_t i = 0; i + 1 < step.args.size(); ++i) {
        const std::string& source = step.args[i];
        if (source.empty() || source.starts_with('/') || leads_out(source) || has_nul(source)) {
          broken(step, "source outside the build context");
        }
      }
    }
    if (step.kind == sf::Kind::kWorkdir) {
      if (step.args.size() != 1 || !step.args[0].starts_with('/') || has_nul(step.args[0])) {
        broken(step, "WORKDIR not one absolute path");
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const std::map<std::string, std::string> kBuildArgs = {{"VERSION", "1.2"},
                                                                {"http_proxy", "http://p:3128"}};
  static const sf::BaseImage kBase = {{{"PATH", "/usr/bin:/bin"}, {"HOME", "/root"}}, "/srv"};
  if (auto file = sf::parse(text, {})) check(*file);
  if (auto file = sf::parse(text, kBuildArgs, kBase)) check(*file);
  return 0;
}
