// The Sandboxfile parser (sandboxfile.cc, sandboxfile_text.cc,
// sandboxfile_expander.cc): lines, continuations, directives, instructions,
// flags, JSON exec forms and shell-style variable expansion.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "templates/sandboxfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  namespace sf = abx::templates::sandboxfile;
  static const std::map<std::string, std::string> kBuildArgs = {{"VERSION", "1.2"},
                                                                {"http_proxy", "http://p:3128"}};
  static const sf::BaseImage kBase = {{{"PATH", "/usr/bin:/bin"}, {"HOME", "/root"}}, "/srv"};
  (void)sf::parse(text, {});
  (void)sf::parse(text, kBuildArgs, kBase);
  return 0;
}
