#include "common/json_text.h"

namespace abx::json_text {
namespace {

Error too_deep(std::string_view what) {
  return Error::with_message(std::string(what) + ": JSON nested deeper than " +
                                 std::to_string(kMaxDepth) + " levels (the limit)",
                             kErrBadInput);
}

}  // namespace

bool nested_deeper_than(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

Result<nlohmann::json> parse(std::string_view text, std::string_view what) {
  // Checked before parsing: the deep value itself is what must never exist.
  if (nested_deeper_than(text, kMaxDepth)) return too_deep(what);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return Error::with_message(std::string(what) + ": not valid JSON", kErrBadInput);
  }
  return value;
}

Result<nlohmann::json> parse_object(std::string_view text, std::string_view what) {
  if (nested_deeper_than(text, kMaxDepth)) return too_deep(what);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!value.is_object()) {
    return Error::with_message(std::string(what) + ": must be a JSON object", kErrBadInput);
  }
  return value;
}

std::string dump(const nlohmann::json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace abx::json_text
