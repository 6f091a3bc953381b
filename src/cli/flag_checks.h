// Checks of numeric flags whose failures read as plain words: "--timeout:
// must be a whole number of seconds from 1 to 86400 (one day), not 0"
// instead of CLI11's range of doubles (300 digits) or "could not convert".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace abx::cli {

// A whole number from `low` to `high`; `unit` names what it counts
// ("seconds"), `note` follows the range ("one day", "0: no limit").
CLI::Validator whole_number(std::int64_t low, std::int64_t high, const std::string& unit,
                            const std::string& note = {});

// The sandbox timeout as the daemon allows it: 1 s to one day.
CLI::Validator sandbox_timeout_seconds();

}  // namespace abx::cli
