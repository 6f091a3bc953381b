#include "cli/error_hints.h"

#include <regex>

namespace abx::cli {

std::string with_hint(const std::string& message) {
  // "sandbox ID not found", as the client and the daemon both say it.
  static const std::regex kNotFound("^(could not [^:]*: )?sandbox [a-z0-9]+ not found$");
  if (std::regex_match(message, kNotFound))
    return message + ": it was killed or its timeout expired (`abx list` shows the running ones)";
  if (message.find("not a valid sandbox id") != std::string::npos)
    return message + " (`abx list` shows the ids)";
  return message;
}

}  // namespace abx::cli
