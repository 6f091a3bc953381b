// The context drivers' source text, embedded at build time from
// src/interp/*_driver.* (see drivers.cmake). Each driver reads requests as
// lines on stdin and writes E2B NDJSON events, each prefixed with the token
// from $ABX_INTERP_TOKEN, on its stdout.
#pragma once

#include <string_view>

namespace abx::interp {

std::string_view python_driver_source();
std::string_view python_charts_source();  // the Python driver's argv[1]
std::string_view javascript_driver_source();
std::string_view bash_driver_source();

}  // namespace abx::interp
