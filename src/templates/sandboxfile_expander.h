// Docker's word expansion for Sandboxfile ARG/ENV values: $NAME, ${NAME},
// ${NAME:-default}, ${NAME-default}, ${NAME:+alt}, ${NAME+alt}, ${NAME:?message},
// ${NAME?message}; quotes removed ('...' literal, "..." expanded) and "\"
// escaping the next character.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/error.h"

namespace abx::templates::sandboxfile {

struct Variable {
  bool declared = false;             // an ARG, ENV or image variable (no warning when unset)
  std::optional<std::string> value;  // nullopt: unset
};

// What a name means at the line being expanded.
using VariableLookup = std::function<Variable(const std::string&)>;

class Expander {
 public:
  // `line` is the Sandboxfile line errors name.
  Expander(VariableLookup lookup, int line) : lookup_(std::move(lookup)), line_(line) {}

  // With quotes=false (items of a JSON array) quote characters are ordinary.
  Result<std::string> expand(std::string_view word, bool quotes = true);

  // Plain $NAME / ${NAME} references to variables nothing declared.
  const std::set<std::string>& undefined() const { return undefined_; }

 private:
  Status until(std::string& out, char stop);
  Status one(char c, std::string& out);
  Status single_quoted(std::string& out);
  Status double_quoted(std::string& out);
  Status variable(std::string& out);
  Status braced(std::string& out);
  Status apply(const std::string& var, bool colon, char op, const std::string& word,
               std::string& out);
  std::string name();
  std::string plain(const std::string& var);

  VariableLookup lookup_;
  int line_;
  std::string_view in_;
  size_t pos_ = 0;
  bool quotes_ = true;
  std::set<std::string> undefined_;
};

}  // namespace abx::templates::sandboxfile
