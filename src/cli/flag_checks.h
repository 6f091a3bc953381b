// Checks of flags' values at parse time, so a bad one is a usage error (exit
// 2). Numeric flags' failures read as plain words: "--timeout:
// must be a whole number of seconds from 1 to 86400 (one day), not 0"
// instead of CLI11's range of doubles (300 digits) or "could not convert".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

namespace abx::cli {

// A whole number from `low` to `high`; `unit` names what it counts
// ("seconds"), `note` follows the range ("one day", "0: no limit").
CLI::Validator whole_number(std::int64_t low, std::int64_t high, const std::string& unit,
                            const std::string& note = {});

// The sandbox timeout as the daemon allows it: 1 s to one day.
CLI::Validator sandbox_timeout_seconds();

// A size as parse_mib takes it (512m, 2g, 1024): --memory, --disk.
CLI::Validator size_value();

// KEY=VALUE with a non-empty KEY: --env, --metadata, --build-arg.
CLI::Validator key_value();

// Any check of a flag's value that `check` does (an error message, or "" when
// the value is fine): a bad value is then a usage error at parse time (exit 2
// with the command's usage), before abx does anything.
CLI::Validator value_check(std::function<std::string(const std::string&)> check,
                           const std::string& description);

}  // namespace abx::cli
