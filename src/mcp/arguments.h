// Checking tool arguments against the tool's input schema (the subset our
// schemas use), so a bad call gets a message the agent can act on.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace abx::mcp {

// What is wrong with `arguments` for `schema`, or nullopt when they fit.
std::optional<std::string> check_arguments(const nlohmann::json& schema,
                                           const nlohmann::json& arguments);

}  // namespace abx::mcp
