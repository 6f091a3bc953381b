// abx(1), the man page, made from the parser's own command tree (every
// command, its arguments and options) so it cannot drift from `abx --help`;
// `abx __man` prints it and `make install` writes it to share/man/man1/abx.1.
#pragma once

#include <CLI/CLI.hpp>
#include <ostream>
#include <string>

namespace abx::cli {

// The whole page in roff (man macros) for the tree under `root`.
void write_man_page(const CLI::App& root, std::ostream& out);

// `text` as roff body text: backslashes and hyphens escaped, a line that
// would start with a control character guarded, non-ASCII as \[uXXXX].
std::string roff_escape(const std::string& text);

}  // namespace abx::cli
