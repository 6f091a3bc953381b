#include "cli/man_page.h"

#include <cstdio>
#include <string_view>
#include <vector>

#include "cli/man_page_text.h"
#include "common/version.h"

namespace abx::cli {
namespace man_page {
namespace {

// The code point of the UTF-8 sequence at text[i], advancing i past it; a
// broken sequence is U+FFFD, one byte at a time.
unsigned decode_utf8(std::string_view text, size_t& i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (extra == 0 || i + extra >= text.size()) {  // a stray continuation byte, or cut short
    ++i;
    return 0xFFFD;
  }
  unsigned code = lead & (0x3Fu >> extra);
  for (size_t k = 1; k <= extra; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    code = (code << 6) | (next & 0x3Fu);
  }
  i += extra + 1;
  return code;
}

std::string unicode_escape(unsigned code) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\[u%04X]", code);
  return buffer;
}

bool visible(const CLI::App* app) { return !app->get_group().empty(); }

// "abx create [OPTIONS] [template]": CLI11's usage line without its "Usage: ".
std::string usage(const CLI::App& app, const std::string& path) {
  std::string line = CLI::Formatter().make_usage(&app, path);
  if (line.rfind("Usage: ", 0) == 0) line.erase(0, 7);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// "-e, --env" for an option, "COMMAND" for a positional argument.
std::string option_names(const CLI::Option& option) {
  if (!option.nonpositional()) return option.get_name(true, false);
  std::string names;
  for (const auto& name : option.get_snames()) names += (names.empty() ? "-" : ", -") + name;
  for (const auto& name : option.get_lnames()) names += (names.empty() ? "--" : ", --") + name;
  return names;
}

// One .TP entry: the names in bold, the value's shape as --help shows it.
void write_option(const CLI::Option& option, std::ostream& out) {
  const bool positional = !option.nonpositional();
  out << ".TP\n";
  if (positional) {
    out << "\\fI" << roff_escape(option_names(option)) << "\\fR\n";
  } else {
    const std::string shape = CLI::Formatter().make_option_opts(&option);
    out << "\\fB" << roff_escape(option_names(option)) << "\\fR" << roff_escape(shape) << "\n";
  }
  const std::string& description = option.get_description();
  out << (description.empty() ? "\\&" : roff_escape(description)) << "\n";
}

void write_aliases(const CLI::App& app, std::ostream& out) {
  const auto& aliases = app.get_aliases();
  if (aliases.empty()) return;
  out << ".PP\nAlso spelled:";
  for (size_t i = 0; i < aliases.size(); ++i)
    out << (i ? ", " : " ") << "\\fB" << roff_escape(aliases[i]) << "\\fR";
  out << ".\n";
}

// A command's section, then its subcommands' ("abx template build", …).
void write_command(const CLI::App& app, const std::string& path, std::ostream& out) {
  out << ".SS \"" << roff_escape(path) << "\"\n"
      << roff_escape(app.get_description()) << "\n"
      << ".PP\n\\fB" << roff_escape(path) << "\\fR"
      << roff_escape(usage(app, path).substr(path.size())) << "\n";
  write_aliases(app, out);
  // The arguments, then the options, as --help lists them. --help is on every
  // command (DESCRIPTION says so); hidden options have no group.
  for (const bool positionals : {true, false}) {
    for (const CLI::Option* option : app.get_options()) {
      if (option->get_group().empty() || option == app.get_help_ptr()) continue;
      if (option->nonpositional() != positionals) write_option(*option, out);
    }
  }
  for (const CLI::App* sub : app.get_subcommands(visible))
    write_command(*sub, path + " " + sub->get_name(), out);
}

}  // namespace
}  // namespace man_page

std::string roff_escape(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    if (static_cast<unsigned char>(c) >= 0x80) {
      out += man_page::unicode_escape(man_page::decode_utf8(text, i));
      continue;
    }
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    ++i;
  }
  return out;
}

void write_man_page(const CLI::App& root, std::ostream& out) {
  out << ".\\\" abx(1): made by `abx __man` from abx's command tree; do not edit.\n"
      << ".TH ABX 1 \"\" \"abx " << version::kNumber << "\" \"User Commands\"\n"
      << ".SH NAME\nabx \\- " << roff_escape(root.get_description().substr(5)) << "\n"
      << ".SH SYNOPSIS\n\\fBabx\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n"
      << ".br\n\\fBabx\\fR \\fB\\-\\-version\\fR | \\fB\\-\\-help\\fR\n"
      << kManDescription << ".SH COMMANDS\n";
  for (const CLI::App* sub : root.get_subcommands(man_page::visible))
    man_page::write_command(*sub, "abx " + sub->get_name(), out);
  out << kManExitStatus << kManExamples << kManEnvironment;
}

}  // namespace abx::cli
