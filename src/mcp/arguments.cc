#include "mcp/arguments.h"

#include <algorithm>

namespace abx::mcp {
namespace {

using nlohmann::json;

bool has_type(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") return value.is_number_integer();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  return true;
}

std::optional<std::string> check_value(const std::string& name, const json& schema,
                                       const json& value) {
  const std::string type = schema.value("type", "");
  if (!has_type(value, type)) return name + " must be " + (type == "integer" ? "an " : "a ") + type;
  // Not json::contains: that looks up object keys, and says false for every array item.
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
    return name + " must be one of " + schema["enum"].dump();
  }
  if (schema.contains("minimum") && value.get<long long>() < schema["minimum"].get<long long>()) {
    return name + " must be at least " + schema["minimum"].dump();
  }
  if (type == "object" && schema.contains("additionalProperties") &&
      schema["additionalProperties"].is_object()) {
    for (const auto& [key, item] : value.items()) {
      if (auto bad = check_value(name + "." + key, schema["additionalProperties"], item)) {
        return bad;
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> check_arguments(const json& schema, const json& arguments) {
  if (!arguments.is_object()) return "arguments must be a JSON object";
  const json& properties = schema["properties"];
  for (const auto& name : schema.value("required", json::array())) {
    if (!arguments.contains(name)) return "missing required argument " + name.get<std::string>();
  }
  for (const auto& [name, value] : arguments.items()) {
    if (!properties.contains(name)) {
      std::string known;
      for (const auto& [key, unused] : properties.items())
        known += (known.empty() ? "" : ", ") + key;
      return "unknown argument " + name + " (this tool takes: " + known + ")";
    }
    if (auto bad = check_value(name, properties[name], value)) return bad;
  }
  return std::nullopt;
}

}  // namespace abx::mcp
