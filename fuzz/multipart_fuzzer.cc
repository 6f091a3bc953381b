// The streaming multipart/form-data parser of /files uploads. The input is
// "<Content-Type value>\n<body>"; the body is fed in pieces whose size the
// first byte picks, as reads from a socket would split it.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = static_cast<size_t>(data[0]) * 37 + 1;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t eol = input.find('\n');
  if (eol == std::string_view::npos) return 0;
  const auto boundary =
      abx::daemon::MultipartParser::boundary_of(std::string(input.substr(0, eol)));
  if (!boundary) return 0;
  input.remove_prefix(eol + 1);

  // Parts begin, take data and end in that order, and never after the closing boundary.
  bool in_part = false;
  abx::daemon::MultipartHandlers handlers;
  handlers.begin = [&](const abx::daemon::MultipartPart&) {
    if (in_part) __builtin_trap();
    in_part = true;
    return true;
  };
  handlers.data = [&](std::string_view) {
    if (!in_part) __builtin_trap();
    return true;
  };
  handlers.end = [&] {
    if (!in_part) __builtin_trap();
    in_part = false;
    return true;
  };
  abx::daemon::MultipartParser parser(*boundary);
  for (size_t at = 0; at < input.size(); at += piece) {
    if (!parser.feed(input.substr(at, piece), handlers)) break;
    if (parser.finished() && in_part) __builtin_trap();
  }
  return 0;
}
