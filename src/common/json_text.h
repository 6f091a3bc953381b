// JSON to and from untrusted text. Every body, message and line that an API
// caller or a sandbox wrote is parsed here: nlohmann's parser is iterative,
// but copying, comparing and destroying a value recurse once per level, so
// 100 000 nested arrays would end the daemon on a stack overflow. And every
// value that carries a sandbox's strings (file names, output, errors) is
// written here: dump() throws on invalid UTF-8, which would turn a file
// named "\xff" into a 500.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.h"

namespace abx::json_text {

// Deepest nesting of arrays and objects accepted ("[[1]]" is 2 levels deep).
inline constexpr size_t kMaxDepth = 128;

// True when `text` opens more than `limit` arrays/objects inside one another
// (brackets inside strings do not count). Stops at the first level too many.
bool nested_deeper_than(std::string_view text, size_t limit);

// The value `text` holds. A kErrBadInput error (a 400) naming `what` when it
// is not JSON or nests deeper than kMaxDepth.
Result<nlohmann::json> parse(std::string_view text, std::string_view what = "body");
// The same for a value that must be an object: "<what>: must be a JSON object"
// when it is anything else (or not JSON).
Result<nlohmann::json> parse_object(std::string_view text, std::string_view what = "body");

// `value` as compact JSON text, bytes that are not UTF-8 written as U+FFFD.
std::string dump(const nlohmann::json& value);

}  // namespace abx::json_text
